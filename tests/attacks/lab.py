"""The attack lab: one shared copy of the orders example, one commit per case, scored once each.

Every case becomes a commit on top of its parent (`base`, `base-quarantine` or
`base-guarded`) tagged
`attack-<name>`, built with gitpython in a clone of the session's example repository. Each
case is scored once by the real scorer (bubblewrap, the real gate) and its observation cached;
`judge` compares it with the case's expectation; probes look at the host after the run
(nothing written outside, no hook ran, no connection reached us...).

Two entry points, both attacked. A case with a host probe, a case of the sandbox layer (fork
bomb, memory, hang: it must not share a uid's limits or a deadline with another case's runs)
and a replay of the honest fix's channel go through `patchwarden score --json`, alone. Every
other case goes through `patchwarden score-batch` with the other cases of its oracle, as a
team scoring many agent patches does (benchmarks, RL rewards): the parent's runs are shared
by the batch (one secret, scorer/_batch.py), so a verdict there must be as hard to steer as
one of `score`'s, and the lab's time halves. Both read the same verdict (the bundle's
`decision.json` is what `score --json` prints).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git

from .cases import (
    BASE_CONTRACT,
    CONTRACT_FILE,
    GAP_BASE,
    GUARDED_BASE,
    LABEL_BASE,
    QUARANTINE_BASE,
    QUARANTINE_FILE,
    SEARCH_BASE,
    AttackCase,
    Binary,
    Delete,
    Expected,
    FileSpec,
    Symlink,
    Write,
    gap_files,
    guarded_files,
    label_files,
    search_files,
)

CONTRACT = CONTRACT_FILE
ATTACK_UID = 64901
"""The sandbox uid of the attack runs. RLIMIT_NPROC counts every process of a uid on the host,
so the fork bomb gets a uid of its own instead of starving other suites that run as nobody."""
ATTACK_LIMITS = {
    "wall_time_s": 60,
    "idle_time_s": 15,  # the hang case costs this, three times over two workers
    "cpu_s": 60,
    "memory_mb": 2048,
    "processes": 64,
    "file_size_mb": 64,
    "output_bytes": 200_000,
}
"""Lower than the defaults so the hang, flood and exhaustion cases stay cheap; an honest run
of the example needs about two seconds, 100 MiB and a handful of processes."""
SCORE_TIMEOUT_S = 600
BATCH_TIMEOUT_PER_CASE_S = 30
"""A bound on hanging (a batch of N cases gets SCORE_TIMEOUT_S + N times this), not a timing."""
IDENTITY = {
    "GIT_AUTHOR_NAME": "Lazy Agent",
    "GIT_AUTHOR_EMAIL": "lazy-agent@patchwarden.invalid",
    "GIT_COMMITTER_NAME": "Lazy Agent",
    "GIT_COMMITTER_EMAIL": "lazy-agent@patchwarden.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
FORGED_TOKEN = "FORGED-VERDICT"
OUTSIDE_FILES = {
    "conftest.py": "collect_ignore_glob = ['*']\n",
    "properties/test_orders.py": "def test_total_non_negative():\n    assert True\n",
}
"""What the host directory a symlink points at holds: a permissive suite."""


# -- observations and the judge ----------------------------------------------------------------


@dataclass
class Observation:
    """What `patchwarden score` said about one case."""

    exit_code: int
    decision: str
    """The final decision, or `error` (exit 2, nothing decided)."""
    reasons: dict[str, str]
    findings: dict[str, str]
    stderr: str
    duration_s: float
    verdict_id: str = ""
    bundle: Path | None = None
    probe_problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.decision == "error":
            return f"error (exit {self.exit_code}): {self.stderr.strip()[:300]}"
        reasons = ", ".join(f"{p.removeprefix('prop.')}={r}" for p, r in self.reasons.items())
        findings = ", ".join(f"{c}={o}" for c, o in self.findings.items() if o != "pass")
        text = f"{self.decision} [{reasons}]"
        if findings:
            text += f" findings: {findings}"
        if self.probe_problems:
            text += " probe: " + "; ".join(self.probe_problems)
        return text


OUTCOME_RANK = {"pass": 0, "note": 1, "review": 2, "reject": 3}


def judge(expected: Expected, observed: Observation) -> list[str]:
    """Why the observation falls short of the expectation; empty when the case was stopped."""
    problems = []
    if expected.decision is not None and observed.decision != expected.decision:
        problems.append(f"decision {observed.decision}, expected {expected.decision}")
    got = set(observed.reasons.values())
    missing = sorted(expected.reasons - got)
    if missing:
        problems.append(f"reason(s) {', '.join(missing)} missing")
    if expected.any_reason and not expected.any_reason & got:
        problems.append(f"none of the reasons {', '.join(sorted(expected.any_reason))}")
    for check, outcome in expected.findings.items():
        seen = observed.findings.get(check)
        if seen is None:
            problems.append(f"no {check} check in the scorecard")
        elif outcome == "pass" and seen != "pass":
            problems.append(f"{check}={seen}, expected pass")
        elif OUTCOME_RANK[seen] < OUTCOME_RANK[outcome]:
            problems.append(f"{check}={seen}, expected {outcome}")
    problems += observed.probe_problems
    return problems


# -- the host listener the network case tries to reach ---------------------------------------


class HostListener:
    """A TCP socket on 127.0.0.1 and an abstract Unix socket, recording every connection."""

    def __init__(self) -> None:
        self.abstract = f"patchwarden-attack-{os.getpid()}"
        self.connections: list[str] = []
        self._tcp = socket.create_server(("127.0.0.1", 0))
        self._unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._unix.bind("\0" + self.abstract)
        self._unix.listen()
        self.port = self._tcp.getsockname()[1]
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._serve, args=(s, name), daemon=True)
            for s, name in ((self._tcp, "tcp"), (self._unix, "abstract"))
        ]
        for thread in self._threads:
            thread.start()

    def _serve(self, server: socket.socket, name: str) -> None:
        server.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                self.connections.append(name)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self._tcp.close()
        self._unix.close()


# -- the lab -------------------------------------------------------------------------------------


class AttackLab:
    """The shared repository, its attack commits, and the cached score of each."""

    def __init__(self, root: Path, example_repo: Path, env: Mapping[str, str]) -> None:
        self.root = root
        self.repo_dir = root / "repo"
        self.outside = root / "outside"
        self.marker = root / "hook-ran"
        self.logs = root / "logs"
        self.state = root / "scorer-state"
        self.config = root / "attack-config.yaml"
        self.env = dict(env)
        self.listener = HostListener()
        self._observations: dict[str, Observation] = {}
        self._outside_snapshot: dict[str, bytes] = {}
        self.honest_channels: dict[str, str] = {}
        """Seed -> the authenticated channel of the honest fix's patch runs (for replays)."""
        self._build(example_repo)

    def close(self) -> None:
        self.listener.close()

    # -- setup ---------------------------------------------------------------------------------

    def placeholders(self) -> dict[str, str]:
        return {
            "@@OUTSIDE@@": str(self.outside),
            "@@MARKER@@": str(self.marker),
            "@@LOG_DIR@@": str(self.logs),
            "@@STATE_DIR@@": str(self.state),
            "@@PORT@@": str(self.listener.port),
            "@@ABSTRACT@@": self.listener.abstract,
            "@@HONEST_CHANNELS_B64@@": base64.b64encode(
                json.dumps(self.honest_channels).encode()
            ).decode(),
        }

    def fill(self, text: str) -> str:
        for key, value in self.placeholders().items():
            text = text.replace(key, value)
        return text

    def _build(self, example_repo: Path) -> None:
        for rel, content in OUTSIDE_FILES.items():
            (self.outside / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.outside / rel).write_text(content)
        self._outside_snapshot = snapshot_dir(self.outside)
        limits = "".join(f"    {key}: {value}\n" for key, value in ATTACK_LIMITS.items())
        self.configs = {}
        for oracle in ("in-process", "isolated"):
            self.configs[oracle] = self.config.with_name(f"attack-config-{oracle}.yaml")
            self.configs[oracle].write_text(
                f"sandbox:\n  run_as_uid: {ATTACK_UID}\n  oracle: {oracle}\n"
                f"scorer:\n  state_dir: {json.dumps(str(self.state))}\n"
                f"  log_dir: {json.dumps(str(self.logs))}\n  run_limits:\n{limits}"
            )
        self.config = self.configs["in-process"]
        repo = git.Repo.clone_from(str(example_repo), str(self.repo_dir), no_hardlinks=True)
        with repo.config_writer() as config:
            config.set_value("core", "hooksPath", os.devnull)
        self.repo = repo
        self._commit(
            "base",
            QUARANTINE_BASE,
            {
                CONTRACT_FILE: Write(
                    BASE_CONTRACT.replace(
                        "properties:\n", f"quarantine_list: {QUARANTINE_FILE}\nproperties:\n", 1
                    )
                ),
                QUARANTINE_FILE: Write('{"tests": []}\n'),
            },
            "Name a quarantine list in the contract",
        )
        self._commit("base", GUARDED_BASE, guarded_files(), "Guard: order_total keeps its list")
        self._commit("base", GAP_BASE, gap_files(), "Guard: order_total is a plain function")
        self._commit("base", SEARCH_BASE, search_files(), "first_dir, handed the import path")
        self._commit("base", LABEL_BASE, label_files(), "label, checked with re.fullmatch")

    def commit_case(self, case: AttackCase) -> str:
        return self._commit(case.parent, f"attack-{case.name}", case.files, case.story)

    def _commit(self, parent: str, tag: str, specs: Mapping[str, FileSpec], message: str) -> str:
        repo = self.repo
        repo.git.checkout("--quiet", "--force", "--detach", parent)
        repo.git.clean("-fdxq")
        tree = self.repo_dir
        for rel, spec in specs.items():
            if isinstance(spec, Delete | Symlink):
                remove_path(tree / rel)
        for rel, spec in specs.items():
            path = tree / rel
            if isinstance(spec, Write):
                path.parent.mkdir(parents=True, exist_ok=True)
                remove_path(path)
                path.write_text(self.fill(spec.content), encoding="utf-8")
                if spec.executable:
                    path.chmod(0o755)
            elif isinstance(spec, Binary):
                path.parent.mkdir(parents=True, exist_ok=True)
                remove_path(path)
                path.write_bytes(spec.data)
            elif isinstance(spec, Symlink):
                path.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(self.fill(spec.target), path)
        repo.git.add("--all", "--force", ".")
        with repo.git.custom_environment(**IDENTITY):
            repo.git.commit("--quiet", "--no-verify", "--allow-empty", "-m", message)
        sha = repo.head.commit.hexsha
        repo.create_tag(tag, ref=sha, force=True)
        return sha

    # -- scoring -------------------------------------------------------------------------------

    def score(self, case: AttackCase) -> Observation:
        """Score the case's commit once per session (cached): alone through `score`, or with
        every other batched case of its oracle through one `score-batch`."""
        if case.name not in self._observations:
            if batched(case):
                self._score_batch(case.oracle)
                return self._observations[case.name]
            if uses_honest_channels(case):
                self._keep_honest_channels()
            self.commit_case(case)
            observation = self._run_score(
                case.parent, f"attack-{case.name}", self.configs[case.oracle]
            )
            if case.probe is not None:
                observation.probe_problems = PROBES[case.probe](self, observation)
            self._observations[case.name] = observation
        return self._observations[case.name]

    def _score_batch(self, oracle: str) -> None:
        """Every batched case of ``oracle`` not scored yet, in one `patchwarden score-batch`."""
        from .cases import CASES

        seen = self._observations
        cases = [c for c in CASES if batched(c) and c.oracle == oracle and c.name not in seen]
        requests = self.root / f"batch-{oracle}.jsonl"
        lines = []
        for case in cases:
            self.commit_case(case)
            request = {
                "id": case.name,
                "repo": str(self.repo_dir),
                "parent": case.parent,
                "patch": f"attack-{case.name}",
                "contract": CONTRACT,
            }
            lines.append(json.dumps(request) + "\n")
        requests.write_text("".join(lines), encoding="utf-8")
        argv = ["patchwarden", "score-batch", "--config", str(self.configs[oracle])]
        argv += ["--log-dir", str(self.logs), "--json", str(requests)]
        started = time.monotonic()
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=SCORE_TIMEOUT_S + BATCH_TIMEOUT_PER_CASE_S * len(cases),
        )
        share = (time.monotonic() - started) / max(len(cases), 1)
        answered: dict[str, dict[str, Any]] = {}
        for line in proc.stdout.splitlines():
            if line.strip():
                entry = json.loads(line)
                answered[str(entry.get("id"))] = entry
        for case in cases:
            entry = answered.get(case.name)
            if entry is None or "bundle" not in entry:
                why = entry.get("error") if entry else f"no line (exit {proc.returncode})"
                self._observations[case.name] = Observation(
                    proc.returncode, "error", {}, {}, f"{why}\n{proc.stderr}", share
                )
                continue
            bundle = Path(entry["bundle"])
            data = json.loads((bundle / "decision.json").read_text(encoding="utf-8"))
            self._observations[case.name] = observation_of(
                data, proc.returncode, proc.stderr, share, self.logs
            )

    def _keep_honest_channels(self) -> None:
        """Score the honest fix first and keep its patch runs' channels, seed by seed."""
        if self.honest_channels:
            return
        from .cases import BY_NAME

        honest = self.score(BY_NAME["honest_fix"])
        assert honest.bundle is not None, honest.describe()
        for path in sorted((honest.bundle / "runs").glob("patch-seed*.channel.txt")):
            seed = path.name.removeprefix("patch-seed").removesuffix(".channel.txt")
            self.honest_channels[seed] = path.read_text(encoding="utf-8")

    def _run_score(self, parent: str, patch: str, config: Path) -> Observation:
        argv = [
            "patchwarden",
            "score",
            "--config",
            str(config),
            "--repo",
            str(self.repo_dir),
            "--contract",
            CONTRACT,
            "--parent",
            parent,
            "--patch",
            patch,
            "--log-dir",
            str(self.logs),
            "--json",
        ]
        started = time.monotonic()
        proc = subprocess.run(
            argv, capture_output=True, text=True, env=self.env, timeout=SCORE_TIMEOUT_S
        )
        duration = time.monotonic() - started
        if proc.returncode == 2 or not proc.stdout.strip():
            return Observation(proc.returncode, "error", {}, {}, proc.stderr, duration)
        data: dict[str, Any] = json.loads(proc.stdout)
        return observation_of(data, proc.returncode, proc.stderr, duration, self.logs)


def observation_of(
    data: Mapping[str, Any], exit_code: int, stderr: str, duration: float, logs: Path
) -> Observation:
    """What a verdict says (`score --json`'s object, a bundle's `decision.json`)."""
    reasons = {r["prop"]: r["reason"] for r in data["results"]}
    for group in ("extra_seeds", "held_out"):
        # A hidden group's results, as `<group>:<reason>` (the gate that decided them).
        for r in data.get(group, {}).get("results", []):
            if r["reason"] not in ("both_pass", "parent_fail_cleared"):
                reasons[f"{group}:{r['prop']}"] = f"{group}:{r['reason']}"
    return Observation(
        exit_code=exit_code,
        decision=data["decision"],
        reasons=reasons,
        findings={c["check"]: c["outcome"] for c in data["scorecard"]},
        stderr=stderr,
        duration_s=duration,
        verdict_id=data["verdict_id"],
        bundle=logs / "verdicts" / data["verdict_id"],
    )


def uses_honest_channels(case: AttackCase) -> bool:
    """A replay of the honest fix's authenticated channels (scored after the honest fix)."""
    return any(
        isinstance(spec, Write) and "@@HONEST_CHANNELS_B64@@" in spec.content
        for spec in case.files.values()
    )


def batched(case: AttackCase) -> bool:
    """Scored with the other cases of its oracle in one `score-batch` (the module's text)."""
    return case.probe is None and case.layer != "sandbox" and not uses_honest_channels(case)


# -- probes: what must hold on the host after the run ------------------------------------------


def snapshot_dir(root: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        out[rel] = b"<dir>" if path.is_dir() and not path.is_symlink() else path.read_bytes()
    return out


def remove_path(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _outside_untouched(lab: AttackLab, _: Observation) -> list[str]:
    now = snapshot_dir(lab.outside)
    if now != lab._outside_snapshot:
        changed = sorted(set(now) ^ set(lab._outside_snapshot)) or sorted(
            k for k in now if now[k] != lab._outside_snapshot.get(k)
        )
        return [f"the host directory behind the link changed: {', '.join(changed)}"]
    return []


def _no_marker(lab: AttackLab, _: Observation) -> list[str]:
    return [f"a hook ran: {lab.marker} exists"] if lab.marker.exists() else []


def _no_connection(lab: AttackLab, _: Observation) -> list[str]:
    seen = lab.listener.connections
    return [f"the sandbox reached the host listener: {', '.join(seen)}"] if seen else []


def _logs_untouched(lab: AttackLab, _: Observation) -> list[str]:
    hits = []
    for root in (lab.logs, lab.state):
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                try:
                    if FORGED_TOKEN.encode() in path.read_bytes():
                        hits.append(str(path.relative_to(root.parent)))
                except OSError:
                    continue
    return [f"a forged line reached {', '.join(hits)}"] if hits else []


def _output_truncated(lab: AttackLab, observed: Observation) -> list[str]:
    if observed.bundle is None:
        return ["no evidence bundle"]
    runs = sorted((observed.bundle / "runs").glob("patch-seed*.json"))
    flags = [json.loads(p.read_text())["truncated"] for p in runs]
    if not flags or not all(flags):
        return [f"patch runs not marked truncated: {flags}"]
    return []


PROBES: dict[str, Callable[[AttackLab, Observation], list[str]]] = {
    "outside_untouched": _outside_untouched,
    "no_marker": _no_marker,
    "no_connection": _no_connection,
    "logs_untouched": _logs_untouched,
    "output_truncated": _output_truncated,
}
