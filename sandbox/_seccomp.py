"""The seccomp filter every sandboxed process runs under (bubblewrap ``--seccomp FD``).

A classic-BPF program, built here without libseccomp: it refuses with ``EPERM`` the system
calls that let one process read or write another's memory or descriptors, so a child that
product code starts cannot reach into the runner that holds the run's secret (see
docs/design/runner.md, "Out of reach"):

- ``ptrace``                                  attach to, peek into, poke the runner;
- ``process_vm_readv``, ``process_vm_writev`` copy memory across processes without ptrace;
- ``pidfd_getfd``                             take a copy of another process's descriptor.

Every other system call of the native architecture is allowed. A call made through another
ABI (the i386 ``int 0x80`` entry or x32 on x86_64) could reach the same kernel code under
other numbers, so every such call is refused; nothing in the sandbox uses them.
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

from ._errors import SandboxError

# <linux/filter.h>, <linux/bpf_common.h>
BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: A = the 32-bit word at offset k of seccomp_data
BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K: if A == k skip jt instructions, else jf
BPF_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K: if A >= k skip jt instructions, else jf
BPF_RET_K = 0x06  # BPF_RET | BPF_K: return k
SOCK_FILTER = struct.Struct("=HBBI")  # struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }

# <linux/seccomp.h>
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_DATA_NR = 0  # offsetof(struct seccomp_data, nr)
SECCOMP_DATA_ARCH = 4  # offsetof(struct seccomp_data, arch)

X32_SYSCALL_BIT = 0x40000000
"""On x86_64, system call numbers with this bit set use the x32 ABI."""


@dataclass(frozen=True)
class Arch:
    audit_arch: int
    """AUDIT_ARCH_* from <linux/audit.h>: what the kernel puts in seccomp_data.arch."""
    refused: dict[str, int]
    """System call name -> number on this architecture."""
    x32_bit: bool = False


ARCHES = {
    "x86_64": Arch(
        audit_arch=0xC000003E,
        refused={
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "pidfd_getfd": 438,
        },
        x32_bit=True,
    ),
    "aarch64": Arch(
        audit_arch=0xC00000B7,
        refused={
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "pidfd_getfd": 438,
        },
    ),
}
REFUSED_SYSCALLS = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd")


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return SOCK_FILTER.pack(code, jt, jf, k)


def seccomp_program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one), as bubblewrap's ``--seccomp`` reads it.

    Raises SandboxError on an architecture we have no system call table for: running
    without the filter would silently drop a layer, so we refuse instead.
    """
    name = machine or platform.machine()
    arch = ARCHES.get(name)
    if arch is None:
        raise SandboxError(
            f"no seccomp filter for the {name} architecture (known: {', '.join(ARCHES)})",
            where="sandbox/_seccomp.py",
        )
    deny = SECCOMP_RET_ERRNO | errno.EPERM
    numbers = [arch.refused[call] for call in REFUSED_SYSCALLS]
    # Layout: [arch load, arch check, nr load, (x32 check), one check per number, allow, deny].
    # Every jump lands on the final `deny`; offsets count the instructions skipped.
    checks = len(numbers) + (1 if arch.x32_bit else 0)
    program = [_insn(BPF_LD_W_ABS, SECCOMP_DATA_ARCH)]
    program.append(_insn(BPF_JEQ_K, arch.audit_arch, jt=0, jf=checks + 2))
    program.append(_insn(BPF_LD_W_ABS, SECCOMP_DATA_NR))
    remaining = checks
    if arch.x32_bit:
        remaining -= 1
        program.append(_insn(BPF_JGE_K, X32_SYSCALL_BIT, jt=remaining + 1, jf=0))
    for number in numbers:
        remaining -= 1
        program.append(_insn(BPF_JEQ_K, number, jt=remaining + 1, jf=0))
    program.append(_insn(BPF_RET_K, SECCOMP_RET_ALLOW))
    program.append(_insn(BPF_RET_K, deny))
    return b"".join(program)
