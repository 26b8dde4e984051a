"""The score's secret: hash seeds, random seeds and extra seeds the agent cannot predict.

Unit tests of the derivation, the extra seeds' gate and the replay's reading; one real score
of the orders example and its replay (bubblewrap, the real scorer): the bundle records the
secret and every run's entropy, the parent's and the patch's run of a seed share it, no
contract seed is a hash seed, and ``score --replay`` gives the same rows.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from patchwarden.sandbox import HASH_SEED_RANGE, RunEntropy
from patchwarden.scorer import (
    EXTRA_SEEDS_OFF,
    SEEDS_FILE,
    Contract,
    InputError,
    RunRow,
    ScorerConfig,
    ScoreSecret,
    decide,
    read_replay,
    read_rows,
    row_differences,
)
from patchwarden.scorer._groups import extra_seeds_gate
from patchwarden.scorer._seeds import seeds_record

SEEDS = [11, 29, 47]
CONTRACT = Contract.model_validate(
    {
        "contract_version": 1,
        "seeds": SEEDS,
        "properties": [
            {"id": "prop.a", "oracle": "a", "test": "tests/test_a.py::test_a"},
            {"id": "prop.b", "oracle": "b", "test": "tests/test_a.py::test_b"},
        ],
    }
)


# -- the secret ------------------------------------------------------------------------------


def test_a_secret_derives_the_same_values_every_time_and_different_ones_per_seed() -> None:
    secret = ScoreSecret(bytes(range(32)))
    again = ScoreSecret.from_hex(secret.hex())
    assert [again.entropy(s) for s in SEEDS] == [secret.entropy(s) for s in SEEDS]
    entropies = [secret.entropy(s) for s in SEEDS]
    assert len({e.hash_seed for e in entropies}) == 3
    assert all(0 <= e.hash_seed < HASH_SEED_RANGE for e in entropies)
    assert secret.extra_seeds(3, SEEDS) == again.extra_seeds(3, SEEDS)
    assert ScoreSecret.draw().entropy(11) != ScoreSecret.draw().entropy(11)


def test_extra_seeds_avoid_the_schedule_and_each_other() -> None:
    secret = ScoreSecret(bytes(32))
    first = secret.extra_seeds(1, [])[0]
    seeds = secret.extra_seeds(5, [first, *SEEDS])
    assert len(set(seeds)) == 5 and first not in seeds and not set(seeds) & set(SEEDS)
    assert secret.extra_seeds(0, SEEDS) == []


@pytest.mark.parametrize("bad", ["", "00" * 31, "zz" * 32])
def test_a_secret_that_is_not_32_bytes_of_hex_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        ScoreSecret.from_hex(bad)


@pytest.mark.parametrize(
    "data",
    [{"hash_seed": -1, "random_seed": 0}, {"hash_seed": 2**32, "random_seed": 0},
     {"hash_seed": "1", "random_seed": 0}, {"hash_seed": 1}],
)  # fmt: skip
def test_entropy_outside_the_hash_seed_range_is_refused(data: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        RunEntropy.from_json(data)


def test_the_record_names_extra_seeds_turned_off() -> None:
    secret = ScoreSecret(bytes(32))
    record = seeds_record(secret, [11, 11, 29], [])
    assert record == {
        "secret": "00" * 32,
        "extra_seeds": [],
        "extra_seeds_off": EXTRA_SEEDS_OFF,
        "runs": {"11": secret.entropy(11).to_json(), "29": secret.entropy(29).to_json()},
    }
    assert "extra_seeds_off" not in seeds_record(secret, [11], [5])


def test_one_extra_seed_by_default_and_zero_only_when_chosen() -> None:
    assert ScorerConfig().extra_seeds == 1
    assert ScorerConfig(extra_seeds=0).extra_seeds == 0


# -- the extra seeds' gate -------------------------------------------------------------------


def _rows(contract: Contract, side: str, statuses: dict[str, list[str]]) -> list[RunRow]:
    return [
        RunRow(
            prop=prop,
            seed=seed,
            status=status,
            witness=f"{prop}|AssertionError|tests/test_a.py:3" if status == "fail" else "",
            tree=side,
            contract_hash=contract.contract_hash,
        )
        for prop, column in statuses.items()
        for seed, status in zip(contract.seeds, column, strict=True)
    ]


EXTRA = CONTRACT.model_copy(update={"seeds": [123456]})


def _gate(
    schedule: dict[str, dict[str, list[str]]], extra: dict[str, dict[str, list[str]]]
) -> tuple[str, list[tuple[str, str]]]:
    rows = {side: _rows(CONTRACT, side, schedule[side]) for side in ("parent", "patch")}
    extra_rows = {side: _rows(EXTRA, side, extra[side]) for side in ("parent", "patch")}
    contract_gate = decide(CONTRACT, rows["parent"], rows["patch"])
    gate = extra_seeds_gate(CONTRACT, contract_gate, rows, EXTRA, extra_rows)
    return gate.decision, [(r.prop, r.reason) for r in gate.results]


P, F = "pass", "fail"


def test_a_failure_both_sides_share_on_the_schedule_is_no_news_on_an_extra_seed() -> None:
    # A refactor that leaves the bug: the schedule shows a shared variant fail (split on the
    # parent's seeds); one extra seed failing on both sides is the same failure, not a
    # uniform_fail of a lone seed.
    schedule = {
        "parent": {"prop.a": [F, F, P], "prop.b": [P, P, P]},
        "patch": {"prop.a": [F, F, P], "prop.b": [P, P, P]},
    }
    extra = {"parent": {"prop.a": [F], "prop.b": [P]}, "patch": {"prop.a": [F], "prop.b": [P]}}
    assert _gate(schedule, extra) == ("accept", [])
    # Gated alone (before), that lone seed rejected the refactor at random.
    alone = decide(
        EXTRA, _rows(EXTRA, "parent", extra["parent"]), _rows(EXTRA, "patch", extra["patch"])
    )
    assert [(r.prop, r.reason) for r in alone.results if r.decision == "reject"] == [
        ("prop.a", "uniform_fail")
    ]


def test_a_patch_that_passes_only_the_schedules_inputs_is_rejected_by_an_extra_seed() -> None:
    schedule = {
        "parent": {"prop.a": [P, P, P], "prop.b": [F, F, F]},
        "patch": {"prop.a": [P, P, P], "prop.b": [P, P, P]},
    }
    extra = {"parent": {"prop.a": [P], "prop.b": [F]}, "patch": {"prop.a": [F], "prop.b": [P]}}
    assert _gate(schedule, extra) == ("reject", [("prop.a", "regression")])


def test_what_the_schedule_already_rejects_is_not_the_extra_seeds_finding() -> None:
    schedule = {
        "parent": {"prop.a": [P, P, P], "prop.b": [P, P, P]},
        "patch": {"prop.a": [F, P, P], "prop.b": [P, P, P]},
    }
    extra = {"parent": {"prop.a": [P], "prop.b": [P]}, "patch": {"prop.a": [F], "prop.b": [P]}}
    assert _gate(schedule, extra) == ("accept", [])


# -- replay: reading a bundle ----------------------------------------------------------------


def test_a_bundle_without_its_seeds_cannot_be_replayed(tmp_path: Path) -> None:
    (tmp_path / "decision.json").write_text("{}")
    with pytest.raises(InputError) as missing:
        read_replay(tmp_path)
    where = tmp_path / SEEDS_FILE
    assert str(missing.value) == f"{where}: missing: not a bundle this scorer can replay"
    (tmp_path / SEEDS_FILE).write_text(json.dumps({"secret": "00", "extra_seeds": []}))
    with pytest.raises(InputError) as bad:
        read_replay(tmp_path)
    assert str(bad.value) == f"{where}: 'secret' is not 64 hex digits"


def test_row_differences_name_the_row_and_the_field() -> None:
    before = {"parent": _rows(CONTRACT, "parent", {"prop.a": [P, F, P]}), "patch": []}
    after = {"parent": _rows(CONTRACT, "parent", {"prop.a": [P, P, P]}), "patch": []}
    assert row_differences(before, before) == []
    assert row_differences(before, after) == [
        "parent row 2 (prop.a seed 29): status 'fail' -> 'pass', "
        "witness 'prop.a|AssertionError|tests/test_a.py:3' -> ''"
    ]


# -- a real score and its replay -------------------------------------------------------------


def _patchwarden(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["patchwarden", *args], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.mark.bwrap
def test_score_records_the_secret_and_replay_gives_the_same_rows(
    example_repo: Path, scorer_env: dict[str, str], tmp_path: Path
) -> None:
    logs, again = tmp_path / "logs", tmp_path / "again"
    scored = _patchwarden(
        "score", "--repo", str(example_repo), "--contract", "contract/differential-contract.yaml",
        "--parent", "base", "--patch", "patch-fix", "--log-dir", str(logs), "--json",
        env=scorer_env,
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    decision = json.loads(scored.stdout)
    bundle = logs / "verdicts" / decision["verdict_id"]
    record = json.loads((bundle / SEEDS_FILE).read_text())
    secret = ScoreSecret.from_hex(record["secret"])
    extra = record["extra_seeds"]
    assert len(extra) == 1 and extra == decision["extra_seeds"]["seeds"]
    assert record["request"] == {
        "repo": str(example_repo.resolve()),
        "contract": "contract/differential-contract.yaml",
        "held_out": None,
    }
    for seed in [*SEEDS, *extra]:
        entropy = secret.entropy(seed)
        assert record["runs"][str(seed)] == entropy.to_json()
        assert entropy.hash_seed not in SEEDS and entropy.random_seed not in SEEDS
        # The parent's and the patch's run of one seed ran with the same entropy.
        for side in ("parent", "patch"):
            run = json.loads((bundle / "runs" / f"{side}-seed{seed}.json").read_text())
            assert run["entropy"] == entropy.to_json(), (side, seed)
    replayed = _patchwarden(
        "score", "--replay", str(bundle), "--log-dir", str(again), env=scorer_env
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    rows = sum(len(read_rows(bundle / f"{side}.jsonl")) for side in ("parent", "patch"))
    assert replayed.stdout.splitlines()[-1] == f"replay of {bundle}: the same {rows} rows"
    second = next((again / "verdicts").iterdir())
    assert json.loads((second / SEEDS_FILE).read_text())["runs"] == record["runs"]


@pytest.mark.bwrap
def test_replay_refuses_commits_of_its_own(tmp_path: Path, scorer_env: dict[str, str]) -> None:
    done = _patchwarden("score", "--replay", str(tmp_path), "--parent", "x", env=scorer_env)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "--replay takes the commits and held-out directory it records"
    ), done.stderr
    bare = _patchwarden("score", "--parent", "x", env={**scorer_env, "PWD": os.getcwd()})
    assert bare.returncode == 2 and "missing option --repo, --contract, --patch" in bare.stderr
