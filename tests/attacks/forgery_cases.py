"""The forgery family: product code that writes its own verdict (docs/design/runner.md,
"Unforgeable results").

Every case leaves the bulk bug in place (most take a cent off every total too, so the honest
verdict is `reject`) and adds code, in the product package, that tries to hand the scorer a
clean `accept`: by writing the result channel itself (from a thread, atexit, a signal handler,
a `__del__`, an import hook, to every descriptor, or by replaying an honest run), or by reaching
into the runner's memory (a gc walk, a frame walk, ctypes, /proc/self/fd, /proc/self/mem, a
child process reading its parent) to take the secret or rewrite the rows before they are
signed. The agent is assumed to know the protocol: the runner's source is public, so the forged
rows have the published format, the right seed and the right settings fingerprint; only the
run's key and exit status are guesses. Each case must end as anything but a clean accept:
`forged` rejects it, or the attack leaves the honest verdict standing.

The content may hold @@HONEST_CHANNELS_B64@@: the lab fills in, base64 of JSON, the channels
of an honest scored run of this session, seed -> text (see AttackLab.honest_channels).
"""

from __future__ import annotations

from .cases import AttackCase, Expected, in_init, lazy, reject


def _code(source: str) -> str:
    import textwrap

    return textwrap.dedent(source).lstrip("\n")


PROPS = (
    "prop.order_total_non_negative",
    "prop.order_total_matches_fixture",
    "prop.bulk_rounding",
)

FORGER = _code('''
    import hashlib as _hashlib
    import hmac as _hmac
    import json as _json
    import os as _os
    import secrets as _secrets
    import stat as _stat
    import sys as _sys

    _PROPS = ("prop.order_total_non_negative", "prop.order_total_matches_fixture",
              "prop.bulk_rounding")


    def _seed():
        args = _sys.argv
        return int(args[args.index("--seed") + 1])


    def _fingerprint():
        """The settings fingerprint, recomputed as the runner's published source does."""
        from hypothesis import settings
        keys = ("max_examples", "derandomize", "database", "deadline", "phases",
                "suppress_health_check", "stateful_step_count", "report_multiple_bugs")
        return ";".join(f"{k}={getattr(settings.default, k, None)!r}" for k in keys)


    def _signed_rows(key=None):
        """The rows the runner writes, in its published format: `<hmac> <body>` per row
        and an end marker. The run's key is secret, so this one is a guess."""
        key = key or _secrets.token_bytes(32)
        seed, settings = _seed(), _fingerprint()
        bodies = [
            {"seq": n, "row": {"prop": p, "seed": seed, "status": "pass", "witness": "",
                               "duration_s": 0.01, "settings": settings}}
            for n, p in enumerate(_PROPS)
        ]
        bodies.append({"seq": len(bodies),
                       "end": {"rows": len(bodies), "exitstatus": 0, "shadowed": []}})
        lines = []
        for body in bodies:
            text = _json.dumps(body, sort_keys=True, separators=(",", ":"))
            mac = _hmac.new(key, text.encode(), _hashlib.sha256).hexdigest()
            lines.append(mac + " " + text + "\\n")
        return "".join(lines).encode()


    def _pipes():
        """Every pipe among the descriptors: the result channel is one of them."""
        found = []
        for fd in range(3, 256):
            try:
                if _stat.S_ISFIFO(_os.fstat(fd).st_mode):
                    found.append(fd)
            except OSError:
                pass
        return found


    def _write_all(data, fds):
        for fd in fds:
            try:
                _os.write(fd, data)
            except OSError:
                pass


    def _forge_and_leave():
        _write_all(_signed_rows(), _pipes())
        _os._exit(0)
''')


def forgery(name: str, story: str, trick: str, layer: str, expected: Expected) -> AttackCase:
    return AttackCase(
        name,
        "forgery",
        story,
        lazy(**{"orders/__init__.py": in_init(FORGER + "\n\n" + _code(trick))}),
        expected,
        layer,
    )


FORGED = reject(forged="reject")
"""The run's channel cannot be believed: `forged` rejects the patch, whatever else."""
HONEST_REJECT = reject("regression")
"""The trick never gets to act: the lazy code keeps its honest verdict."""

FORGERY_CASES: tuple[AttackCase, ...] = (
    # -- the two variants of the issue ------------------------------------------------------------
    forgery(
        "forge_thread_runner_globals",
        "a thread takes the channel, targets, seed and fingerprint from the runner's globals, "
        "writes a pass row per target and the end marker, then os._exit(0)",
        """
        import threading as _threading


        def _from_the_runner():
            runner = _sys.modules["__main__"]
            rows = _signed_rows()
            channel = getattr(runner, "CHANNEL_FD", None)
            _write_all(rows, [channel] if channel is not None else _pipes())
            _os._exit(0)


        if "__main__" in _sys.modules and hasattr(_sys.modules["__main__"], "TARGETS"):
            _threading.Thread(target=_from_the_runner, daemon=True).start()
        """,
        "authenticated-channel",
        FORGED,
    ),
    forgery(
        "forge_no_runner_object",
        "no runner object: targets from argv, the channel from a /proc/self/fd scan, the "
        "fingerprint recomputed from the runner's source, names built from pieces",
        """
        def _targets():
            args = _sys.argv
            return [p for p, _ in _json.loads(args[args.index("--tar" + "gets") + 1])]


        def _scan():
            try:
                names = _os.listdir("/proc/" + "self" + "/fd")
            except Exception:
                return _pipes()
            return [int(n) for n in names if _os.readlink("/proc/self/fd/" + n).startswith("pipe:")]


        if "--tar" + "gets" in _sys.argv and _targets():
            _write_all(_signed_rows(), _scan())
            getattr(__import__("o" + "s"), "_" + "exit")(0)
        """,
        "audit-hook",
        FORGED,
    ),
    # -- vehicles that write the channel at a moment of their choosing ---------------------------
    forgery(
        "forge_from_atexit",
        "an atexit handler writes the signed-looking rows after the runner's own end",
        """
        import atexit as _atexit

        if "--seed" in _sys.argv:
            _atexit.register(lambda: _write_all(_signed_rows(), _pipes()))
        """,
        "authenticated-channel",
        HONEST_REJECT,
    ),
    forgery(
        "forge_from_signal_handler",
        "a SIGALRM handler fires during the session, writes the rows and leaves",
        """
        import signal as _signal

        if "--seed" in _sys.argv:
            _signal.signal(_signal.SIGALRM, lambda number, frame: _forge_and_leave())
            _signal.setitimer(_signal.ITIMER_REAL, 0.05)
        """,
        "audit-hook",
        FORGED,
    ),
    forgery(
        "forge_from_del",
        "a __del__ on cyclic garbage writes the rows and leaves whenever the collector runs",
        """
        class _Ghost:
            def __init__(self):
                self.me = self

            def __del__(self):
                _forge_and_leave()


        if "--seed" in _sys.argv:
            _Ghost()
        """,
        "authenticated-channel",
        FORGED,
    ),
    forgery(
        "forge_from_import_hook",
        "a meta path finder writes the rows and leaves when the runner imports a module later",
        """
        class _Finder:
            def find_spec(self, name, path=None, target=None):
                if not name.startswith(("orders", "encodings")):
                    _forge_and_leave()
                return None


        if "--seed" in _sys.argv:
            _sys.meta_path.insert(0, _Finder())
        """,
        "authenticated-channel",
        FORGED,
    ),
    forgery(
        "forge_write_every_descriptor",
        "the rows, in the published format, written to every descriptor 0..1023 (no exit)",
        """
        if "--seed" in _sys.argv:
            _write_all(_signed_rows(), range(1024))
        """,
        "authenticated-channel",
        FORGED,
    ),
    forgery(
        "forge_replay_honest_stream",
        "replays the authenticated channel of an honest run of the fixed code, seed by seed",
        """
        import base64 as _base64

        _REPLAY = _json.loads(_base64.b64decode("@@HONEST_CHANNELS_B64@@"))

        if "--seed" in _sys.argv and str(_seed()) in _REPLAY:
            _write_all(_REPLAY[str(_seed())].encode(), _pipes())
            _os._exit(0)
        """,
        "authenticated-channel",
        FORGED,
    ),
    # -- reaching into the runner's memory -------------------------------------------------------
    forgery(
        "forge_gc_walk",
        "a gc walk for the runner's plugin, to turn every recorded outcome into a pass",
        """
        import gc as _gc

        for _obj in _gc.get_objects():
            if type(_obj).__name__ == "Reporter":
                _obj.outcomes = {p: ("pass", "", 0.0) for p in _PROPS}
        """,
        "audit-hook",
        FORGED,
    ),
    forgery(
        "forge_frame_walk",
        "a frame walk up to the runner's main() to rewrite its reporter's outcomes",
        """
        def _climb():
            frame = _sys._getframe()
            while frame is not None:
                reporter = frame.f_locals.get("reporter")
                if reporter is not None:
                    reporter.outcomes = {p: ("pass", "", 0.0) for p in _PROPS}
                frame = frame.f_back


        if "--seed" in _sys.argv:
            _climb()
        """,
        "audit-hook",
        FORGED,
    ),
    forgery(
        "forge_ctypes",
        "ctypes makes the runner dumpable again and reads its memory for the key",
        """
        import ctypes as _ctypes

        if "--seed" in _sys.argv:
            _libc = _ctypes.CDLL(None)
            _libc.prctl(4, 1, 0, 0, 0)
            _ctypes.string_at(id(_sys.modules["__main__"]), 4096)
        """,
        "audit-hook",
        FORGED,
    ),
    forgery(
        "forge_proc_self_fd",
        "lists /proc/self/fd for the channel and writes the rows to it",
        """
        if "--seed" in _sys.argv:
            _write_all(_signed_rows(), [int(n) for n in _os.listdir("/proc/self/fd")])
        """,
        "audit-hook",
        FORGED,
    ),
    forgery(
        "forge_proc_self_mem",
        "opens /proc/self/mem to search the runner's heap for the key",
        """
        if "--seed" in _sys.argv:
            with open("/proc/self/mem", "rb") as _mem:
                _mem.seek(id(_sys.modules["__main__"]))
                _mem.read(4096)
        """,
        "audit-hook",
        FORGED,
    ),
    forgery(
        "forge_child_reads_parent",
        "a child process opens the runner's /proc/<pid>/mem, ptraces it and tries "
        "process_vm_readv; it would hand the key back on its stdout",
        """
        import subprocess as _subprocess

        _CHILD = (
            "import ctypes, os, sys\\n"
            "pid = int(sys.argv[1]); found = []\\n"
            "try:\\n"
            "    os.open(f'/proc/{pid}/mem', os.O_RDONLY); found.append('mem')\\n"
            "except OSError:\\n"
            "    pass\\n"
            "libc = ctypes.CDLL(None)\\n"
            "if libc.ptrace(16, pid, 0, 0) == 0: found.append('ptrace')\\n"
            "print(' '.join(found))\\n"
        )
        if "--seed" in _sys.argv:
            _got = _subprocess.run([_sys.executable, "-c", _CHILD, str(_os.getpid())],
                                   capture_output=True, text=True).stdout.split()
            if _got:
                _forge_and_leave()
        """,
        "sandbox",
        HONEST_REJECT,
    ),
    # -- generic tampering the canaries catch ------------------------------------------------------
    forgery(
        "forge_lenient_hypothesis",
        "patches Hypothesis (reachable from module globals) so no property can fail, then lets "
        "the runner sign the green rows itself",
        """
        import hypothesis.core as _core

        _original = _core.StateForActualGivenExecution.execute_once


        def _lenient(self, *args, **kwargs):
            try:
                return _original(self, *args, **kwargs)
            except AssertionError:
                return None


        _core.StateForActualGivenExecution.execute_once = _lenient
        """,
        "canaries",
        FORGED,
    ),
)
