"""Scorer errors: re-exported from the shared tree so callers need one import."""

from __future__ import annotations

from sandbox import ContractError, InputError, PatchwardenError

__all__ = ["ContractError", "InputError", "PatchwardenError"]
