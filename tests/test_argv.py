"""The bubblewrap command line (sandbox/_argv.py): what a launch mounts, shares and clears.

Pure: the argv is built and read, nothing runs (the real launches are in
tests/test_sandbox_launch.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patchwarden import sandbox
from patchwarden.sandbox import TREE_MOUNT, LaunchSpec, SandboxConfig, build_bwrap_argv

CONFIG = SandboxConfig()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A tree with one contract file."""
    root = tmp_path / "tree"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_contract.py").write_text("ORIGINAL\n")
    return root


def test_bwrap_argv_isolates_by_default(tree: Path) -> None:
    argv = build_bwrap_argv(LaunchSpec(argv=["python3", "x.py"], tree=tree), CONFIG)
    assert "--unshare-net" in argv or "--unshare-all" in argv
    assert "--share-net" not in argv
    for flag in ("--die-with-parent", "--new-session", "--clearenv"):
        assert flag in argv
    assert argv.index("--clearenv") < argv.index("--setenv")
    assert argv[argv.index(str(tree)) - 1] == "--ro-bind"
    assert argv[argv.index(str(tree)) + 1] == TREE_MOUNT
    assert argv[-2:] == ["python3", "x.py"]
    sources = {argv[i + 1] for i, arg in enumerate(argv) if arg in ("--bind", "--ro-bind")}
    assert str(Path.home()) not in sources
    assert str(Path(sandbox.__file__).parents[1]) not in sources  # our project is not mounted


def test_bwrap_argv_binds_a_writable_tree_and_contract_paths(tree: Path) -> None:
    spec = LaunchSpec(
        argv=["true"],
        tree=tree,
        tree_writable=True,
        contract_paths=["tests/test_contract.py", "tests/test_missing.py"],
    )
    argv = build_bwrap_argv(spec, CONFIG)
    assert argv[argv.index(str(tree)) - 1] == "--bind"
    contract = str(tree / "tests" / "test_contract.py")
    assert argv[argv.index(contract) - 1 : argv.index(contract) + 2] == [
        "--ro-bind",
        contract,
        f"{TREE_MOUNT}/tests/test_contract.py",
    ]
    assert f"{TREE_MOUNT}/tests/test_missing.py" in argv


def test_network_setting_shares_the_network(tree: Path) -> None:
    argv = build_bwrap_argv(LaunchSpec(argv=["true"], tree=tree), SandboxConfig(network=True))
    assert "--unshare-net" not in argv


@pytest.mark.parametrize("bad", ["/etc/passwd", "../up", "a/../../b", ".git/config", "", "."])
def test_a_contract_path_outside_the_tree_is_refused(tree: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="contract path"):
        build_bwrap_argv(LaunchSpec(argv=["true"], tree=tree, contract_paths=[bad]), CONFIG)
