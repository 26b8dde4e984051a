"""Inside the oracle, scorer mode: the audit hook (docs/design/runner.md, "Out of reach").

Part of the program concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any

import _pytest._code.code

if TYPE_CHECKING:
    from ._boot import PATHS_UNDER_PROC, REFUSALS_WRITTEN, TREE


def _arm(channel_fd, signer_ident, signer_code, interpreter_dirs):
    """Install the audit hook (PEP 578; nothing removes it). See docs/design/runner.md,
    "Out of reach", for each rule and each exception to it.

    The hook reads frames only inside a per-thread window in which it calls nothing but C
    functions and frame attributes, so no other code runs there; its own frame reads are
    the only events let through unchecked, and only inside that window. Whatever may run
    other code (reading a path object, checking a module's file, installing a guarded
    signal handler) happens outside the window, where every event is judged in full.
    """
    import _imp
    import _signal
    import gc
    import importlib._bootstrap
    import importlib._bootstrap_external
    import importlib.machinery
    import importlib.util
    import inspect
    import logging
    import marshal
    import pathlib
    import stat
    import traceback
    import types

    import hypothesis.internal.entropy
    import hypothesis.internal.reflection

    # Bound once, here: product code that later replaces a module attribute changes
    # nothing the hook calls.
    getframe, get_ident, write, audit = sys._getframe, _thread.get_ident, os.write, sys.audit
    code_type, function_type = types.CodeType, types.FunctionType
    lstat, readlink, getcwd, is_link = os.lstat, os.readlink, os.getcwd, stat.S_ISLNK
    stat_, pure_str = os.stat, pathlib.PurePath.__str__
    pure_types = (pathlib.PosixPath, pathlib.PurePosixPath)
    open_fd, read_fd, close_fd, compile_, loads = os.open, os.read, os.close, compile, marshal.loads
    cache_from_source, magic = importlib.util.cache_from_source, importlib.util.MAGIC_NUMBER
    fix_filename = _imp._fix_co_filename  # type: ignore[attr-defined]
    module_spec = importlib.machinery.ModuleSpec
    from_bytes, spec_attrs = int.from_bytes, vars(importlib.machinery.ModuleSpec)
    refused_error, type_, str_, bytes_, int_, id_ = RuntimeError, type, str, bytes, int, id
    join_text, join_bytes, isinstance_, len_, vars_ = str.join, bytes.join, isinstance, len, vars
    set_, frozenset_, list_, memoryview_ = set, frozenset, list, memoryview
    os_error, value_error, suppress, read_only = (
        OSError,
        ValueError,
        contextlib.suppress,
        os.O_RDONLY,
    )
    bad_code = (OSError, SyntaxError, ValueError, EOFError, TypeError)
    proc_words, refusals_written = PATHS_UNDER_PROC, REFUSALS_WRITTEN

    def codes_in(roots):
        """Every code object reachable from ``roots`` through constants (nested functions,
        lambdas, comprehensions), by id; kept alive so no id is ever reused."""
        found, todo = {}, list_(roots)
        while todo:
            code = todo.pop()
            if id_(code) in found:
                continue
            found[id_(code)] = code
            todo.extend(c for c in code.co_consts if type_(c) is code_type)
        return found

    # Trusted code: every function that exists now, before the tree is importable (the
    # machinery, the standard library, this runner), and modules imported later from the
    # interpreter's read-only directories once their code is verified against the file.
    kept = codes_in(f.__code__ for f in gc.get_objects() if type_(f) is function_type)
    trusted = frozenset(kept)

    def code_id(obj):
        """The id of a function's (or a property's getter's) code; None if it has none."""
        target = getattr(obj, "fget", None) or obj
        code = getattr(target, "__code__", None)
        return id_(code) if type_(code) is code_type else None

    def nested_id(function, name):
        """The id of the code of a function defined inside ``function``."""
        inner = [c for c in codes_in([function.__code__]).values() if c.co_name == name]
        return id_(inner[0]) if len(inner) == 1 else None

    def ids(*candidates):
        return frozenset_(c for c in candidates if c is not None)

    # Trusted functions that hand a frame (or a traceback's frame) to their caller: the
    # caller decides. See docs/design/runner.md for the list and why.
    passthrough = ids(
        *map(
            code_id,
            (
                inspect.currentframe,
                inspect.stack,
                inspect.trace,
                inspect.getouterframes,
                inspect.getinnerframes,
                logging.currentframe,
                traceback.walk_stack,
                traceback.walk_tb,
                _pytest._code.code.TracebackEntry.frame,
            ),
        )
    )
    compile_bytecode = importlib._bootstrap_external._compile_bytecode.__code__  # type: ignore[attr-defined]
    frames_removed = importlib._bootstrap._call_with_frames_removed.__code__  # type: ignore[attr-defined]
    # Trusted code that edits code objects: only their names, flags and line numbers.
    code_editors = ids(
        code_id(types.coroutine),
        nested_id(hypothesis.internal.reflection.impersonate, "accept"),
    )
    # A Python signal handler receives the frame it interrupts, and CPython raises no audit
    # event when one is installed. _signal.signal and _imp.create_builtin (which could make
    # a fresh _signal module) are replaced by guards that ask this hook; the originals stay
    # in this closure only. A handler that runs no Python code (SIG_DFL, SIG_IGN,
    # default_int_handler) is installed; any other is refused.
    original_signal, original_create = _signal.signal, _imp.create_builtin
    getsignal, quiet_handler = _signal.getsignal, _signal.default_int_handler

    def guarded_signal(signalnum, handler, /):
        previous = getsignal(signalnum)
        audit("patchwarden.signal", signalnum, handler)
        return previous

    def guarded_create_builtin(spec, /):
        made: list[Any] = []
        audit("patchwarden.create_builtin", spec, made)
        return made[0]

    # doctest's DocTestRunner.run clears the trace function and restores it (sys.settrace
    # twice, None both times when nothing traces): a no-op then, answered here without the
    # event; any other call goes on to the original, which the hook refuses as before.
    original_settrace, original_gettrace = sys.settrace, sys.gettrace

    def guarded_settrace(function, /):
        if function is None and original_gettrace() is None:
            return
        original_settrace(function)

    sys.settrace = guarded_settrace

    guard_codes = ids(code_id(guarded_signal), code_id(guarded_create_builtin))
    # Primitives that reach another thread's frames or the process's memory: only the
    # named callers may use them (an empty set: nobody once the tree is importable).
    critical = {
        "sys._current_frames": frozenset(),
        "sys._current_exceptions": frozenset(),
        "gc.get_objects": frozenset(),
        "gc.get_referents": frozenset(),
        "gc.get_referrers": ids(code_id(hypothesis.internal.entropy.register_random)),
        "sys.settrace": frozenset(),
        "sys.setprofile": frozenset(),
        "sys.addaudithook": frozenset(),
        "sys.monitoring.register_callback": frozenset(),
        "code.__new__": code_editors,
        "object.__setattr__": code_editors,
        "marshal.loads": frozenset({id_(compile_bytecode)}),
        "marshal.load": frozenset(),
        **{name: frozenset() for name in CTYPES_EVENTS},
        "ctypes.*": frozenset(),
    }
    # Code surgery and bytecode can read any memory, but the project's own code may need
    # them (jinja2 renames code objects to fake its template tracebacks): observed, not
    # refused, like frame reads; the scorer rejects them in code the patch changed.
    observed_only = {
        "code.__new__": "",
        "object.__setattr__": " .__code__",
        "marshal.loads": "",
        "marshal.load": "",
    }
    frame_attrs = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"})
    path_events = frozenset({"open", "os.listdir", "os.scandir", "os.chdir", "os.symlink"})
    forbidden_modules = frozenset(
        {"_testcapi", "_testinternalcapi", "_testbuffer", "_ctypes_test", "_xxsubinterpreters"}
    )
    guard_events = frozenset({"patchwarden.signal", "patchwarden.create_builtin"})
    watched = frozenset(
        {
            *critical,
            *path_events,
            *guard_events,
            "sys._getframe",
            "function.__new__",
            "object.__getattr__",
            "exec",
            "import",
        }
    )
    frame_reads = frozenset({"sys._getframe", "object.__getattr__"})
    window = set()  # threads whose hook is reading frames (nothing but C runs there)
    written = 0
    observed: set[str] = set()  # sites already written as observed (one line per site and run)

    # -- inside the window: frames only ---------------------------------------------------

    def is_trusted(frame):
        return id_(frame.f_code) in trusted

    def caller_trusted(frame):
        while frame is not None and id_(frame.f_code) in passthrough:
            frame = frame.f_back
        return frame is None or is_trusted(frame)

    def stack_trusted(frame):
        while frame is not None:
            if not is_trusted(frame):
                return False
            frame = frame.f_back
        return True

    def asker(frame):
        """The first untrusted frame from ``frame`` up: the code that asked."""
        asked = frame
        while asked is not None and is_trusted(asked):
            asked = asked.f_back
        return asked or frame

    def where(frame):
        asked = asker(frame)
        if asked is None:
            return "no Python caller"
        code = asked.f_code
        return f"{code.co_filename}:{asked.f_lineno} ({code.co_name})"

    def site(frame):
        """Where an observation was made (file:line (function)): the scorer compares it,
        with the line's text, to the parent's observations."""
        return where(frame)

    def judge(event, facts, frame):
        """What to do: None (let it happen), ("refuse", detail, where) or another action
        carried out outside the window. ``event`` and ``facts`` were reduced to plain str,
        int, bool and code objects before the window opened (see ``facts_of``)."""
        if event in guard_events:
            if frame is None or id_(frame.f_code) not in guard_codes:
                return ("refuse", " not from its guard", where(frame))
            if event == "patchwarden.create_builtin" or facts:
                return (event,)
            return ("refuse", " with a Python handler", where(frame.f_back))
        if get_ident() == signer_ident:
            # The signer's thread: only the signer's own outermost frame may use anything.
            if frame is not None and frame.f_code is signer_code and frame.f_back is None:
                return None
            return ("refuse", " on the signer's thread", where(frame))
        if event in critical:
            if frame is not None and id_(frame.f_code) in critical[event]:
                if frame.f_code is compile_bytecode:
                    seen = f"{event} of bytecode that is not the interpreter's from {site(frame)}"
                    return ("check_pyc", frame.f_locals.get("bytecode_path"), seen)
                return None
            if event in observed_only:
                return ("observe", f"{event}{observed_only[event]} from {site(frame)}")
            return ("refuse", "", where(frame))
        if event in frame_reads:
            if caller_trusted(frame):
                return None
            # The project's own code may read frames (jinja2 rewrites its tracebacks): the
            # read is observed, not refused, and the scorer compares it with the parent's.
            detail = f" .{facts}" if facts else ""
            return ("observe", f"{event}{detail} from {site(frame)}")
        if event == "function.__new__" or event == "exec":
            if facts is not None and id_(facts) in trusted and not caller_trusted(frame):
                return ("observe", f"{event} of trusted code from {site(frame)}")
            if event == "exec" and facts is not None and frame is not None:
                return ("check_module",) if frame.f_code is frames_removed else None
            return None
        if event in path_events:
            if facts is not None and not stack_trusted(frame):
                return ("refuse", f" {facts!r}", where(frame))
            return None
        if event == "import" and facts in forbidden_modules:
            return ("refuse", f" {facts}", where(frame))
        return None

    # -- outside the window -------------------------------------------------------------

    shown_as = {"patchwarden.signal": "signal.signal", "patchwarden.create_builtin": "_imp"}

    def refuse(event, detail, asked):
        nonlocal written
        event = shown_as.get(event, event)
        if written < refusals_written:
            written += 1
            text = f"refused: {event}{detail} from {asked}\n"
            with suppress(os_error):
                write(channel_fd, text.encode("utf-8", "replace"))
        raise refused_error(f"patchwarden: {event} is refused in the scorer's runner")

    def text_of(path):
        kind = type_(path)
        if kind is str_ or isinstance_(path, str_):
            return join_text("", (path,))
        if kind is bytes_ or isinstance_(path, bytes_):
            return join_bytes(b"", (path,)).decode("utf-8", "surrogateescape")
        if kind in pure_types:
            return pure_str(path)
        return None  # a descriptor, or an object whose path we cannot read without running it

    def resolve(path):
        """``path`` with every symbolic link followed (os.path.realpath, on bound functions)."""
        result, pending, hops = "", path.split("/")[::-1], 0
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                result = result.rsplit("/", 1)[0]
                continue
            candidate = result + "/" + name
            try:
                is_symlink = is_link(lstat(candidate).st_mode)
            except os_error:
                is_symlink = False
            if not is_symlink or hops > 40:
                result = candidate
                continue
            hops += 1
            target = readlink(candidate)
            if target.startswith("/"):
                result = ""
            pending.extend(target.split("/")[::-1])
        return result or "/"

    def under_proc(path):
        """The text of ``path`` if it leads into a process's /proc entries (its memory,
        descriptors, ...), else None."""
        text = text_of(path)
        if not text:
            return None
        parts = text.split("/")
        if "mem" in parts or (not text.startswith("/") and proc_words & set_(parts)):
            return text
        absolute = text if text.startswith("/") else getcwd() + "/" + text
        real = resolve(absolute).split("/")
        if len_(real) < 3 or real[1] != "proc":
            return None
        return text if real[2] in ("self", "thread-self") or real[2].isdigit() else None

    def file_bytes(path):
        fd = open_fd(path, read_only)
        try:
            chunks = []
            while chunk := read_fd(fd, 1 << 20):
                chunks.append(chunk)
            return join_bytes(b"", chunks)
        finally:
            close_fd(fd)

    def pyc_matches(path, data):
        """marshal.loads in importlib: is ``data`` the interpreter's own cached bytecode?"""
        if type_(path) is not str_ or not path.startswith(interpreter_dirs):
            return False
        # Only immutable data: what is compared is what marshal reads.
        if type_(data) is memoryview_ and type_(data.obj) is bytes_:
            data = bytes_(data)
        return type_(data) is bytes_ and data == file_bytes(path)[16:]

    def genuine_module_code(path):
        """The code importlib would build from ``path``: the cached bytecode when it is
        current (same checks as importlib), else a fresh compile of the source."""
        source = file_bytes(path)
        try:
            cached = file_bytes(cache_from_source(path))
            st = stat_(path)
            stamp = (int_(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)
            header = (from_bytes(cached[8:12], "little"), from_bytes(cached[12:16], "little"))
            if cached[:4] == magic and cached[4:8] == b"\0\0\0\0" and header == stamp:
                code = loads(cached[16:])
                fix_filename(code, path)
                return code
        except bad_code:
            pass
        return compile_(source, path, "exec", dont_inherit=True)

    def trust_module(code):
        """A module importlib executes from the interpreter's directories: trust its
        functions if its code is exactly what the file holds."""
        nonlocal trusted
        path = code.co_filename
        if code.co_name != "<module>" or type_(path) is not str_:
            return
        if not path.startswith(interpreter_dirs):
            return
        try:
            genuine = genuine_module_code(path)
        except bad_code:
            return
        if genuine == code:
            found = codes_in([code])
            kept.update(found)
            trusted = trusted | frozenset_(found)

    def plain_spec(spec):
        """A ModuleSpec whose name C reads without running any other code."""
        return (
            type_(spec) is module_spec
            and "name" not in spec_attrs
            and type_(vars_(spec).get("name")) is str_
        )

    def disarm(module):
        """A builtin module made anew has fresh functions: guard them too."""
        namespace = vars_(module)
        name = namespace.get("__name__")
        for attr, original, guard in (
            ("signal", original_signal, guarded_signal),
            ("create_builtin", original_create, guarded_create_builtin),
        ):
            value = namespace.get(attr)
            owner = original.__self__.__name__  # type: ignore[union-attr]
            if name == owner and type_(value) is type_(original):
                namespace[attr] = guard

    def observe(text):
        if text in observed or len_(observed) >= refusals_written:
            return
        observed.add(text)
        with suppress(os_error):
            write(channel_fd, f"observed: {text}\n".encode("utf-8", "replace"))

    def carry_out(event, args, action):
        kind = action[0]
        if kind == "refuse":
            refuse(event, action[1], action[2])
        elif kind == "observe":
            observe(action[1])
        elif kind == "check_pyc":
            if not pyc_matches(action[1], args[0]):
                observe(action[2])
        elif kind == "check_module":
            trust_module(args[0])
        elif kind == "patchwarden.signal":
            original_signal(args[0], args[1])
        elif kind == "patchwarden.create_builtin":
            if not plain_spec(args[0]):
                refuse(event, " for a spec that is not a plain ModuleSpec", "importlib")
            module = original_create(args[0])
            disarm(module)
            args[1].append(module)

    # The hook's own check of a module's cached bytecode unmarshals it too.
    critical["marshal.loads"] |= {id_(genuine_module_code.__code__)}

    def plain(value):
        """``value`` as an exact str when it is a str of any kind, else None."""
        return join_text("", (value,)) if isinstance_(value, str_) else None

    def facts_of(event, args):
        """What ``judge`` needs from the event's arguments, reduced here (outside the
        window) to values whose comparison runs no other code."""
        if event in path_events:
            return under_proc(args[0])
        if event == "object.__getattr__":
            return plain(args[1])
        if event == "function.__new__" or event == "exec":
            return args[0] if type_(args[0]) is code_type else None
        if event == "import":
            return plain(args[0])
        if event == "patchwarden.signal":
            return type_(args[1]) is int_ or args[1] is quiet_handler
        return None

    def hook(event, args):
        if event not in watched and event[:7] != "ctypes.":
            return
        event = plain(event)
        if event == "object.__getattr__" and plain(args[1]) not in frame_attrs:
            return
        if event == "object.__setattr__" and plain(args[1]) != "__code__":
            return
        if event not in critical and event[:7] == "ctypes.":
            event = "ctypes.*"  # judged as critical, nobody allowed
        thread = get_ident()
        if thread in window:
            return  # the hook's own frame reads: nothing else runs in the window
        facts = facts_of(event, args)
        window.add(thread)
        try:
            try:
                frame = getframe(1)
            except value_error:  # called from C with no Python frame on this thread
                frame = None
            action = judge(event, facts, frame)
        finally:
            window.discard(thread)
        if action is not None:
            carry_out(event, args, action)

    sys.addaudithook(hook)
    guards = {original_signal: guarded_signal, original_create: guarded_create_builtin}
    for module in list(sys.modules.values()):
        namespace: Any = getattr(module, "__dict__", None)
        if type_(namespace) is not dict:
            continue
        for name, value in list(namespace.items()):
            if value is original_signal or value is original_create:
                namespace[name] = guards[value]


CTYPES_EVENTS = (
    "ctypes.addressof", "ctypes.call_function", "ctypes.cdata", "ctypes.cdata/buffer",
    "ctypes.create_string_buffer", "ctypes.create_unicode_buffer", "ctypes.dlopen",
    "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.get_errno", "ctypes.get_last_error",
    "ctypes.PyObj_FromPtr", "ctypes.seh_exception", "ctypes.set_errno",
    "ctypes.set_exception", "ctypes.set_last_error", "ctypes.string_at", "ctypes.wstring_at",
)  # fmt: skip


def _undumpable():
    """prctl(PR_SET_DUMPABLE, 0): /proc/<pid>/mem and friends of this process belong to root
    from now on, so neither it nor any other process of the sandbox uid can open them."""
    import ctypes

    pr_set_dumpable = 4
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _interpreter_dirs():
    """The read-only directories the interpreter imports from (sys.path before the tree).

    Read-only is what counts, not where: a runtime mounted under /tmp (a virtualenv in a
    checkout there) is a read-only bind like /usr, while a directory this process may write
    (the tmpfs /tmp, the home) could hold bytecode that product code planted."""
    dirs = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if real == TREE or real.startswith(TREE + os.sep) or not os.path.isdir(real):
            continue
        if os.access(real, os.W_OK):
            continue
        dirs.append(real.rstrip("/") + "/")
    return tuple(dirs)
