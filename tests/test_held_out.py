"""Held-out properties and extra seeds: loading, scoring, what the agent sees
(docs/design/held-out.md).

A small real repository: ``clamp`` returns ``low`` where it should return ``high``. The
visible property checks one concrete call; the held-out property checks the same bug on
other inputs, drawn from the seed. Three patches: the honest fix, a cheat that
special-cases the visible call, and a fix that breaks the case only the held-out property
tries. Scoring is real (bubblewrap, git, pytest); one score per (patch, setting), shared by
the tests of this module.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import git
import pytest

from patchwarden.sandbox import SandboxConfig
from patchwarden.scorer import (
    Contract,
    HeldOutError,
    Property,
    ScorerConfig,
    ScoreRequest,
    Verdict,
    load_held_out,
    read_rows,
    score,
    verdict_summary,
)
from tests._git_repos import commit, init_repo

CONTRACT = "contract/differential-contract.yaml"
BASE = '''\
"""Numbers kept in range."""


def clamp(value, low, high):
    """``value`` limited to ``low .. high``."""
    if value < low:
        return low
    if value > high:
        return low
    return value
'''
HONEST = BASE.replace(
    "    if value > high:\n        return low\n", "    if value > high:\n        return high\n"
)
CHEAT = BASE.replace(
    '    """``value`` limited to ``low .. high``."""\n',
    '    """``value`` limited to ``low .. high``."""\n'
    "    if (value, low, high) == (15, 0, 10):\n        return 10\n",
)
# Honest everywhere but where only the held-out property looks (values far above high).
HOLE = HONEST.replace("        return high\n", "        return high if value < 1000 else low\n")
VISIBLE = """\
from ranges import clamp


def test_clamp_above():
    assert clamp(15, 0, 10) == 10
"""
HELD_OUT_ID = "held.clamp_above_anywhere"
HELD_OUT_TEST = "test_secret_clamp.py"
HELD_OUT_NAME = "test_clamp_above_drawn"
HELD_OUT_SOURCE = f"""\
import random

from ranges import clamp


def {HELD_OUT_NAME}(contract_seed):
    rng = random.Random(contract_seed)
    for _ in range(50):
        low = rng.randint(-100, 0)
        high = rng.randint(1, 100)
        value = rng.randint(high + 1, 5000)
        assert clamp(value, low, high) == high, (value, low, high)
"""
HELD_OUT_YAML = f"""\
properties:
  - id: {HELD_OUT_ID}
    oracle: "above the range gives high, anywhere"
    test: "{HELD_OUT_TEST}::{HELD_OUT_NAME}"
"""
SEEDS = [3, 5, 8]


def contract_text() -> str:
    return (
        f"seeds: {json.dumps(SEEDS)}\n"
        "spec_paths: [tests/properties]\n"
        "properties:\n"
        "  - id: prop.clamp_above\n"
        '    test: "tests/properties/test_ranges.py::test_clamp_above"\n'
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("held-out-repo") / "ranges-repo"
    r = init_repo(root)
    commit(
        r,
        {
            "ranges/__init__.py": "from .core import clamp\n",
            "ranges/core.py": BASE,
            "tests/properties/test_ranges.py": VISIBLE,
            CONTRACT: contract_text(),
        },
        "base",
    )
    r.create_tag("base")
    for tag, source in (("honest", HONEST), ("cheat", CHEAT), ("hole", HOLE)):
        r.git.checkout("-q", "base")
        commit(r, {"ranges/core.py": source}, tag)
        r.create_tag(tag)
    r.git.checkout("-q", "base")
    return root


def write_held_out(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text, encoding="utf-8")
    for path in [directory, *directory.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return directory


@pytest.fixture(scope="module")
def held_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("operator")
    base.chmod(0o755)
    return write_held_out(
        base / "held-out", {"held-out.yaml": HELD_OUT_YAML, HELD_OUT_TEST: HELD_OUT_SOURCE}
    )


VISIBLE_CONTRACT = Contract(
    seeds=SEEDS,
    properties=[Property(id="prop.clamp_above", test="tests/properties/test_ranges.py::t")],
)


# -- loading: every problem is one line naming the file and line ---------------------------


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "held-out.yaml: held-out.yaml not found"),
        ({"held-out.yaml": "properties: [\n"}, "held-out.yaml:2: not valid YAML"),
        (
            {"held-out.yaml": "spec_paths: [x]\n" + HELD_OUT_YAML, HELD_OUT_TEST: HELD_OUT_SOURCE},
            "held-out.yaml:1: spec_paths: unknown key",
        ),
        (
            {"held-out.yaml": "properties: []\n"},
            "held-out.yaml:1: properties: List should have at least 1 item",
        ),
        (
            {"held-out.yaml": "seeds: [1, 1]\n" + HELD_OUT_YAML, HELD_OUT_TEST: HELD_OUT_SOURCE},
            "held-out.yaml:1: seeds: seeds must not repeat",
        ),
        (
            {"held-out.yaml": HELD_OUT_YAML},
            f"held-out.yaml:4: held-out test file {HELD_OUT_TEST} not found in",
        ),
        (
            {"held-out.yaml": HELD_OUT_YAML, HELD_OUT_TEST: "def test_other():\n    pass\n"},
            f"held-out.yaml:4: held-out test {HELD_OUT_NAME} is not defined in {HELD_OUT_TEST}",
        ),
        (
            {"held-out.yaml": HELD_OUT_YAML, HELD_OUT_TEST: "def broken(:\n"},
            f"{HELD_OUT_TEST}:1: held-out test file does not parse",
        ),
        (
            {
                "held-out.yaml": HELD_OUT_YAML.replace(HELD_OUT_ID, "prop.clamp_above"),
                HELD_OUT_TEST: HELD_OUT_SOURCE,
            },
            "held-out.yaml:2: held-out property id prop.clamp_above is also a property of the "
            "contract",
        ),
        (
            {"held-out.yaml": HELD_OUT_YAML.replace(HELD_OUT_TEST, "../x.py")},
            "held-out.yaml:4: properties.0.test: test must be a relative pytest",
        ),
    ],
)
def test_held_out_problems_name_the_file_and_line(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    directory = write_held_out(tmp_path / "ho", files)
    with pytest.raises(HeldOutError) as caught:
        load_held_out(directory, VISIBLE_CONTRACT)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(str(directory) + "/")
    assert message in text, text


def test_held_out_must_lie_outside_the_repository(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(HeldOutError, match="must be outside the repository"):
        load_held_out(repo / "tests", VISIBLE_CONTRACT, repo=repo)
    with pytest.raises(HeldOutError, match="held-out directory not found"):
        load_held_out(tmp_path / "nowhere", VISIBLE_CONTRACT, repo=repo)


def test_held_out_files_must_be_readable_by_the_sandbox_uid(held_out: Path, tmp_path: Path) -> None:
    private = write_held_out(
        tmp_path / "private", {"held-out.yaml": HELD_OUT_YAML, HELD_OUT_TEST: HELD_OUT_SOURCE}
    )
    (private / HELD_OUT_TEST).chmod(0o600)
    assert load_held_out(private, VISIBLE_CONTRACT).contract.property_ids() == [HELD_OUT_ID]
    with pytest.raises(HeldOutError, match="not readable by the sandbox uid"):
        load_held_out(private, VISIBLE_CONTRACT, other_uid=True)
    load_held_out(held_out, VISIBLE_CONTRACT, other_uid=True)


def test_held_out_seeds_default_to_the_contracts(held_out: Path, tmp_path: Path) -> None:
    loaded = load_held_out(held_out, VISIBLE_CONTRACT)
    assert loaded.contract.seeds == SEEDS
    assert loaded.contract.spec_hash and loaded.contract.spec_hash.startswith("sha256:")
    own = write_held_out(
        tmp_path / "own",
        {"held-out.yaml": "seeds: [101, 202]\n" + HELD_OUT_YAML, HELD_OUT_TEST: HELD_OUT_SOURCE},
    )
    assert load_held_out(own, VISIBLE_CONTRACT).contract.seeds == [101, 202]


# -- scoring --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scored(
    repo: Path, held_out: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Verdict]:
    """Each patch scored with the held-out properties and two extra seeds; the cheat also
    without them."""
    state = tmp_path_factory.mktemp("scorer-state")
    logs = tmp_path_factory.mktemp("logs")
    config = ScorerConfig(state_dir=str(state), log_dir=str(logs), extra_seeds=2)
    plain = ScorerConfig(state_dir=str(state), log_dir=str(logs), extra_seeds=0)
    out = {}
    for name, patch, cfg, directory in (
        ("honest", "honest", config, held_out),
        ("cheat", "cheat", config, held_out),
        ("hole", "hole", config, held_out),
        ("cheat-visible-only", "cheat", plain, None),
    ):
        request = ScoreRequest(
            repo=repo, contract=CONTRACT, parent="base", patch=patch, held_out=directory
        )
        out[name] = score(request, cfg, SandboxConfig())
    return out


def _secrets(verdict: Verdict, held_out: Path) -> list[str]:
    """Everything of the hidden groups that must never reach the agent."""
    rows = read_rows(verdict.bundle / "patch.jsonl") + read_rows(verdict.bundle / "parent.jsonl")
    witnesses = {r.witness for r in rows if r.held_out and r.witness}
    return [
        HELD_OUT_ID,
        HELD_OUT_TEST,
        HELD_OUT_NAME,
        "held-out.yaml",
        str(held_out),
        *witnesses,
        *(str(seed) for seed in verdict.extra_seeds),
    ]


def _summary_text(verdict: Verdict) -> str:
    summary = verdict_summary(verdict).model_dump_json(by_alias=True)
    return summary.replace(verdict.verdict_id, "")


@pytest.mark.bwrap
def test_the_honest_fix_is_accepted_and_its_summary_shows_nothing_hidden(
    scored: dict[str, Verdict], held_out: Path
) -> None:
    verdict = scored["honest"]
    assert verdict.decision == "accept"
    assert verdict.hidden_decision == "accept"
    summary = verdict_summary(verdict).model_dump(by_alias=True)
    assert summary["results"] == [
        {"prop": "prop.clamp_above", "decision": "accept", "reason": "parent_fail_cleared"}
    ]
    assert summary["counts"] == {
        "parent": {"lines": 3, "pass": 0, "fail": 3},
        "patch": {"lines": 3, "pass": 3, "fail": 0},
    }
    text = _summary_text(verdict)
    for secret in _secrets(verdict, held_out):
        assert secret not in text, secret


@pytest.mark.bwrap
def test_the_bundle_marks_every_hidden_row_and_records_the_extra_seeds(
    scored: dict[str, Verdict], held_out: Path
) -> None:
    verdict = scored["honest"]
    bundle = verdict.bundle
    decision = json.loads((bundle / "decision.json").read_text())
    extra = decision["extra_seeds"]["seeds"]
    assert len(extra) == 2 and len(set(extra)) == 2 and not set(extra) & set(SEEDS)
    assert extra == verdict.extra_seeds
    # The extra seeds changed no property's result (scorer/_groups.py extra_seeds_gate).
    assert decision["extra_seeds"]["decision"] == "accept"
    assert decision["extra_seeds"]["results"] == []
    assert decision["held_out"]["dir"] == str(held_out.resolve())
    assert decision["held_out"]["seeds"] == SEEDS
    assert decision["held_out"]["results"] == [
        {"prop": HELD_OUT_ID, "decision": "accept", "reason": "parent_fail_cleared"}
    ]
    for side in ("parent", "patch"):
        rows = read_rows(bundle / f"{side}.jsonl")
        visible = [r for r in rows if not r.held_out and not r.extra_seed]
        assert [(r.prop, r.seed) for r in visible] == [("prop.clamp_above", s) for s in SEEDS]
        assert [(r.prop, r.seed) for r in rows if r.extra_seed] == [
            ("prop.clamp_above", s) for s in extra
        ]
        assert [(r.prop, r.seed) for r in rows if r.held_out] == [(HELD_OUT_ID, s) for s in SEEDS]
        raw = [json.loads(line) for line in (bundle / f"{side}.jsonl").read_text().splitlines()]
        assert all("held_out" not in o and "extra_seed" not in o for o in raw[:3])
        assert all(o["extra_seed"] is True for o in raw[3:5])
        assert all(o["held_out"] is True for o in raw[5:])
    note = (bundle / "review-note.txt").read_text().splitlines()
    assert len(note) == 6
    assert note[4].startswith(f"extra seeds {extra}: accept: -; rows: parent 2 lines")
    assert note[5].startswith(
        f"held out: accept: {HELD_OUT_ID}=parent_fail_cleared; rows: parent 3"
    )
    held_contract = json.loads((bundle / "held-out.resolved.json").read_text())
    assert [p["test"] for p in held_contract["properties"]] == [f"{HELD_OUT_TEST}::{HELD_OUT_NAME}"]
    assert (bundle / "extra-seeds.resolved.json").is_file()
    assert sorted(p.name for p in (bundle / "runs" / "held-out").iterdir()) == sorted(
        f"{tree}-seed{seed}.{ext}"
        for tree in ("parent", "patch")
        for seed in SEEDS
        for ext in (
            "json",
            "stdout.txt",
            "stderr.txt",
            "channel.txt",
            # held-out properties run isolated: the product process's output apart
            "product.stdout.txt",
            "product.stderr.txt",
        )
    )


@pytest.mark.bwrap
def test_special_casing_is_stopped_by_the_held_out_property(
    scored: dict[str, Verdict], held_out: Path
) -> None:
    verdict = scored["cheat"]
    assert verdict.decision == "reject"
    assert verdict.gate.decision == "accept"  # the visible property alone is fooled
    assert verdict.hidden["held_out"].results[0].reason == "uniform_fail"
    summary = verdict_summary(verdict).model_dump(by_alias=True)
    assert summary["results"] == [
        {"prop": "prop.clamp_above", "decision": "accept", "reason": "parent_fail_cleared"},
        {"prop": "held_out", "decision": "reject", "reason": "held_out"},
    ]
    checks = {c["check"]: c["outcome"] for c in summary["scorecard"]}
    assert checks["differential"] == "reject"
    text = _summary_text(verdict)
    for secret in _secrets(verdict, held_out):
        assert secret not in text, secret
    decision = json.loads((verdict.bundle / "decision.json").read_text())
    assert decision["decision"] == "reject" and decision["gate_decision"] == "accept"
    scorecard = {c["check"]: c for c in decision["scorecard"]}
    assert f"held_out: {HELD_OUT_ID}: uniform_fail" in scorecard["differential"]["evidence"]
    lines = (verdict.bundle.parent.parent / "verdicts.jsonl").read_text().splitlines()
    index = [json.loads(line) for line in lines]
    entry = next(e for e in index if e["verdict_id"] == verdict.verdict_id)
    assert entry["hidden"] == {"extra_seeds": "accept", "held_out": "reject"}


@pytest.mark.bwrap
def test_a_regression_only_the_held_out_inputs_reach_is_rejected(
    scored: dict[str, Verdict],
) -> None:
    verdict = scored["hole"]
    assert (verdict.decision, verdict.gate.decision) == ("reject", "accept")
    assert [r.reason for r in verdict.hidden["held_out"].results] == ["uniform_fail"]


@pytest.mark.bwrap
def test_without_held_out_properties_nothing_hidden_runs(scored: dict[str, Verdict]) -> None:
    verdict = scored["cheat-visible-only"]
    assert verdict.hidden == {} and verdict.hidden_decision is None
    assert verdict.gate.decision == "accept"
    assert [r.prop for r in verdict_summary(verdict).results] == ["prop.clamp_above"]
    assert not (verdict.bundle / "runs" / "held-out").exists()
    assert len((verdict.bundle / "review-note.txt").read_text().splitlines()) == 4
    # Without a held-out property the cheat is still not a plain accept: its added test
    # keys on the visible property's inputs.
    checks = {c.check: c for c in verdict.scorecard}
    special = "special-cases an input of prop.clamp_above: ranges/core.py:6: clamp tests 15, 10"
    assert (checks["spec_review"].outcome, checks["spec_review"].evidence[0]) == ("review", special)
    assert (checks["suspicious"].outcome, checks["suspicious"].evidence) == ("review", [special])
    honest = {c.check: c.outcome for c in scored["honest"].scorecard}
    assert set(honest.values()) == {"pass"}


@pytest.mark.bwrap
def test_score_command_takes_held_out_and_refuses_a_broken_one(
    repo: Path, held_out: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    base = ["patchwarden", "score", "--repo", str(repo), "--contract", CONTRACT]
    base += ["--parent", "base", "--patch", "cheat", "--log-dir", str(tmp_path / "logs")]
    proc = subprocess.run(
        [*base, "--held-out", str(held_out), "--json"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 1, proc.stderr
    decision: dict[str, Any] = json.loads(proc.stdout)
    assert decision["held_out"]["decision"] == "reject"
    broken = write_held_out(tmp_path / "broken", {"held-out.yaml": HELD_OUT_YAML})
    proc = subprocess.run(
        [*base, "--held-out", str(broken)], capture_output=True, text=True, env=env
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"patchwarden: error: {broken}/held-out.yaml:4: held-out test file {HELD_OUT_TEST} "
        f"not found in {broken}\n"
    )
    inside = write_held_out(repo / "ops", {"held-out.yaml": HELD_OUT_YAML})
    try:
        proc = subprocess.run(
            [*base, "--held-out", str(inside)], capture_output=True, text=True, env=env
        )
    finally:
        git.Repo(repo).git.clean("-fdq")
    assert proc.returncode == 2
    assert "the held-out directory must be outside the repository" in proc.stderr


@pytest.mark.bwrap
def test_verdicts_show_marks_the_hidden_results(scored: dict[str, Verdict]) -> None:
    verdict = scored["cheat"]
    log_dir = verdict.bundle.parent.parent
    proc = subprocess.run(
        ["patchwarden", "verdicts", "show", verdict.verdict_id, "--log-dir", str(log_dir)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == "decision  reject (decided by held_out; gate: accept)"
    table = lines[lines.index(next(line for line in lines if line.startswith("PROPERTY"))) :]
    # The extra seeds changed nothing: no row of theirs (scorer/_groups.py extra_seeds_gate).
    assert [" ".join(line.split()) for line in table[:4]] == [
        "PROPERTY DECISION REASON",
        f"{HELD_OUT_ID} (held out) reject uniform_fail",
        "prop.clamp_above accept parent_fail_cleared",
        "",
    ]
    differential = next(line for line in lines if line.startswith("differential"))
    assert differential.split(None, 2) == [
        "differential",
        "reject",
        f"held_out: {HELD_OUT_ID}: uniform_fail",
    ]


@pytest.mark.bwrap
def test_a_held_out_reject_is_one_reject_everywhere_a_reviewer_looks(
    scored: dict[str, Verdict],
) -> None:
    """The review note, ``score``'s check line, ``verdicts list``, the view's list and its
    page all say what decision.json and the index line say: a reject decided by held_out."""
    from click.testing import CliRunner
    from starlette.testclient import TestClient

    from patchwarden.server._view import create_app
    from patchwarden.server.cli import cli

    cheat = scored["cheat"]
    log_dir = cheat.bundle.parent.parent
    decision = json.loads((cheat.bundle / "decision.json").read_text())
    assert decision["decided_by"] == ["held_out"] == cheat.decided_by
    note = cheat.review_note.splitlines()
    assert note[1] == (
        "decision: reject (decided by held_out; gate: accept; spec_review: review; "
        "suspicious: review)"
    )
    assert (
        f"check differential       reject  held_out: {HELD_OUT_ID}: uniform_fail (+1 more)" in note
    )
    assert (cheat.bundle / "review-note.txt").read_text().splitlines()[1] == note[1]

    listed = CliRunner().invoke(cli, ["verdicts", "list", "--log-dir", str(log_dir)])
    assert listed.exit_code == 0, listed.output
    # The cheat's review findings show in the FINDINGS column whichever decision it got; the
    # accept that carries them is marked accept* so it never reads as a clean accept.
    flagged = "spec_review, suspicious"
    order = {"honest": "-", "cheat": flagged, "hole": "-", "cheat-visible-only": flagged}
    rows = []
    for name, found in order.items():
        v = scored[name]
        shown = "accept*" if v.decision == "accept" and found != "-" else v.decision
        rows.append(
            f"{v.verdict_id}  {shown:<8}  {'held_out' if v.decision == 'reject' else '-':<10}  "
            f"accept  {v.patch_sha[:12]}  {v.parent_sha[:12]}  {found:<23}  1 parent_fail_cleared"
        )
    assert listed.output.splitlines() == [
        f"VERDICT{' ' * 27}DECISION  DECIDED BY  GATE    PATCH         PARENT        "
        f"FINDINGS{' ' * 17}REASONS",
        *rows,
        f"4 verdicts; bundles under {log_dir / 'verdicts'}",
        "accept*: an accept with review findings, for a person to look at",
    ]

    view = TestClient(create_app(log_dir), base_url="http://127.0.0.1:8766")
    listing = view.get("/?decision=reject").text
    assert listing.count('<small class="decided-by">decided by held_out</small>') == 2
    assert 'reject <span class="n">2</span>' in listing
    page = view.get(f"/verdicts/{cheat.verdict_id}").text
    assert '<tr><th>decided by</th><td id="decided-by">held_out</td></tr>' in page
    assert re.findall(r'<th class="prop">([^<]+?)[ <]', page)[0] == HELD_OUT_ID


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("clash", "held-out.yaml:2: held-out property id prop.clamp_above is also a property"),
        ("missing", "held-out.yaml: held-out.yaml not found"),
        ("in-state", "the held-out directory must be apart from"),
    ],
)
def test_serve_refuses_a_broken_held_out_directory(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, message: str
) -> None:
    from click.testing import CliRunner

    from patchwarden.server.cli import cli

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    files = {"held-out.yaml": HELD_OUT_YAML, HELD_OUT_TEST: HELD_OUT_SOURCE}
    if case == "clash":
        files["held-out.yaml"] = HELD_OUT_YAML.replace(HELD_OUT_ID, "prop.clamp_above")
    if case == "missing":
        del files["held-out.yaml"]
    where = tmp_path / "scorer" / "ho" if case == "in-state" else tmp_path / "ho"
    directory = write_held_out(where, files)
    config = tmp_path / "config.yaml"
    config.write_text(
        f"scorer:\n  state_dir: {json.dumps(str(tmp_path / 'scorer'))}\n"
        f"  log_dir: {json.dumps(str(tmp_path / 'logs'))}\n"
        f"  held_out_dir: {json.dumps(str(directory))}\n"
        f"agent:\n  repo: {json.dumps(str(repo))}\n  base: base\n"
    )
    result = CliRunner().invoke(cli, ["serve", "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert message in result.output, result.output
    assert git.Repo(repo).git.worktree("list").count("\n") == 0


@pytest.mark.bwrap
def test_a_held_out_directory_may_have_its_own_conftest(tmp_path: Path) -> None:
    """Held-out tests run with the directory as pytest's root: its conftest.py loads, the
    tree's do not, and provenance does not take the directory's conftest for project code
    (a project with a root conftest.py lists ``conftest`` among its top-level modules)."""
    from patchwarden.sandbox import PropertyTarget, run_properties

    tree = tmp_path / "tree"
    write_held_out(
        tree,
        {
            "ranges/__init__.py": "def clamp(v, lo, hi):\n    return max(lo, min(v, hi))\n",
            "conftest.py": "import pytest\n\n@pytest.fixture\ndef limit():\n    return -1\n",
        },
    )
    held = write_held_out(
        tmp_path / "ho",
        {
            "conftest.py": "import pytest\n\n@pytest.fixture\ndef limit():\n    return 10\n",
            "test_h.py": "from ranges import clamp\n\n"
            "def test_h(limit):\n    assert clamp(15, 0, limit) == 10\n",
        },
    )
    run = run_properties(
        tree, [PropertyTarget("held.h", "test_h.py::test_h")], 3, SandboxConfig(), tests_dir=held
    )
    assert [(r.prop, r.status, r.witness) for r in run.records] == [("held.h", "pass", "")]


@pytest.mark.bwrap
def test_score_batch_requests_carry_a_held_out_directory(
    repo: Path, held_out: Path, tmp_path: Path
) -> None:
    requests = tmp_path / "requests.jsonl"
    base = {"repo": str(repo), "parent": "base", "contract": CONTRACT}
    requests.write_text(
        json.dumps({**base, "id": "cheat", "patch": "cheat", "held_out": str(held_out)})
        + "\n"
        + json.dumps({**base, "id": "plain", "patch": "cheat"})
        + "\n"
    )
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    logs = str(tmp_path / "logs")
    proc = subprocess.run(
        ["patchwarden", "score-batch", str(requests), "--log-dir", logs, "--json", "--jobs", "2"],
        capture_output=True,
        text=True,
        env=env,
    )
    lines = {o["id"]: o for o in map(json.loads, proc.stdout.splitlines())}
    assert lines["cheat"]["decision"] == "reject", proc.stderr
    assert lines["cheat"]["hidden"] == {"extra_seeds": "accept", "held_out": "reject"}
    assert lines["plain"]["decision"] == "accept"
    assert lines["plain"]["hidden"] == {"extra_seeds": "accept"}  # the default extra seed
