"""The project's own pytest configuration, as the trusted runner honours it.

Read from a tree without running anything (the scorer reads the PARENT's and applies it to
both trees, as it does the import layout; sandbox/_layout.py finds the file), and applied in
every run of the runner: the scorer's and the agent's ``run_tests`` get the same options, the
same plugins and drop the same things (docs/design/runner.md, "The project's pytest
configuration").

What decides outcomes is kept: the ini keys (``filterwarnings``, ``xfail_strict``,
``markers``, ``python_files``..., the ini keys of the plugins loaded), the ``addopts`` that
change what a test does (``-W``, ``--strict-markers``, ``--hypothesis-profile``,
``--import-mode``...). What only schedules or reports is dropped, each named: the run's
evidence says what was left out and why. Options patchwarden does not know are kept:
pytest is the judge of what its plugins declare, and an option nobody declares stops the
run on the parent tree as well, where ``contract check`` shows it.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from ._syntax import parse_python


@dataclass(frozen=True)
class Dropped:
    """Options, ini keys and plugins left out, and why (one reason per family)."""

    why: str
    options: tuple[str, ...] = ()
    """Long or short option names (``--cov`` also covers ``--cov=src``)."""
    valued: tuple[str, ...] = ()
    """Those of ``options`` that take a value (``-n 4``, ``--dist load``)."""
    optional_value: tuple[str, ...] = ()
    """Those that take a value only when one follows (``--cov`` / ``--cov src``)."""
    ini: tuple[str, ...] = ()
    """Its ini keys (unknown to pytest once the plugin is not loaded)."""
    distributions: tuple[str, ...] = ()
    """The plugin distributions of the family (never loaded)."""


DROPPED: tuple[Dropped, ...] = (
    Dropped(
        "pytest-xdist: only spreads the tests over processes",
        options=("-n", "--numprocesses", "--dist", "--maxprocesses", "--max-worker-restart",
                 "--tx", "-d", "--rsyncdir", "--rsyncignore", "-f", "--looponfail",
                 "--maxschedchunk", "--px"),
        valued=("-n", "--numprocesses", "--dist", "--maxprocesses", "--max-worker-restart",
                "--tx", "--rsyncdir", "--rsyncignore", "--maxschedchunk", "--px"),
        ini=("looponfailroots", "rsyncdirs", "rsyncignore"),
        distributions=("pytest-xdist",),
    ),
    Dropped(
        "pytest-cov: only measures coverage",
        options=("--cov", "--cov-report", "--cov-config", "--cov-fail-under", "--cov-append",
                 "--cov-branch", "--cov-reset", "--cov-context", "--cov-precision", "--no-cov",
                 "--no-cov-on-fail"),
        valued=("--cov-report", "--cov-config", "--cov-fail-under", "--cov-context",
                "--cov-precision"),
        optional_value=("--cov",),
        distributions=("pytest-cov",),
    ),
    Dropped(
        "pytest-timeout: the run's own limits bound its time (and its signal handlers are "
        "refused in scorer runs)",
        options=("--timeout", "--timeout-method", "--timeout_method", "--session-timeout"),
        valued=("--timeout", "--timeout-method", "--timeout_method", "--session-timeout"),
        ini=("timeout", "timeout_method", "timeout_func_only", "session_timeout"),
        distributions=("pytest-timeout",),
    ),
    Dropped(
        "pytest-randomly: reorders tests and reseeds random; the contract's seed decides",
        options=("--randomly-seed", "--randomly-dont-reorganize", "--randomly-dont-reset-seed"),
        valued=("--randomly-seed",),
        distributions=("pytest-randomly",),
    ),
    Dropped(
        "an output plugin: only changes what is printed or written",
        options=("--html", "--self-contained-html", "--css", "--json-report",
                 "--json-report-file", "--json-report-omit", "--instafail", "--force-sugar",
                 "--old-summary", "--metadata", "--metadata-from-json"),
        valued=("--html", "--css", "--json-report-file", "--json-report-omit",
                "--metadata-from-json"),
        distributions=("pytest-html", "pytest-json-report", "pytest-instafail", "pytest-sugar",
                       "pytest-metadata", "pytest-clarity", "pytest-pretty", "pytest-icdiff",
                       "pytest-github-actions-annotate-failures", "pytest-reportlog",
                       "pytest-md-report"),
    ),
    Dropped(
        "a scheduling plugin: only chooses or spreads what runs",
        distributions=("pytest-forked", "pytest-testmon", "pytest-picked", "pytest-profiling",
                       "pytest-split"),
    ),
    Dropped(
        "pytest-benchmark options: only change timing runs (--benchmark-skip and "
        "--benchmark-only, which skip tests, are kept)",
        options=("--benchmark-",),
    ),
    Dropped(
        "output or scheduling: pytest's own (the runner sets its own)",
        options=("-v", "--verbose", "-q", "--quiet", "-r", "--color", "--code-highlight",
                 "--durations", "--durations-min", "--tb", "-l", "--showlocals",
                 "--no-showlocals", "-s", "--capture", "--show-capture", "--full-trace",
                 "--junitxml", "--junit-xml", "--junit-prefix", "--no-header", "--no-summary",
                 "--no-fold-skipped", "-x", "--exitfirst", "--maxfail", "--sw", "--stepwise",
                 "--sw-skip", "--stepwise-skip", "--lf", "--last-failed", "--ff",
                 "--failed-first", "--nf", "--new-first", "--cache-clear", "--cache-show",
                 "--lfnf", "--last-failed-no-failures", "--pdb", "--pdbcls", "--trace",
                 "--log-cli-level", "--log-cli-format", "--log-cli-date-format", "--log-file",
                 "--log-file-level", "--log-file-format", "--log-file-date-format",
                 "--log-file-mode", "--setup-show", "--setup-only", "--setup-plan",
                 "--debug", "--runxfail", "-c", "--config-file", "--rootdir", "--confcutdir",
                 "--basetemp", "--hypothesis-seed", "--hypothesis-show-statistics",
                 "--hypothesis-verbosity", "--hypothesis-explain", "--co", "--collect-only",
                 "--collectonly"),
        valued=("-r", "--color", "--code-highlight", "--durations", "--durations-min", "--tb",
                "--capture", "--show-capture", "--junitxml", "--junit-xml", "--junit-prefix",
                "--maxfail", "--pdbcls", "--log-cli-level", "--log-cli-format",
                "--log-cli-date-format", "--log-file", "--log-file-level", "--log-file-format",
                "--log-file-date-format", "--log-file-mode", "-c", "--config-file",
                "--rootdir", "--confcutdir", "--basetemp", "--hypothesis-seed",
                "--hypothesis-verbosity", "--lfnf", "--last-failed-no-failures"),
        ini=("cache_dir", "console_output_style", "log_cli", "log_cli_level", "log_cli_format",
             "log_cli_date_format", "log_file", "log_file_level", "log_file_format",
             "log_file_date_format", "log_file_mode", "junit_family", "junit_suite_name",
             "junit_logging", "junit_log_passing_tests", "junit_duration_report",
             "tmp_path_retention_count", "tmp_path_retention_policy", "faulthandler_timeout",
             "verbosity_assertions", "verbosity_test_cases", "truncation_limit_lines",
             "truncation_limit_chars", "enable_assertion_pass_hook"),
    ),
)  # fmt: skip
"""Everything the runner leaves out of a project's configuration, by family and reason."""

SELECTION_OPTIONS = ("-k", "-m", "--deselect", "--ignore", "--ignore-glob")
"""Options that choose which tests run: kept in the agent's runs (the project's default
selection), dropped in the scorer's (the contract chooses)."""

OUTCOME_OPTIONS = frozenset({"--benchmark-skip", "--benchmark-only"})
"""Options of a dropped family that decide outcomes (pytest-benchmark's skip the tests that
use, or do not use, its fixture: portion's addopts): kept in every run."""

VALUED_KEPT = frozenset(
    {"-p", "-W", "--pythonwarnings", "-o", "--override-ini", "--hypothesis-profile",
     "--import-mode", "--asyncio-mode"}
)  # fmt: skip
"""Options kept that take a value (the next word when it is not attached)."""

HANDLED_INI = {"addopts": "read option by option", "pythonpath": "the import layout places it"}
"""Ini keys the runner reads itself instead of passing on."""

RUNNER_PLUGINS = {"hypothesis": "loaded by the runner itself"}
"""Plugin distributions the runner loads on its own terms, never from the env's list."""


def _dropped_by_option() -> dict[str, Dropped]:
    return {name: family for family in DROPPED for name in family.options}


def _dropped_by_ini() -> dict[str, Dropped]:
    return {name: family for family in DROPPED for name in family.ini}


def dropped_distribution(name: str) -> str | None:
    """Why the plugin distribution ``name`` is not loaded (None: it is)."""
    canonical = canonicalize_name(name)
    if canonical in RUNNER_PLUGINS:
        return RUNNER_PLUGINS[canonical]
    for family in DROPPED:
        if canonical in family.distributions:
            return family.why
    return None


@dataclass(frozen=True)
class PytestConfig:
    """What the runner takes from a project's pytest configuration file."""

    source: str = ""
    """The tree-relative file it was read from (empty: the project has none)."""
    directory: str = "."
    """The directory of that file (pytest's rootdir for the agent's runs)."""
    ini: tuple[tuple[str, str | tuple[str, ...]], ...] = ()
    """The ini keys kept, with their values (a string as written, or a TOML list)."""
    addopts: tuple[str, ...] = ()
    """The ``addopts`` kept in every run."""
    selection: tuple[str, ...] = ()
    """The ``addopts`` that select tests: the agent's runs only."""
    disabled: tuple[str, ...] = ()
    """Plugins the project disables (``-p no:NAME``): never loaded from the env."""
    profile: str | None = None
    """The Hypothesis profile ``--hypothesis-profile`` names."""
    dropped: tuple[str, ...] = ()
    """Each option or ini key left out, with why."""
    problems: tuple[str, ...] = field(default=(), compare=False)
    """Why the configuration cannot be honoured (one line each)."""

    def to_json(self, mode: str) -> dict[str, Any]:
        """What the runner inside the sandbox needs for a run in ``mode``."""
        return {
            "ini": {key: list(v) if isinstance(v, tuple) else v for key, v in self.ini},
            "addopts": [*self.addopts, *(self.selection if mode == "agent" else ())],
            "profile": self.profile,
            "rootdir": self.directory,
        }


def read_pytest_config(
    rel: str, directory: str, settings: Mapping[str, Any] | None, notes: Sequence[str] = ()
) -> PytestConfig:
    """The configuration in ``settings`` (the pytest section of the file ``rel``, in the
    tree-relative ``directory``; None: no file). ``notes``: why the file could not be read."""
    if settings is None:
        return PytestConfig(problems=tuple(notes))
    ini: list[tuple[str, str | tuple[str, ...]]] = []
    dropped: list[str] = []
    by_ini = _dropped_by_ini()
    problems = list(notes)
    for key, raw in settings.items():
        if key in HANDLED_INI:
            continue
        if key == "required_plugins":
            raw = _required(raw, dropped)
        if key in by_ini:
            dropped.append(f"ini {key} ({by_ini[key].why})")
            continue
        value = _ini_value(raw)
        if value is None:
            problems.append(f"{rel}: pytest option {key} is not a string or a list; not honoured")
            continue
        ini.append((str(key), value))
    raw_addopts = settings.get("addopts", "")
    try:
        if isinstance(raw_addopts, list):
            tokens = [str(t) for t in raw_addopts]
        else:
            tokens = shlex.split(str(raw_addopts))
    except ValueError as exc:
        problems.append(f"{rel}: addopts does not parse ({exc}); not honoured")
        tokens = []
    split = split_addopts(tokens)
    return PytestConfig(
        source=rel,
        directory=directory,
        ini=tuple(ini),
        addopts=split.kept,
        selection=split.selection,
        disabled=split.disabled,
        profile=split.profile,
        dropped=(*dropped, *split.dropped),
        problems=tuple(problems),
    )


def _required(raw: Any, dropped: list[str]) -> Any:
    """``required_plugins`` without the plugins the runner leaves out or loads itself: pytest
    checks it against the plugins loaded, so those would stop every run."""
    entries = raw.split() if isinstance(raw, str) else raw
    if not isinstance(entries, list):
        return raw
    kept = []
    for entry in entries:
        name = re.split(r"[<>=!~;\[ ]", str(entry), maxsplit=1)[0]
        why = dropped_distribution(name)
        if why is None:
            kept.append(str(entry))
        else:
            dropped.append(f"required plugin {entry} ({why})")
    return kept


def _ini_value(raw: Any) -> str | tuple[str, ...] | None:
    if isinstance(raw, list):
        return tuple(str(item) for item in raw)
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, str | int | float):
        return str(raw)
    return None


@dataclass(frozen=True)
class SplitAddopts:
    kept: tuple[str, ...]
    selection: tuple[str, ...]
    dropped: tuple[str, ...]
    disabled: tuple[str, ...]
    profile: str | None


@functools.cache
def pytest_takes_value() -> dict[str, bool]:
    """Per option name of pytest's own (its built-in plugins': ``--doctest-report``,
    ``--import-mode``, ``-W``), whether it takes a value: read from pytest's own parser,
    so an option kept from ``addopts`` keeps its value (``--doctest-report ndiff``) whatever
    the tables above name."""
    from _pytest.config import get_config

    parser = get_config()._parser
    flags = {"store_true", "store_false", "count", "store_const", "append_const", "help"}
    found: dict[str, bool] = {}
    for group in [parser._anonymous, *parser._groups]:
        for option in group.options:
            attrs = option.attrs()
            takes = attrs.get("nargs") != 0 and attrs.get("action") not in flags
            for name in option.names():
                found[name] = takes
    return found


def split_addopts(tokens: Sequence[str]) -> SplitAddopts:
    """``addopts`` sorted into what every run keeps, what selects tests, and what is dropped
    (each with its family's reason)."""
    by_option = _dropped_by_option()
    kept: list[str] = []
    selection: list[str] = []
    dropped: list[str] = []
    disabled: list[str] = []
    profile = None
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        name, value, attached = _option_of(token)
        if name is None:  # a path or node id: the project's default selection
            selection.append(token)
            continue
        if name in OUTCOME_OPTIONS and value is None:
            kept.append(token)
            continue
        family = by_option.get(name) or next(
            (f for f in DROPPED for o in f.options if o.endswith("-") and name.startswith(o)),
            None,
        )
        takes = (
            name in SELECTION_OPTIONS
            or name in VALUED_KEPT
            or pytest_takes_value().get(name, False)
        )
        optional = False
        if family is not None:
            takes = name in family.valued
            optional = name in family.optional_value
        words = [token]
        if not attached and i < len(tokens):
            following = tokens[i]
            if takes or (optional and not following.startswith("-")):
                words.append(following)
                value = following
                i += 1
        if family is not None:
            dropped.append(f"{' '.join(words)} ({family.why})")
        elif name in SELECTION_OPTIONS:
            selection += words
        elif name == "-p" and value is not None and value.startswith("no:"):
            disabled.append(value[3:])
            kept += words
        elif name == "-p" and value is not None and dropped_distribution(value) is not None:
            dropped.append(f"{' '.join(words)} ({dropped_distribution(value)})")
        else:
            if name == "--hypothesis-profile":
                profile = value
            kept += words
    return SplitAddopts(tuple(kept), tuple(selection), tuple(dropped), tuple(disabled), profile)


def _option_of(token: str) -> tuple[str | None, str | None, bool]:
    """(option name, attached value, whether the value was attached) of one token; the name
    is None for a positional argument."""
    if token.startswith("--") and len(token) > 2:
        name, eq, value = token.partition("=")
        return name, (value if eq else None), bool(eq)
    if token.startswith("-") and len(token) > 1 and token != "-":
        name = token[:2]
        rest = token[2:]
        if rest.startswith("="):
            rest = rest[1:]
        return name, (rest or None), bool(rest)
    return None, None, False


def plugin_args(
    entry_points: Sequence[tuple[str, str, str]], config: PytestConfig
) -> tuple[list[str], list[str], list[str]]:
    """From the env's ``pytest11`` entry points ``(name, module, distribution)``: the
    entry-point names to load with ``-p``, their modules (imported before the tree is
    importable, so it cannot shadow them), and each plugin left out with why."""
    names: list[str] = []
    modules: list[str] = []
    dropped: list[str] = []
    for name, module, distribution in entry_points:
        why = dropped_distribution(distribution)
        if why is None and name in config.disabled:
            why = f"the project disables it (-p no:{name})"
        if why is None:
            if name not in names:
                names.append(name)
                modules.append(module.split(":", 1)[0].strip())
        elif canonicalize_name(distribution) not in RUNNER_PLUGINS:
            dropped.append(f"plugin {name} from {distribution} ({why})")
    return names, modules, dropped


def required_plugins(config: PytestConfig) -> list[str]:
    """The distribution names of the plugins the configuration requires (as kept)."""
    raw = dict(config.ini).get("required_plugins", ())
    entries = raw.split() if isinstance(raw, str) else raw
    return [re.split(r"[<>=!~;\[ ]", entry, maxsplit=1)[0] for entry in entries]


CONFTEST_SCAN_FILES = 200
"""conftest.py files read for ``pytest_plugins`` (a tree with more is read up to this)."""


def conftest_plugins(tree: Path) -> list[tuple[str, str]]:
    """``(conftest, module)`` for each module a conftest.py of ``tree`` names in a literal
    ``pytest_plugins`` (read, never run)."""
    found: list[tuple[str, str]] = []
    seen = 0
    for directory, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        if "conftest.py" not in files or os.path.islink(os.path.join(directory, "conftest.py")):
            continue
        seen += 1
        if seen > CONFTEST_SCAN_FILES:
            break
        path = Path(directory) / "conftest.py"
        rel = path.relative_to(tree).as_posix()
        try:
            module = parse_python(path.read_text(encoding="utf-8"), filename=rel)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        for node in module.body:
            if not isinstance(node, ast.Assign):
                continue
            if not any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets):
                continue
            with contextlib.suppress(ValueError):
                value = ast.literal_eval(node.value)
                names = [value] if isinstance(value, str) else list(value)
                found += [(rel, str(name)) for name in names if isinstance(name, str)]
    return found


SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages", "build"})
"""Directories never searched for conftests (installed or generated code)."""
