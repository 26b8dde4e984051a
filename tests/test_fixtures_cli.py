"""``patchwarden fixtures pin|guard`` (docs/design/contract-layers.md): the manifest and the drift
guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchwarden.scorer._hashing import sha256_file
from patchwarden.server.cli import cli
from tests._git_repos import commit, contract_yaml, init_repo

ORDERS = "tests/fixtures/orders.json"
PRICES = "tests/fixtures/prices.csv"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    repo = init_repo(path)
    commit(
        repo,
        {
            "contract/differential-contract.yaml": contract_yaml(
                [1], {"prop.total": "tests/properties/test_total.py::test_total"}
            ),
            ORDERS: '{"orders": []}\n',
            PRICES: "sku,price\nA,1.00\n",
        },
        "fixtures",
    )
    return path


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="patchwarden")
    return result.exit_code, result.stdout, result.stderr


def test_pin_writes_the_manifest_the_contract_names(repo: Path) -> None:
    code, out, err = _run(
        "fixtures", "pin", "--repo", str(repo), ORDERS, PRICES, "--covers", "prop.total"
    )
    assert (code, err) == (0, "")
    manifest = json.loads((repo / "tests/fixtures/manifest.json").read_text())
    entries = {e["fixture"]: e for e in manifest["fixtures"]}
    assert set(entries) == {ORDERS, PRICES}
    for rel, entry in entries.items():
        assert set(entry) == {"fixture", "sha256", "frozen_at", "covers"}
        assert entry["sha256"] == sha256_file(repo / rel)
        assert entry["covers"] == ["prop.total"]
        assert entry["frozen_at"].endswith("Z")
    assert f"pinned {ORDERS} sha256 {entries[ORDERS]['sha256']} covers prop.total" in out


def test_guard_holds_then_reports_each_drift(repo: Path) -> None:
    assert _run("fixtures", "pin", "--repo", str(repo), ORDERS, PRICES)[0] == 0
    code, out, _ = _run("fixtures", "guard", "--repo", str(repo))
    assert code == 0 and out.startswith("ok: 2 fixtures match")
    pinned = sha256_file(repo / ORDERS)
    (repo / ORDERS).write_text('{"orders": [1]}\n')
    (repo / PRICES).unlink()
    manifest = json.loads((repo / "tests/fixtures/manifest.json").read_text())
    prices = next(e["sha256"] for e in manifest["fixtures"] if e["fixture"] == PRICES)
    code, out, err = _run("fixtures", "guard", "--repo", str(repo))
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"fixture drifted: {ORDERS} expected {pinned}, got {sha256_file(repo / ORDERS)}",
        f"fixture drifted: {PRICES} expected {prices}, got missing",
    ]


def test_repinning_one_fixture_keeps_the_others_and_their_covers(repo: Path) -> None:
    _run("fixtures", "pin", "--repo", str(repo), ORDERS, PRICES, "--covers", "prop.total")
    before = json.loads((repo / "tests/fixtures/manifest.json").read_text())["fixtures"]
    (repo / ORDERS).write_text('{"orders": [2]}\n')
    assert _run("fixtures", "pin", "--repo", str(repo), ORDERS)[0] == 0
    after = {
        e["fixture"]: e
        for e in json.loads((repo / "tests/fixtures/manifest.json").read_text())["fixtures"]
    }
    assert after[ORDERS]["sha256"] == sha256_file(repo / ORDERS)
    assert after[ORDERS]["covers"] == ["prop.total"]
    assert after[PRICES] == next(e for e in before if e["fixture"] == PRICES)
    assert _run("fixtures", "guard", "--repo", str(repo))[0] == 0


def test_explicit_manifest_path(repo: Path) -> None:
    code, _, _ = _run("fixtures", "pin", "--repo", str(repo), "--manifest", "m.json", ORDERS)
    assert code == 0 and (repo / "m.json").is_file()
    assert _run("fixtures", "guard", "--repo", str(repo), "--manifest", "m.json")[0] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pin", "tests/fixtures/none.json"], "fixture not found"),
        (["pin", "/etc/hostname"], "/etc/hostname: fixture is outside the repository"),
        (["pin"], "Missing argument 'FIXTURES...'"),
        (["guard", "--manifest", "nope.json"], "nope.json: fixture manifest not found"),
        (["guard", "--manifest", "bad.json"], "bad.json:2: not valid JSON"),
        (["pin", "--bogus", ORDERS], "No such option '--bogus'"),
    ],
)
def test_errors_are_one_line_exit_2(repo: Path, args: list[str], message: str) -> None:
    (repo / "bad.json").write_text('{"fixtures":\n ]')
    code, out, err = _run("fixtures", args[0], "--repo", str(repo), *args[1:])
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1, err
    assert err.startswith("patchwarden: error: ") and message in err
