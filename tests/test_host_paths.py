"""No host paths inside: a real session's runs read /proc and find neither the state
directories, nor the log directory, nor the session id (docs/threat-model.md, "What a run can
learn about the host").

One served session (stdio); the probe runs twice: as a test in the agent's ``run_tests``
(writable tree: it writes what it read into the worktree) and as product code imported by
the scorer's runs of a submitted patch (read-only tree: it writes to stderr, which the
scorer keeps in the evidence bundle).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from anyio.from_thread import start_blocking_portal
from faults.harness import Dirs, Served, build_repo, start_stdio

pytestmark = pytest.mark.bwrap

PROBE = r"""
import json, os

def _read(path, binary=False):
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return "unreadable: " + type(exc).__name__
    return data.decode("utf-8", "replace").replace("\0", " ")

def _links(pid):
    found = {}
    for name in ("cwd", "root", "exe"):
        try:
            found[name] = os.readlink("/proc/%s/%s" % (pid, name))
        except OSError:
            pass
    try:
        for fd in os.listdir("/proc/%s/fd" % pid):
            try:
                found["fd" + fd] = os.readlink("/proc/%s/fd/%s" % (pid, fd))
            except OSError:
                pass
    except OSError:
        pass
    return found

def probe():
    seen = {}
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        seen[pid] = {
            "cmdline": _read("/proc/%s/cmdline" % pid),
            "environ": _read("/proc/%s/environ" % pid),
            "mountinfo": _read("/proc/%s/mountinfo" % pid),
            "cgroup": _read("/proc/%s/cgroup" % pid),
            "links": _links(pid),
        }
    return seen
"""

AGENT_TEST = (
    PROBE
    + """

def test_probe():
    with open("probe-agent.json", "w") as handle:
        json.dump(probe(), handle)
"""
)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("hostpaths")
    dirs = Dirs.under(base, build_repo(base / "orders"))
    dirs.write_config()
    with start_blocking_portal() as portal:
        served, stop = start_stdio(portal, dirs)
        try:
            yield served
        finally:
            stop()


def secrets_of(dirs: Dirs) -> dict[str, str]:
    session_id = dirs.audit()[0]["session"]
    return {
        "scorer state directory": str(dirs.scorer_state),
        "server state directory": str(dirs.server_state),
        "log directory": str(dirs.logs),
        "session id": session_id,
        "the test's base directory": str(dirs.base),
    }


def leaks(seen: dict[str, object], secrets: dict[str, str]) -> list[str]:
    text = json.dumps(seen)
    return [f"{name} ({value})" for name, value in secrets.items() if value in text]


def test_the_agents_runs_see_no_host_paths_in_proc(session: Served) -> None:
    session.ok("write_file", {"path": "tests/test_probe.py", "content": AGENT_TEST})
    run = session.ok("run_tests", {"tests": ["tests/test_probe.py"]})
    assert run["counts"] == {"passed": 1}, run
    seen = json.loads(session.ok("read_file", {"path": "probe-agent.json"})["content"])
    assert len(seen) >= 2  # bubblewrap's init and the test process at least
    init = seen[min(seen, key=int)]
    assert "--args" in init["cmdline"] and "--ro-bind" not in init["cmdline"]
    assert_read_and_clean(seen, session.dirs)


def assert_read_and_clean(seen: dict[str, dict[str, object]], dirs: Dirs) -> None:
    mountinfo = " ".join(str(p["mountinfo"]) for p in seen.values())
    # It did read them; what remains is the tree's neutral host path (sandbox/_trees.py).
    assert " /workspace " in mountinfo and "/patchwarden-trees-" in mountinfo
    assert leaks(seen, secrets_of(dirs)) == []


def test_the_scorers_runs_see_no_host_paths_in_proc(session: Served) -> None:
    dirs = session.dirs
    # Product code: bulk_price, called from the bulk-rounding property, has a child process
    # read /proc (a child: the runner's audit hook refuses such reads in the runner's own
    # process, docs/design/runner.md) and writes what it read to stderr, once per test. That
    # property fails on the base (the example's bug), so pytest's report of the failure
    # carries the captured stderr into the run's evidence.
    product = (
        "\nimport json as _json, os as _os, subprocess as _subprocess, sys as _sys\n"
        f"_PROBE = {PROBE + 'print(json.dumps(probe()))'!r}\n"
        "_probed = set()\n_bulk_price = bulk_price\n\n"
        "def bulk_price(*args, **kwargs):\n"
        "    test = _os.environ.get('PYTEST_CURRENT_TEST', '')\n"
        "    if test not in _probed:\n"
        "        _probed.add(test)\n"
        "        out = _subprocess.run([_sys.executable, '-c', _PROBE], capture_output=True,"
        " text=True).stdout\n"
        "        _sys.stderr.write('PROBE ' + out.strip() + ' END\\n')\n"
        "    return _bulk_price(*args, **kwargs)\n"
    )
    original = session.ok("read_file", {"path": "orders/total.py"})["content"]
    session.ok("write_file", {"path": "orders/total.py", "content": original + product})
    summary = session.ok("submit_patch", {"message": "a patch that reads /proc"})
    outputs = (dirs.logs / "verdicts" / summary["verdict_id"] / "runs").glob("patch-*.txt")
    probes = []
    for path in outputs:
        text = path.read_text()
        probes += [json.loads(chunk.split(" END", 1)[0]) for chunk in text.split("PROBE ")[1:]]
    assert probes, "the patch's runs did not report"
    for seen in probes:
        assert_read_and_clean(seen, dirs)
