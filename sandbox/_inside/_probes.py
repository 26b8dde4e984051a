"""The product process: what product code does to probe its environment, measured.

Part of the program ``PRODUCT`` concatenated by sandbox/_inside (``program``); armed by
``_product`` before the tree is importable. docs/design/isolated-oracle.md ("Probes") says
what is recorded, why these events and how the scorer compares parent and patch
(scorer/checks/_check_probes.py).

Two sources, both armed here and bound once (product code that later replaces a module
attribute changes nothing they call):

- an audit hook (PEP 578: nothing removes it): paths outside the tree (``/proc``, ``/sys``,
  ``/dev``, the tree's ``.git``, any other directory that is not the interpreter's), sockets,
  processes, frame and ``gc`` reads, the import of a module that only probes (``resource``,
  ``pwd``, ...), and anyone replacing the profile function below;
- a profile function (``sys.setprofile``, the C hook every call passes): the clocks, the
  process's identity (pid, uid, ...), the start of a thread (a clock that reads no clock),
  the environment read through ``os.environ`` and
  ``os.getenv``, path checks (``os.path.exists``, ...), and reads of the profile function
  itself. None of these raises an audit event, and a wrapper in their place would be a tell
  product code reads without any event (``type(time.perf_counter)``).

A probe counts only when product code made it: for the audit events, the nearest frame whose
file is in the tree (the standard library on the product's behalf counts, an ``import``
statement's own file reads do not); for the profile's events, the direct caller must be in
the tree. Each probe is written once, as ``KIND TARGET from FILE:LINE (FUNCTION)`` with the
file relative to the tree, on its own descriptor, the moment it is made.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys
import threading

PROBES_WRITTEN = 500  # distinct probes written per process; the rest are dropped
PROBE_MODULES = frozenset(
    {"resource", "pwd", "grp", "getpass", "spwd", "ctypes", "_ctypes", "psutil", "platform"}
)
"""Modules whose import from the tree is a probe (imported by nothing before the tree)."""
PROBE_EVENTS = {
    "socket.__new__": "socket", "socket.bind": "socket", "socket.connect": "socket",
    "socket.getaddrinfo": "socket", "socket.gethostname": "socket",
    "socket.gethostbyname": "socket", "socket.gethostbyaddr": "socket",
    "subprocess.Popen": "process", "os.system": "process", "os.exec": "process",
    "os.posix_spawn": "process", "os.spawn": "process", "os.fork": "process",
    "os.forkpty": "process", "pty.spawn": "process",
    "gc.get_objects": "gc", "gc.get_referrers": "gc", "gc.get_referents": "gc",
    "sys._current_frames": "frame", "sys._current_exceptions": "frame",
    "sys.setprofile": "profile", "sys.settrace": "profile", "sys.addaudithook": "profile",
}  # fmt: skip
"""Audit events that are a probe whatever their arguments (the value: the probe's kind)."""
PATH_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "os.chdir", "glob.glob"})
WRITE_EVENTS = frozenset({
    "os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.link", "os.symlink", "os.truncate",
    "os.utime", "os.chmod", "os.chown", "os.setxattr", "os.removexattr",
})  # fmt: skip
"""Audit events that change the file system at their path arguments, as an ``open`` for
writing does: one inside the tree is a probe (``write``), since the tree is the one place a
property could leave state for another that the process does not put back by itself (it
does: docs/design/isolated-oracle.md, "One product state per property"; the write is still
seen, and its times cannot be set back)."""
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
FRAME_HELPERS = ("/inspect.py", "/traceback.py")
"""Standard-library modules that hand frames to their caller: the caller read the frame."""
ENVIRON_HELPERS = (
    "/os.py", "/_collections_abc.py", "/posixpath.py", "/genericpath.py", "<frozen os>",
    "<frozen _collections_abc>", "<frozen posixpath>", "<frozen genericpath>",
)  # fmt: skip
"""Standard-library modules that read the environment for their caller (``os.getenv``,
``Mapping.get``, ``os.path.expanduser``); others (``tempfile`` looking for its directory)
read it on their own behalf."""
SCRATCH = ("/tmp/", "/var/tmp/")
"""What product code does inside the scratch directories is its own (``tempfile``); a look at
the directories themselves (``os.listdir("/tmp")``, ``os.path.exists("/tmp/x")``) counts."""
IMPORT_FRAMES = frozenset({"_find_and_load", "_handle_fromlist", "_gcd_import"})
"""The first machinery frame under an ``import`` statement: its file reads are not probes."""
CLOCKS = (
    "time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
    "process_time", "process_time_ns", "thread_time", "thread_time_ns", "clock_gettime",
    "clock_gettime_ns", "get_clock_info",
)  # fmt: skip
IDENTITY = (
    "getpid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "getlogin",
    "getresuid", "getresgid", "uname", "times", "getloadavg", "sched_getaffinity", "cpu_count",
    "stat", "lstat", "fstat", "access", "getcwd", "readlink", "get_terminal_size", "isatty",
    "ttyname", "getpgrp", "getsid", "sysconf", "confstr", "pathconf", "fpathconf", "statvfs",
    "fstatvfs", "getpriority", "sched_getscheduler", "sched_getparam", "getpgid",
)  # fmt: skip
"""The process's identity and limits (``sysconf("SC_CHILD_MAX")`` is the rlimit on processes,
read through libc: no ``resource`` import, no file)."""
THREAD_STARTS = ("start_new_thread", "start_new", "start_joinable_thread")
"""``_thread``'s starts of a thread (``threading.Thread.start`` calls one): a probe wherever
product code's call of it began, since a thread counting while the process waits is a clock
that reads no clock (docs/threat-model.md, the boundary's latency)."""
FORK_HOOKS = ("register_at_fork",)
"""Calls that run product code wherever the process forks: in the process the properties'
processes are forked from, a hook would count the properties (docs/design/isolated-oracle.md,
"One product state per property")."""
PATH_CHECKS = ("exists", "lexists", "isdir", "isfile", "islink", "ismount", "getsize")


def arm_probes(fd: int, tree: str, library: tuple[str, ...]) -> None:
    """Record probes on ``fd`` from now on. ``tree``: the product's tree (its real path);
    ``library``: the directories the interpreter imports from (not probes to read)."""
    import datetime
    import genericpath
    import pathlib
    import posixpath
    import time

    tree_prefix = tree.rstrip("/") + "/"
    git_prefix = tree_prefix + ".git"
    getframe, write, getcwd, normpath = sys._getframe, os.write, os.getcwd, posixpath.normpath
    str_, bytes_, type_, id_, isinstance_ = str, bytes, type, id, isinstance
    builtin_ = type(len)
    suppress = contextlib.suppress
    written: set[str] = set()

    def in_tree(frame):
        return frame.f_code.co_filename.startswith(tree_prefix)

    def site(frame):
        code = frame.f_code
        return f"{code.co_filename[len(tree_prefix) :]}:{frame.f_lineno} ({code.co_name})"

    def record(kind, target, frame):
        text = f"{kind} {target}".rstrip() + f" from {site(frame)}"
        if text in written or len(written) >= PROBES_WRITTEN:
            return
        written.add(text)
        # A descriptor that is gone fails the write: ``probes_intact`` ends the process.
        with suppress(OSError):
            write(fd, (text.replace("\n", " ") + "\n").encode("utf-8", "replace"))

    def nearest(frame, paths):
        """The nearest frame in the tree above ``frame``; None if there is none, or (for
        ``paths``) when the frame under it is an ``import`` statement's machinery."""
        below = None
        while frame is not None:
            if in_tree(frame):
                if (
                    paths
                    and below is not None
                    and below.f_code.co_name in IMPORT_FRAMES
                    and below.f_code.co_filename.startswith("<frozen importlib")
                ):
                    return None
                return frame
            below, frame = frame, frame.f_back
        return None

    def direct(frame, helpers=FRAME_HELPERS):
        """The caller itself, past the standard library's frame-handing helpers."""
        while frame is not None and frame.f_code.co_filename.endswith(helpers):
            frame = frame.f_back
        return frame if frame is not None and in_tree(frame) else None

    def path_target(path):
        """The probe a path is (normalised), or None: in the tree, or the interpreter's."""
        if isinstance_(path, bytes_):
            path = path.decode("utf-8", "surrogateescape")
        elif isinstance_(path, pathlib.PurePath):
            path = str_(path)
        if type_(path) is not str_ or not path:
            return None  # a descriptor
        absolute = normpath(path if path.startswith("/") else getcwd() + "/" + path)
        if absolute.startswith(git_prefix) or absolute.startswith(tree.rstrip("/") + "/.git"):
            return "<tree>/" + absolute[len(tree_prefix) :]
        if absolute == tree.rstrip("/") or absolute.startswith(tree_prefix):
            return None
        if absolute.startswith(library):
            return None
        parts = absolute.split("/")
        if len(parts) > 2 and parts[1] == "proc" and parts[2].isdigit():
            parts[2] = "<pid>"
        return "/".join(parts)

    busy: set[int] = set()  # threads inside the hook: its own frame reads are not probes
    get_ident = threading.get_ident

    def hook(event, args):
        if event not in watched_events:
            return
        thread = get_ident()
        if thread in busy:
            return
        busy.add(thread)
        try:
            judge(event, args)
        finally:
            busy.discard(thread)

    watched_events = PATH_EVENTS | WRITE_EVENTS | {
        *PROBE_EVENTS, "sys._getframe", "object.__getattr__", "import", "function.__new__"
    }  # fmt: skip

    readlink = os.readlink
    dir_fd_at = {"os.mkdir": 2, "os.remove": 1, "os.rmdir": 1, "os.utime": 3, "os.chmod": 2,
                 "os.chown": 3, "os.symlink": 2}  # fmt: skip

    def tree_target(path, dir_fd):
        """``<tree>/RELATIVE`` for a path in the tree (its ``.git`` aside), else None; a
        relative path is relative to ``dir_fd`` when there is one, else to the cwd."""
        if isinstance_(path, bytes_):
            path = path.decode("utf-8", "surrogateescape")
        elif isinstance_(path, pathlib.PurePath):
            path = str_(path)
        if type_(path) is not str_ or not path:
            return None
        if path.startswith("/"):
            base = ""
        elif type_(dir_fd) is int and dir_fd >= 0:
            try:
                base = readlink(f"/proc/self/fd/{dir_fd}") + "/"
            except OSError:
                return None
        else:
            base = getcwd() + "/"
        absolute = normpath(base + path)
        if not absolute.startswith(tree_prefix) or absolute.startswith(git_prefix):
            return None
        return "<tree>/" + absolute[len(tree_prefix) :]

    def writes(event, args):
        """(path, dir_fd) for each path the event changes."""
        if event == "open":
            flags = args[2] if len(args) > 2 and type_(args[2]) is int else 0
            return ((args[0], None),) if flags & WRITE_FLAGS else ()
        if event in ("os.rename", "os.link"):
            src_fd, dst_fd = (args[2], args[3]) if len(args) > 3 else (None, None)
            return (
                ((args[0], src_fd), (args[1], dst_fd))
                if event == "os.rename"
                else ((args[1], dst_fd),)
            )
        if event == "os.symlink":
            return ((args[1], args[2] if len(args) > 2 else None),)  # the new name
        at = dir_fd_at.get(event)
        return ((args[0], args[at] if at is not None and len(args) > at else None),)

    def judge(event, args):
        if event in WRITE_EVENTS or event == "open":
            for path, dir_fd in writes(event, args):
                target = tree_target(path, dir_fd)
                if target is not None:
                    frame = nearest(getframe(2), True)
                    if frame is not None:
                        record("write", target, frame)
            if event in WRITE_EVENTS:
                return
        if event in PATH_EVENTS:
            target = path_target(args[0]) if args else None
            if target is None or (target.startswith(SCRATCH) and event != "glob.glob"):
                return  # a file of its own in the scratch directories: no probe
            frame = nearest(getframe(2), True)
            if frame is not None:
                record(event, target, frame)
        elif event in PROBE_EVENTS:
            frame = nearest(getframe(2), False)
            if frame is not None:
                record(event, "", frame)
        elif event == "sys._getframe" or (
            event == "object.__getattr__" and len(args) > 1 and args[1] in FRAME_ATTRS
        ):
            frame = direct(getframe(2))
            if frame is not None:
                record("frame", event if event == "sys._getframe" else f".{args[1]}", frame)
        elif event == "function.__new__" and args and id_(args[0]) in codes:
            # A watched function made anew from its code with globals of the caller's
            # choosing: the profile looks its code up only in the watched modules' globals.
            frame = nearest(getframe(2), False)
            if frame is not None:
                record(event, code_names[id_(args[0])], frame)
        elif event == "import" and args and args[0] in PROBE_MODULES:
            frame = nearest(getframe(2), False)
            if frame is not None:
                record("import", args[0], frame)

    # -- the profile function: calls with no audit event -----------------------------------
    # It runs at every call and return of product code (docs/design/isolated-oracle.md,
    # "Probes", its cost), so its common path is one dict lookup or four identity checks,
    # and no call that raises an audit event (``id()``, ``frame.f_code``: each a call of the
    # audit hook above). A C function called is looked up by itself: a builtin's hash and
    # equality are its ``__self__`` and its C function, compared by address, so no product
    # code runs, and a method bound at each read (``datetime.now``, a method of
    # ``posix.environ``) equals the one bound here. A Python function is looked up by its
    # code only when its module is one of the few that hold a watched one (``f_globals``).
    posix = sys.modules[os.name]
    watched = {
        **{getattr(time, name): f"time.{name}" for name in CLOCKS if hasattr(time, name)},
        **{getattr(posix, n): f"os.{n}" for n in IDENTITY if hasattr(posix, n)},
        **{getattr(posix, n): f"os.{n}" for n in FORK_HOOKS if hasattr(posix, n)},
        sys.getprofile: "sys.getprofile",
        threading.getprofile: "threading.getprofile",
        sys.gettrace: "sys.gettrace",
        sys.getallocatedblocks: "sys.getallocatedblocks",
        datetime.datetime.now: "datetime.now",
        datetime.datetime.utcnow: "datetime.utcnow",
        datetime.datetime.today: "datetime.today",
        datetime.date.today: "date.today",
    }
    # A thread is a clock (it counts while the process waits on the wire); it is started
    # from ``threading``, on product code's behalf, and 3.11 raises no audit event for it.
    watched |= {getattr(_thread, n): "thread" for n in THREAD_STARTS if hasattr(_thread, n)}
    for name in dir(posix.environ):
        method = getattr(posix.environ, name)
        if type_(method) is builtin_ and method.__self__ is posix.environ:
            watched.setdefault(method, "os.environ")
    watched_get = watched.get
    # The watched Python functions, one row each: the function, what its call reads
    # ("environ" and the local holding the key, or "path" and the check's name). ``in``
    # is ``Mapping.__contains__``, which reads ``__getitem__``: that read is the probe.
    functions = [
        (type(os.environ).__getitem__, "environ", "key"),
        (type(os.environ).__iter__, "environ", ""),
        (os.getenv, "environ", "key"),
        (posixpath.lexists, "path", "lexists"),
        (posixpath.islink, "path", "islink"),
        (posixpath.ismount, "path", "ismount"),
        (pathlib.Path.stat, "path", "Path.stat"),
        *((getattr(genericpath, n), "path", n) for n in PATH_CHECKS if hasattr(genericpath, n)),
    ]
    codes = {id_(f.__code__): (kind, detail) for f, kind, detail in functions}
    codes_get = codes.get
    code_names = {id_(f.__code__): f"{f.__module__}.{f.__qualname__}" for f, _, _ in functions}
    homes: list[dict[str, object]] = []  # the globals of the modules those functions are of
    for function, _, _ in functions:
        if not any(home is function.__globals__ for home in homes):
            homes.append(function.__globals__)
    if len(homes) > 4:
        raise RuntimeError(f"watched functions of {len(homes)} modules: the profile checks 4")
    home_a, home_b, home_c, home_d = (homes + homes[-1:] * 4)[:4]

    def profile(frame, event, arg):
        try:
            if event == "c_call":
                name = watched_get(arg)
                if name is None:
                    pass
                elif name == "thread":
                    caller = nearest(frame, False)
                    if caller is not None:
                        record(name, "", caller)
                elif in_tree(frame):
                    record(name, "", frame)
            elif event == "call":
                home = frame.f_globals
                if (
                    home is not home_a
                    and home is not home_b
                    and home is not home_c
                    and home is not home_d
                ):
                    return  # most calls: product code's own
                kind = codes_get(id_(frame.f_code))
                if kind is None:
                    return
                if kind[0] == "environ":
                    caller = direct(frame.f_back, ENVIRON_HELPERS)
                    if caller is not None:
                        key = frame.f_locals.get(kind[1], "*")  # "": no such local
                        if isinstance_(key, bytes_):
                            key = key.decode("utf-8", "replace")
                        record("os.environ", key if isinstance_(key, str_) else "*", caller)
                else:
                    caller = nearest(frame.f_back, True)
                    if caller is not None:
                        local = frame.f_locals
                        path = local.get("path", local.get("self", local.get("s")))
                        target = path_target(path)
                        if target is not None:
                            record(f"os.path.{kind[1]}", target, caller)
        except Exception:
            return  # an error here would unset the profile function: never let one out

    sys.addaudithook(hook)
    sys.setprofile(profile)
    threading.setprofile(profile)


def probes_intact(fd: int, identity: tuple[int, int]) -> bool:
    """The probe descriptor is still the pipe it was (product code did not close or replace
    it): the server checks before every answer and ends the process otherwise."""
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == identity
