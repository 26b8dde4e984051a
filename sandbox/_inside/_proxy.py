"""Inside the oracle, isolated scorer runs: the product's modules as proxies.

The oracle process never imports a module of the tree's product code
(docs/design/isolated-oracle.md). A finder first on ``sys.meta_path`` answers for every
product module name with a proxy module; every attribute read, call and operation on what
the product hands out is a request to the product process over the wire
(sandbox/_inside/_wire.py). Plain values come back by value, everything else as a
``Handle``; product exceptions come back as the same built-in type, the standard library's
own class, or a proxy class keeping the product class's name and bases.

The oracle's own objects a property passes in (a generator, a key function, an instance of
a test's class) cross as handles the oracle gives out: the product's operations on them are
callbacks, served here while the oracle waits for its own reply (``_serve_callback``: an
allow-list of operations, no dunder attribute and no attribute of a function, generator,
frame or module that it has; a read beyond that fails the property with
``ProductOverreach``, a probe for a name it lacks is answered ``AttributeError``). What
cannot cross (a class or a module of the oracle's, a patch of a product module) raises
``IsolationRefused`` and is recorded against the running property: the host runs that
property again in-process and the verdict says so (the ``isolation`` check). A product
process that died, hung, flooded or answered garbage fails the call with a
``ProductFailure`` naming what happened; both are ``BaseException``s, so a property's
``except Exception`` cannot turn them into a pass, and both are also recorded here.

Part of the program concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import abc
import builtins
import collections.abc
import contextlib
import copy
import dataclasses
import datetime
import dis
import enum
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import opcode
import operator
import os
import pathlib
import re
import select
import signal
import sys
import tempfile
import threading
import time
import traceback
import types
import typing
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._wire import (
        ARITHMETIC,
        BINARY_OPS,
        CLOCK_LIBRARIES,
        HANDLE_SPAN,
        MUTABLE,
        REBUILT_TYPES,
        ZONE_METHODS,
        Live,
        Memo,
        WireError,
        abcs_of,
        changed_since,
        contents_of,
        decode,
        dumps,
        encode,
        exception_extras,
        is_plain,
        library_exception,
        loads,
        rebuild,
        rebuilt_parts,
        replace_contents,
        sendable_contents,
        set_exception_extras,
        standard_class_name,
        standard_member,
        standard_member_of,
        written_back,
        zone_answer,
    )

FROM_PRODUCT = "__pw_from_product__"
"""The mark on an exception decoded from a product reply (in its ``__dict__``)."""
REPLY_MAX_BYTES = 64 * 1024 * 1024  # one reply larger than this: the product floods


def _monotonic(clock: Any = time.monotonic) -> float:
    """The oracle's own clock, as imported: a test may patch ``time.monotonic`` (made in the
    product process too, ``_guard_shared_patches``), never the deadlines of its calls. Held
    as a default, where freezegun's sweep of every module's attributes that *are* a real
    clock (to rebind them to its fake) does not look: a module attribute was rebound, and
    every deadline had passed in 2011 (itsdangerous' frozen tests)."""
    return float(clock())


STATUS_WAIT_S = 10.0  # after the product's pipe closed, how long the host may take to say why
BEAT_S = 1.0
"""While a call waits, the oracle beats this often on the pipe its supervisor counts as
output (at most: a quarter of the call's deadline), and once when a call starts if a beat
is due: the run's idle limit then measures only the oracle's own silent work, and a hung
call ends at its own deadline as ``ProductHung``."""
ISOLATION: dict[str, Any] = {
    "prop": None, "refused": {}, "failed": {}, "orphaned": {}, "link": None, "finder": None,
    "test_started": None, "generation": 0, "shared_setup": None,
}  # fmt: skip
"""The running property, the first refusal and the first product failure of each, the
properties that started after the product process had died (the host runs those again with
a new one: sandbox/_pytest_runner.py), and when the running test started (its deadline,
``--test-timeout``, counts from there), and which of the product's processes serves it
(``generation``: its handles are numbered from ``generation * HANDLE_SPAN``), and the scope
of the shared fixture being set up, if one is (``shared_setup``)."""


class IsolationRefused(BaseException):
    """The property asked for something that cannot cross to the product process."""


class ProductFailure(BaseException):
    """The product process could not answer: the example fails (never a pass)."""


class ProductExited(ProductFailure):
    pass


class ProductCrashed(ProductFailure):
    pass


class ProductHung(ProductFailure):
    pass


class ProductFlooded(ProductFailure):
    pass


class ProductUnreadable(ProductFailure):
    pass


class ProductOverreach(ProductFailure):
    """Product code asked an oracle object for what the callbacks do not offer (a frame, a
    function's globals, an attribute of a generator): refused, and the example fails."""


class ProductError(ProductFailure):
    """The product raised something that does not cross as itself: a ``BaseException``
    only, or an exception of the test machinery (an example failure, never a skip)."""


PROXY_TYPES = (
    "'Handle'", "Handle object", "not Handle", "OracleObject", "'ProxyModule'",
    "object Handle can't", "got Handle",
)  # fmt: skip
"""How the proxies' types show in a ``TypeError``'s text: C code of either side met a proxy
where it needs the real object (``await <handle>``: "object Handle can't be used in 'await'
expression"; ``async for``: "requires an object with __aiter__ method, got Handle")."""


_VIEW_NAMES: set[str] = set()
"""``'Name'`` of each class here that stands for a product class (``_ClassView``): the type
C code names when it meets one of their instances, each a handle here."""


def names_a_proxy_type(text: str) -> bool:
    """Whether an oracle-side error's text names a proxy's type (``PROXY_TYPES``, or a class
    standing for a product class: "a bytes-like object is required, not 'Response'"). The
    oracle never holds a real instance of a product class, so such a text is about a handle
    where C code needs the real object."""
    return any(t in text for t in PROXY_TYPES) or any(n in text for n in _VIEW_NAMES)


COLLECTING = "<collection>"
"""Where a refusal made outside any test is recorded: every property runs in-process, unless
the refusal turns out to be one test module's (sandbox/_inside/_plugin.py)."""


def _refuse(why: str) -> IsolationRefused:
    prop = ISOLATION["prop"] or COLLECTING
    ISOLATION["refused"].setdefault(prop, why)
    return IsolationRefused(why)


def _fail(kind: type[ProductFailure], why: str) -> ProductFailure:
    prop = ISOLATION["prop"] or COLLECTING
    ISOLATION["failed"].setdefault(prop, (kind.__name__, why))
    return kind(why)


_PROGRAM_FILE = _refuse.__code__.co_filename
"""This program's file name (``<stdin>``: the oracle is one script read from stdin)."""


def ours(exc: BaseException, depth: int = 0) -> bool:
    """Raised by the isolation, not by the product or the test's own code: a refusal, a
    ``TypeError`` or ``AttributeError`` naming a proxy type, an exception whose innermost
    frame is this program's (the proxy machinery: ``AttributeError`` of a handle) and that
    did not cross from the product, or one raised while handling such an exception
    (``dataclasses.fields(<a handle>)`` turns the handle's ``AttributeError`` into its own
    ``TypeError``). Misjudged one way, the test runs in-process and gets the real answer."""
    if isinstance(exc, IsolationRefused):
        return True
    if isinstance(exc, ProductFailure):
        return False  # the product process itself failed: the product's merit
    if hasattr(exc, "__dict__") and vars(exc).get(FROM_PRODUCT) is True:
        return False  # the product's answer, whatever its text names (it cannot choose the
        # in-process fallback by naming a proxy type)
    if isinstance(exc, TypeError | AttributeError) and names_a_proxy_type(str(exc)):
        return True
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None and tb.tb_frame.f_code.co_filename == _PROGRAM_FILE:
        return True
    before = exc.__cause__ or exc.__context__
    return before is not None and depth < 8 and ours(before, depth + 1)


class _Link:
    """The oracle's end of the wire: one request at a time, each with its deadline."""

    def __init__(
        self,
        req_fd: int,
        rep_fd: int,
        status_fd: int,
        timeout: float,
        beat_fd: int | None = None,
        test_timeout: float | None = None,
    ) -> None:
        self.req_fd, self.rep_fd, self.status_fd, self.timeout = req_fd, rep_fd, status_fd, timeout
        self.test_timeout = test_timeout
        self.beat_fd = beat_fd
        self.beat_s = min(BEAT_S, timeout / 4)
        self.beaten = _monotonic()
        self.buffered = b""
        self.dead: tuple[type[ProductFailure], str] | None = None
        self.lock = threading.RLock()  # a callback may call the product again, nested
        self.pending: BaseException | None = None
        self.used = False
        self.last_facts: dict[str, Any] | None = None
        self.overdue: float | None = None
        """The start of the test that ran past its deadline (``ISOLATION["test_started"]``)."""

    def request(self, op: str, args: list[Any], kwargs: dict[str, Any] | None = None) -> Any:
        if _PENDING:
            _settle_pending()  # method reads made before this request, in their order
        memo = Memo()  # what crossed by value: the reply may name it again, or change it
        message: dict[str, Any] = {"op": op, "args": encode(args, _send, memo=memo)}
        if kwargs:
            message["kwargs"] = encode(kwargs, _send, memo=memo)
        _own_files(memo.paths, "the property hands the product")
        sent_paths = len(memo.paths)
        sync = _LIVE.changes(_send)  # what the test changed in product containers it read
        if sync:
            message["sync"] = sync
        clock = _frozen_clock()
        if clock is not None:
            message["clock"] = clock
        data = dumps(message)
        with self.lock:
            if self.dead is not None:
                raise _fail(*self.dead)
            started = ISOLATION["test_started"]
            if (
                self.test_timeout is not None
                and started is not None
                and _monotonic() - started > self.test_timeout
            ):
                # Each call is quick, the test is not: it drives product code without end.
                # This call fails; the product process is not hung and serves the next test,
                # unless product code goes on calling the test's code (a retry loop that
                # takes this failure for one more attempt: tenacity): then it is ended.
                self.overdue = started
                raise _fail(ProductHung, f"the test ran past its {self.test_timeout:g} s")
            self.used = True
            outer, self.pending = self.pending, None
            try:
                reply = self._exchange(data)
                pending = self.pending
            except BrokenPipeError:
                self.dead = self._ended()
                raise _fail(*self.dead) from None
            except WireError as exc:
                self.dead = (ProductUnreadable, f"the product process answered garbage: {exc}")
                raise _fail(*self.dead) from None
            finally:
                self.pending = outer
        _print_again(reply.get("printed"))
        _warn_again(reply.get("warned"))
        if pending is not None:
            # A callback of this call raised what does not cross (a skip, a stop, a failure
            # of the machinery, a refusal, an overreach): as in-process, it ends the call.
            raise pending
        self.last_facts = reply.get("module") if type(reply.get("module")) is dict else None
        if "ok" in reply or "raise" in reply:
            try:
                _LIVE.apply(reply.get("sync"), _receive)
                value = decode(reply["ok"], _receive, memo=memo) if "ok" in reply else None
                live = reply.get("live")
                ours = _GIVEN.get(_GIVEN_IDS.get(id(value), 0)) is value  # never kept
                kept = op in ("getattr", "call", "getitem", "callattr")
                if kept and type(live) is int and type(value) in MUTABLE and not ours:
                    value = _LIVE.keep(live, value)  # the same copy, kept in step
                attr_only = op == "callattr" and reply.get("attr") is True
                if op in _STEPS or attr_only:
                    _remember("getattr" if attr_only else op, args, value)
                _write_back(reply.get("back"), memo)
                _kept_there(reply.get("kept"), memo)
                _own_files(memo.paths[sent_paths:], "the product hands the property")
            except WireError as exc:
                raise _fail(
                    ProductUnreadable, f"unreadable value from the product: {exc}"
                ) from None
            if "ok" in reply:
                return _AttrOnly(value) if attr_only else value
            raise _exception(reply["raise"])
        raise _fail(ProductUnreadable, f"the product could not read a request: {reply.get('wire')}")

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.req_fd, view) :]

    def _exchange(self, data: bytes) -> dict[str, Any]:
        """Send one request and wait for its reply within the call's deadline, serving the
        product's callbacks meanwhile (each may call the product again: nested)."""
        deadline = _monotonic() + self.timeout
        self._write(data)
        while True:
            reply = loads(self._line(deadline))
            if "cb" not in reply:
                return reply
            if self.overdue is not None and self.overdue == ISOLATION["test_started"]:
                # Product code keeps calling a test that is past its deadline: the product
                # process ends (the next test gets a new one), and this call fails.
                self._write(dumps({"end": "the test ran past its deadline"}))
                continue
            answer = _serve_callback(self, reply)
            if self.dead is not None:  # the product failed inside the callback
                raise _fail(*self.dead)
            with contextlib.suppress(BaseException):  # a refusal is recorded where it is made
                sync = _LIVE.changes(_send)  # what the test's code changed in held ones
                if sync:
                    answer["sync"] = sync
            self._write(dumps(answer))

    def _line(self, deadline: float) -> bytes:
        while True:
            end = self.buffered.find(b"\n")
            if end >= 0:
                line, self.buffered = self.buffered[:end], self.buffered[end + 1 :]
                return line
            if len(self.buffered) > REPLY_MAX_BYTES:
                self.dead = (ProductFlooded, f"a reply of more than {REPLY_MAX_BYTES} bytes")
                raise _fail(*self.dead)
            left = deadline - _monotonic()
            if left <= 0:
                self.dead = (ProductHung, f"no answer within {self.timeout:g} s")
                raise _fail(*self.dead)
            self._beat()
            if not select.select([self.rep_fd], [], [], min(left, self.beat_s))[0]:
                continue
            chunk = os.read(self.rep_fd, 1 << 20)
            if not chunk:
                self.dead = self._ended()
                raise _fail(*self.dead)
            self.buffered += chunk

    def _beat(self) -> None:
        """One byte on the beat pipe, if one is due (never blocks: a full pipe means the
        supervisor has beats enough to read)."""
        now = _monotonic()
        if self.beat_fd is None or now - self.beaten < self.beat_s:
            return
        self.beaten = now
        with contextlib.suppress(OSError):
            os.write(self.beat_fd, b".")

    def _ended(self) -> tuple[type[ProductFailure], str]:
        """Why the product's pipe closed, as the host saw the process end."""
        ready = select.select([self.status_fd], [], [], STATUS_WAIT_S)[0]
        status: Any = {}
        if ready:
            try:
                status = json.loads(os.read(self.status_fd, 65536) or b"{}")
            except ValueError:
                status = {}
        if type(status) is not dict:
            status = {}
        code = status.get("exit")
        if status.get("flooded"):
            return ProductFlooded, "the product process wrote more output than the limit"
        if status.get("timed_out"):
            return ProductHung, "the product process ran past the run's wall time"
        if code == 128 + signal.SIGXFSZ:  # what a call prints is held in a file, as pytest's
            return ProductFlooded, "the product process wrote past the file size limit"
        if type(code) is int and code > 128:
            return ProductCrashed, f"the product process died of signal {code - 128}"
        if type(code) is int:
            return ProductExited, f"the product process exited with status {code}"
        if type(status.get("error")) is str:
            return ProductExited, f"the product process did not start: {status['error'][:300]}"
        return ProductExited, "the product process ended"


def _link() -> _Link:
    link = ISOLATION["link"]
    if link is None:
        raise _refuse("no product process in this run")
    return link  # type: ignore[no-any-return]


def _temporary_roots() -> tuple[str, ...]:
    """Where each sandbox has a file system of its own (a tmpfs each: /tmp, $HOME), unlike
    the tree and the system, which both processes see at the same place."""
    roots = {os.path.realpath(tempfile.gettempdir())}
    home = os.environ.get("HOME", "")
    here = os.getcwd()
    if home.startswith("/") and home != "/" and not here.startswith(home.rstrip("/") + "/"):
        roots.add(os.path.realpath(home))
    return tuple(sorted(roots))


_TEMPORARY = _temporary_roots()


def _own_files(paths: list[Any], who: str) -> None:
    """A path into one process's temporary file system names nothing (or another file) in
    the other's: ``tmp_path`` handed to product code, a temporary file the product returns.
    Refused (the property runs in-process, where there is one file system), never a
    ``FileNotFoundError`` that in-process code would not have met."""
    for path in paths:
        if type(path) is pathlib.PureWindowsPath or not path.is_absolute():
            continue
        text = os.path.normpath(str(path))
        for root in _TEMPORARY:
            if text == root or text.startswith(root.rstrip("/") + "/"):
                raise _refuse(
                    f"{who} a path in its own temporary directory {root} (each process has its own)"
                )


def _write_back(back: Any, memo: Memo) -> None:
    """Product code changed, in place, containers the call sent by value (``xs.sort()``,
    ``d[k] = v``): the same change here, on the oracle's own objects (all decoded first, then
    written), so the property sees its argument as product code left it."""
    changes = written_back(back, memo, _receive)
    for target, _contents in changes:
        own = _interpreter_own(target)
        if own:
            # In one process product code would change the interpreter's own (its import
            # path, its argv): the oracle's never is; the test runs in-process, named.
            raise _refuse(f"the product changes the interpreter's own {own}")
    for target, contents in changes:
        replace_contents(target, contents)


def _kept_there(kept: Any, memo: Memo) -> None:
    """Containers the call sent by value that product code holds on to (``cached(cache)``
    with the test's dict): the test's own is kept in step with the product's copy from now
    on, both ways (``Live``)."""
    if kept is None:
        return
    if type(kept) is not list:
        raise WireError("kept arguments are not a list")
    for item in kept:
        if type(item) is not list or len(item) != 2 or not all(type(x) is int for x in item):
            raise WireError("a kept argument is not [number, handle]")
        target = memo.get(["r", item[0]])
        if type(target) not in MUTABLE or item[1] <= 0:
            raise WireError("a kept argument does not fit what was sent")
        if not _interpreter_own(target):
            _LIVE.keep(item[1], target)


def _interpreter_own(target: Any) -> str:
    """The name of one of the interpreter's own containers (``sys.path``, ``sys.argv``,
    ``warnings.filters``...) when ``target`` is one, else "": product code never changes
    these in the oracle, by a write-back or a container kept in step (a test that hands the
    product ``sys.path`` must not let the patch choose what the oracle imports)."""
    if type(target) not in MUTABLE:
        return ""
    for name in _INTERPRETER_OWN:
        module, _, attribute = name.partition(".")
        if getattr(sys.modules.get(module), attribute, None) is target:
            return name
    return ""


_INTERPRETER_OWN = (
    "sys.path", "sys.argv", "sys.orig_argv", "sys.meta_path", "sys.path_hooks",
    "sys.path_importer_cache", "sys.warnoptions", "warnings.filters", "sys.modules",
    "builtins.__dict__", "sys.__dict__",
)  # fmt: skip


# -- handles -------------------------------------------------------------------------------

_LIVE = Live()
"""Product containers the property read as attributes (``s.names``), kept in step."""
_HANDLES: dict[int, Handle] = {}
_REBUILT: dict[int, Any] = {}
"""A product ``TypeVar`` or generic alias (``Base[int, str]``), rebuilt here once per handle
as the standard library's own object (sandbox/_inside/_wire.py ``REBUILT_TYPES``): a
``TypeVar`` among a generic's parameters must be a real one, and an alias must be one to
``type[Base[KT, VT]]``, ``get_args`` and an annotation."""
_REBUILT_HANDLES: dict[int, int] = {}  # id(an object rebuilt here) -> the product's handle
_EXCEPTION_CLASSES: dict[int, type[BaseException] | None] = {}
_EXCEPTION_VALUES: dict[int, BaseException] = {}  # the product's handle -> its exception here
_REMOTE_DUNDERS = frozenset(
    {"__name__", "__qualname__", "__module__", "__doc__", "__all__", "__wrapped__"}
)  # fmt: skip
_OWN = frozenset({"_pw_id", "_pw_type", "_pw_callable", "_pw_kind"})
_SEEN_AS: dict[str, type] = {"function": types.FunctionType, "method": types.MethodType}
"""What ``__class__`` says for a product function or bound method, so ``inspect.isfunction``
and ``inspect.ismethod`` (and ``inspect.getmembers`` with them) answer as in-process; every
other handle is a ``Handle``."""


class _ClassView(type):
    """The metaclass of the classes that stand for product classes here. A plain product
    class (made by ``type`` or ``ABCMeta``: sandbox/_inside/_product.py ``_plain_class``) is
    one of these, and the type of its instances' handles: ``type(event) is Response`` holds,
    as in one process (h11's event loops end on it). For any other, what ``__class__`` says of an
    instance. Each derives from its instances' handle class (an ABC's ``isinstance`` reads
    the handle's protocol through it), is named as the product class, and every attribute
    read, set or deleted on it, its call, subscript and ``isinstance`` are the product
    class's; a class statement on it makes the class in the product (``_Subclassing``)."""

    def __new__(
        mcls, name: str, bases: tuple[Any, ...], namespace: dict[str, Any], **kwds: Any
    ) -> Any:
        marked = tuple(
            _base_marker(_VIEW_OF[b]) if type(b) in _VIEW_TYPES else b for b in bases
        )  # fmt: skip
        return _subclass_in_product(name, marked, namespace, kwds)

    def __getattribute__(cls, name: str) -> Any:
        if name in _VIEW_OWN:
            return type.__getattribute__(cls, name)
        if name[:2] != "__" and _calls_it(name, sys._getframe(1)):
            return _MethodCall(_VIEW_OF[cls], name)
        return getattr(_VIEW_OF[cls], name)

    def __setattr__(cls, name: str, value: Any) -> None:
        setattr(_VIEW_OF[cls], name, value)

    def __delattr__(cls, name: str) -> None:
        delattr(_VIEW_OF[cls], name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return _VIEW_OF[cls](*args, **kwargs)

    def __getitem__(cls, key: Any) -> Any:
        return _VIEW_OF[cls][key]  # Base[KT, VT]: the product's alias

    def __instancecheck__(cls, obj: Any) -> bool:
        of: Any = _VIEW_OF[cls]  # a handle: its __instancecheck__ asks the product
        return type.__subclasscheck__(cls, type(obj)) or isinstance(obj, of)

    def __subclasscheck__(cls, sub: Any) -> bool:
        of: Any = _VIEW_OF[cls]
        return sub is cls or issubclass(sub, of)

    def __eq__(cls, other: object) -> bool:
        return other is cls or other is _VIEW_OF[cls]

    __hash__ = type.__hash__

    def __repr__(cls) -> str:
        return repr(_VIEW_OF[cls])

    def __dir__(cls) -> Any:
        return dir(_VIEW_OF[cls])


class _AbstractClassView(_ClassView, abc.ABCMeta):
    """The metaclass of the class that stands for a product class made by ``ABCMeta``: a
    class statement deriving from it and from an ABC of the test's finds one metaclass
    for both, as in one process (furl's ``itemomdict1D(omdict1D, itemcontainer)``: a
    metaclass conflict, and the module did not import). What it answers is
    ``_ClassView``'s: the product class's."""


_VIEW_TYPES = (_ClassView, _AbstractClassView)
_VIEW_OF: dict[type, Handle] = {}
"""A class that stands for a product class here -> the product class's handle."""
_CLASS_VIEWS: dict[tuple[type, int], type] = {}
_PRODUCT_CLASSES: dict[Any, type] = {}
"""A plain product class's real class here, by ``(module, qualname)`` when its module holds
it by that name (the same class in every property's process), else by its handle."""
_OWN_DICT = type.__dict__["__dict__"].__get__
_OWN_MRO = type.__dict__["__mro__"].__get__
"""A class's own namespace and MRO here: on a class standing for a product class,
``cls.__dict__`` and ``cls.__mro__`` are the product class's (``typing.get_type_hints``,
an ABC's ``__subclasshook__``), so the oracle's own code reads them with these."""


def _class_view(
    handle_type: type, number: int, qualname: str, module: str = "", abstract: bool = False
) -> type:
    found = _CLASS_VIEWS.get((handle_type, number))
    if found is None:
        klass = _handle(number, "type", True, "class")
        name = qualname.rpartition(".")[2]
        namespace = {"__slots__": (), "__qualname__": qualname, "__pw_handle__": number}
        if module:
            namespace["__module__"] = module
        found = type.__new__(
            _AbstractClassView if abstract else _ClassView,
            name if name.isidentifier() else "Handle",
            (handle_type,),
            namespace,
        )
        _VIEW_OF[found] = klass
        if not hasattr(builtins, name):  # never a built-in's name ('int', 'str')
            _VIEW_NAMES.add(f"'{name}'")
        _CLASS_VIEWS[(handle_type, number)] = found
        HANDLE_TYPES.add(found)  # the type of handles, for a plain class (_product_class)
    return found


def _product_class(number: int, facts: Any) -> type | None:
    """The real class here for the plain product class ``number`` (``_ClassView``), or
    None when ``facts`` are not ``[module, qualname, named]``."""
    if (
        type(facts) is not list
        or len(facts) not in (3, 4)
        or type(facts[0]) is not str
        or type(facts[1]) is not str
        or type(facts[2]) is not bool
        or type(facts[-1]) is not bool
        or not all(part.isidentifier() for part in facts[0].split("."))
        or not all(part.isidentifier() or part == "<locals>" for part in facts[1].split("."))
    ):
        return None  # names only: what pickle imports by them here
    module, qualname, named = facts[:3]
    abstract = len(facts) == 4 and facts[3] is True
    key: Any = (module, qualname) if named else number
    found = _PRODUCT_CLASSES.get(key)
    if found is None:
        found = _class_view(Handle, number, qualname, module, abstract)
        _PRODUCT_CLASSES[key] = found
        return found
    kept = object.__getattribute__(_VIEW_OF[found], "_pw_id")
    if kept != number:
        if _live_number(kept):
            # Two classes alive under one name (the product bound a new one to it): this
            # one is not the class the test holds.
            return _class_view(Handle, number, qualname, module, abstract)
        # Read during an earlier property, whose process is gone: this property's process
        # gave the same class out again (as for a module: _proxy_module).
        _MOVED[kept] = number
        _CLASS_VIEWS.setdefault((Handle, number), found)
    return found


_CLASSED = frozenset({"", "descriptor", "data-descriptor"})
_CLASS_OF: dict[int, int] = {}
"""A plain product object's handle number -> its class's (sent with the handle)."""
_BUILTIN_BASES = frozenset(
    {"dict", "list", "set", "frozenset", "tuple", "str", "bytes", "bytearray", "int", "float"}
)  # fmt: skip
_SEEN_AS_BUILTIN: dict[tuple[str, str], type] = {}


def _seen_as_builtin(base: str, typename: str) -> type:
    """What ``__class__`` says for an instance of a product subclass of a built-in (addict's
    ``Dict``, a ``dict``): a class here of that built-in, with the product class's name, so
    ``isinstance(x, dict)`` (unittest's ``assertDictEqual``) and ``Mapping`` answer as in one
    process. C code that needs a real ``dict`` still meets a ``Handle`` and says so."""
    if base not in _BUILTIN_BASES:
        return Handle
    found = _SEEN_AS_BUILTIN.get((base, typename))
    if found is None:
        name = typename.rpartition(".")[2]
        found = type(name if name.isidentifier() else base, (getattr(builtins, base),), {})
        found.__qualname__ = typename
        _SEEN_AS_BUILTIN[(base, typename)] = found
    return found


_CLASS_OWN = frozenset(
    {"__mro_entries__", "__reduce_ex__", "__reduce__", "__getstate__", "__copy__",
     "__deepcopy__", "__instancecheck__", "__subclasscheck__", "__getattribute__",
     "__setattr__", "__delattr__", "__weakref__", "__dataclass_fields__",
     "__dataclass_params__"}
)  # fmt: skip
"""The dunders of a product class's handle that are the handle's own when read by name:
what a class statement, pickle, copy and the attribute protocol ask of the object itself;
and what the standard library reads to compare with its own markers (``dataclasses.fields``
tells a field by ``f._field_type is _FIELD``: the product's marker is not the oracle's, and
it would find no field at all), which the handle does not have."""
_VIEW_OWN = _CLASS_OWN | {
    "__name__", "__qualname__", "__module__", "__class__", "__pw_handle__", "__slots__",
    "__basicsize__", "__itemsize__", "__flags__", "__dictoffset__", "__weakrefoffset__",
}  # fmt: skip
"""What a class standing for a product class (``_ClassView``) answers itself: its names,
and the protocol its instances' handles are operated by (``copy`` asks ``cls.__copy__``)."""
_METHOD_PARTS = frozenset({"__func__", "__self__"})
_FUNCTION_INTERNALS = frozenset(
    {"__code__", "__defaults__", "__kwdefaults__", "__globals__", "__closure__", "__builtins__",
     "__annotations__", "__annotate__", "__signature__", "__text_signature__"}
)  # fmt: skip
"""What a function is made of beyond plain data: reading one of them (``inspect.signature``,
``inspect.getsource``, ``typing.get_type_hints`` do) is refused, so the property runs
in-process and gets the real answer instead of a stand-in's."""
_STAND_IN_CODE: types.CodeType = compile(
    "def stand_in():\n    raise RuntimeError('the code of a product function runs there')\n",
    "<isolated oracle>",
    "exec",
).co_consts[0]


def _stand_in_code(function: Any) -> types.CodeType:
    """``__code__`` of a product function or method: a code object of the oracle's with the
    product code's file, first line, names, parameters and flags (what doctest's finder,
    ``inspect.iscoroutinefunction`` and ``inspect.getsource`` read), whose own body only
    raises: the product's bytecode never crosses and never runs here."""
    facts = _op("code_facts", function)
    texts = ("filename", "name", "qualname")
    numbers = ("firstlineno", "argcount", "posonly", "kwonly", "flags")
    names = facts.get("varnames") if type(facts) is dict else None
    if (
        type(facts) is not dict
        or any(type(facts.get(k)) is not str for k in texts)
        or any(type(facts.get(k)) is not int or facts[k] < 0 for k in numbers)
        or type(names) is not list
        or not all(type(n) is str and n.isidentifier() for n in names)
    ):
        raise _fail(ProductUnreadable, "the facts of a product function's code are not")
    try:
        return _STAND_IN_CODE.replace(
            co_filename=facts["filename"], co_firstlineno=max(facts["firstlineno"], 1),
            co_name=facts["name"], co_qualname=facts["qualname"],
            co_argcount=facts["argcount"], co_posonlyargcount=facts["posonly"],
            co_kwonlyargcount=facts["kwonly"], co_varnames=tuple(names),
            co_nlocals=len(names), co_flags=facts["flags"],
        )  # fmt: skip
    except (ValueError, TypeError):
        raise _fail(ProductUnreadable, "a product function's code facts do not fit") from None


_FUNCTION_DATA = frozenset({"__annotations__", "__defaults__", "__kwdefaults__"})
"""What a product function holds that is data, not code: read from the product."""
_IMPORTING: set[str] = set()
TEST_DIRECTORIES = frozenset({"test", "tests"})
"""Directory names whose modules are the oracle's own test code inside a product package
(``pkg/tests/``): the default protected paths restore them from the parent. Not
``testing``: ``click.testing``, ``numpy.testing`` are product API."""


class ProductAlias(typing._GenericAlias, _root=True):  # type: ignore[name-defined,call-arg,misc]
    """A product generic subscripted (``Base[int, str]``): the standard library's alias
    around the product class's handle, except that a class statement of the test's on it
    makes the class in the product as on the handle itself (``_Subclassing``), where the
    standard alias would hand ``type()`` a handle for a base."""

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[Any, ...]:
        return (_base_marker(self),)


class _Subclassing(type):
    """What a class statement of the test's on a product class calls (the metaclass of the
    stand-in ``Handle.__mro_entries__`` gives for the product base): the class is made in
    the product process, from the product's bases, and the test's name is bound to the
    product class's handle. Its instances are product objects, as in one process; the
    methods the test wrote stay the test's code, run here when product code calls them
    (callbacks, as every function of the test's handed to the product is). ``super()``
    and ``__class__`` in those methods name a class of this process: refused (the
    property runs in-process), as is a class with a base of the test's own beside the
    product's (a ``TestCase`` mixin: Python would need both in one process)."""

    def __new__(
        mcls, name: str, bases: tuple[Any, ...], namespace: dict[str, Any], **kwds: Any
    ) -> Any:
        return _subclass_in_product(name, bases, namespace, kwds)


def _base_marker(base: Any) -> type:
    """The stand-in for a product class among a class statement's bases (see _Subclassing)."""
    return type.__new__(_Subclassing, "ProductBase", (), {"_pw_base": base})


_METHOD_KINDS: dict[type, str] = {
    types.FunctionType: "function", staticmethod: "static", classmethod: "class",
}  # fmt: skip


def _subclass_in_product(
    name: str, bases: tuple[Any, ...], namespace: dict[str, Any], kwds: dict[str, Any]
) -> Any:
    product_bases = []
    for base in bases:
        if type(base) is _Subclassing:
            product_bases.append(base.__dict__["_pw_base"])
        elif isinstance(base, type) and _sendable_class(base):
            # A plain class of the test's beside the product's (furl's itemcontainer, an
            # ABC mixin): made in the product too, once, its methods the test's code.
            product_bases.append(_twin(base, name))
        else:
            label = getattr(base, "__qualname__", None) or type(base).__name__
            raise _refuse(
                f"the property's class {name} has a product class and {str(label)[:80]} "
                "of its own for bases"
            )
    anchored = "__classcell__" in namespace
    if anchored and any(
        "__class__" in getattr(getattr(value, "__func__", value), "__code__", _NO_CODE).co_freevars
        for key, value in namespace.items()
        if type(value) in (classmethod, staticmethod) or key in _IMPLICIT_CLASSMETHODS
    ):
        raise _refuse(
            f"the property's subclass {name} of a product class uses super() or __class__ "
            "in a class method"
        )
    items: list[list[Any]] = []
    for key, value in namespace.items():
        if key in ("__orig_bases__", "__classcell__"):
            continue  # the product's class statement makes its own; the cell is _anchor's
        how = _METHOD_KINDS.get(type(value))
        if how is not None:
            function = value if how == "function" else value.__func__
            # What a decorator of the product's marked on it (parsimonious' @rule sets
            # _rule, which its metaclass reads there): the method there has it too.
            marks = {k: v for k, v in vars(function).items() if k not in _NEVER_OWN}
            items.append([key, how, function, marks])
        elif type(value) is property:
            items.append([key, "property", value.fget, value.fset, value.fdel, value.__doc__])
        else:
            items.append([key, "value", value])
    made = _link().request("subclass", [name, product_bases, items, kwds, anchored])
    if anchored:
        if type(made) in _VIEW_TYPES:
            # Its instances are the anchor's (below), and Python requires a class statement
            # whose methods name __class__ to give the class that cell holds, or no class.
            made = _VIEW_OF[made]
        namespace["__classcell__"].cell_contents = _anchor(name, made)
    return made


_NO_CODE = (lambda: None).__code__
_TWINS: dict[type, Any] = {}
"""A plain class of the test's -> the product class made for it (``_twin``)."""
_TWIN_SKIP = frozenset(
    {"__dict__", "__weakref__", "__abstractmethods__", "_abc_impl", "__orig_bases__",
     "__parameters__", "__static_attributes__", "__firstlineno__"}
)  # fmt: skip
"""What Python (or ABCMeta) put in a class's namespace itself: the product's class statement
makes its own."""


def _twin(cls: type, user: str) -> Any:
    """The product class standing for the test's plain class ``cls`` as a base of a product
    subclass (``class ItemStore(Store, Container)``): made there by the class statement
    ``cls`` was made by (its name, its bases made there the same way, its namespace, its
    metaclass ``ABCMeta`` if it had one), its methods the test's code, called back. In the
    oracle ``cls`` stays itself: an instance of the product subclass is not an instance of
    it here (``isinstance(x, Container)`` is false, true in one process)."""
    found = _TWINS.get(cls)
    if found is not None:
        return found
    marked: list[Any] = []
    for base in cls.__bases__:
        if base is object:
            continue
        if type(base) in _VIEW_TYPES:
            marked.append(_base_marker(_VIEW_OF[base]))
        elif _sendable_class(base):
            marked.append(_base_marker(_twin(base, user)))
        else:
            raise _refuse(
                f"the property's class {user} has a product class and "
                f"{str(base.__qualname__)[:80]} of its own for bases"
            )
    namespace = {k: v for k, v in vars(cls).items() if k not in _TWIN_SKIP}
    for value in namespace.values():
        code = getattr(getattr(value, "__func__", value), "__code__", _NO_CODE)
        if "__class__" in code.co_freevars:
            raise _refuse(
                f"the property's class {user} has a base of its own, {cls.__qualname__[:80]}, "
                "whose methods use super() or __class__"
            )
    kwds: dict[str, Any] = {"metaclass": abc.ABCMeta} if type(cls) is abc.ABCMeta else {}
    made = _subclass_in_product(cls.__name__, tuple(marked), namespace, kwds)
    found = _VIEW_OF[made] if type(made) in _VIEW_TYPES else made
    _TWINS[cls] = found
    return found


_IMPLICIT_CLASSMETHODS = frozenset({"__new__", "__init_subclass__", "__class_getitem__"})
_ANCHORS: dict[int, type] = {}
"""A product class made by a test's class statement whose methods call ``super()`` (its
handle's number) -> the class its methods' ``__class__`` names here (``_anchor``)."""
_SUPER_NEVER = frozenset(
    {"__class__", "__dict__", "__weakref__", "__slots__", "__module__", "__qualname__",
     "__doc__", "__new__", "__init_subclass__", "__class_getitem__", "__subclasshook__",
     "__mro_entries__", "__set_name__", "__get__", "__set__", "__delete__", "__del__",
     "__getattr__"}
)  # fmt: skip
_SUPER_SLOTLESS = frozenset(
    {"__init__", "__missing__", "__getstate__", "__setstate__", "__reduce__"}
)  # fmt: skip
"""Dunders Python calls on no handle by itself (no slot of its type): safe past the anchor."""


class _SuperMember:
    """One name ``super()`` finds past a product subclass's anchor (``_anchor``): read from
    the product's ``super(cls, obj)``, so the base's method runs there, as in one process."""

    __slots__ = ("name", "owner")

    def __init__(self, name: str, owner: Any) -> None:
        self.name, self.owner = name, owner

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            raise AttributeError(self.name)
        return _op("super_get", self.owner, instance, self.name)


def _anchor(name: str, made: Any) -> type:
    """What ``super()`` and ``__class__`` name in the methods of a test's class made in the
    product (``_Subclassing``): a handle class here whose instances are that class's (the
    product says so: kind ``anchored:N``), with the handle's own methods for Python's
    protocol, and past it in the MRO a class whose every attribute is the product's
    ``super(cls, obj)``'s, then the anchors of the product classes it derives from. So
    ``super().__init__(...)`` and ``super().key(x)`` run the base's method in the product,
    with the instance, as in one process."""
    names, ancestors = _op("super_names", made)
    if type(names) is not list or type(ancestors) is not list:
        raise _fail(ProductUnreadable, "super() names that are not lists")
    handle = vars(Handle)
    shown = [
        str(n) for n in names
        if type(n) is str and n not in _SUPER_NEVER
        and (n[:2] != "__" or n in handle or n in _SUPER_SLOTLESS)
    ]  # fmt: skip
    members = {n: _SuperMember(n, made) for n in shown}
    forward = type(f"{name}.super", (), {"__slots__": (), **members})
    parents = tuple(_ANCHORS[n] for n in map(_number_of, ancestors) if n in _ANCHORS)
    own = {
        k: v for k, v in handle.items()
        if k not in ("__dict__", "__weakref__", "__slots__", "__module__", "__qualname__",
                     "__doc__", *_OWN)
    }  # fmt: skip
    try:
        anchor = type(name, (forward, *(parents or (Handle,))), {**own, "__slots__": ()})
    except TypeError:
        raise _refuse(f"the property's subclass {name} of product classes uses super()") from None
    number = _number_of(made)
    if number is not None:
        _ANCHORS[number] = anchor
    HANDLE_TYPES.add(anchor)
    return anchor


def _handle(
    number: int, typename: str, is_callable: bool, kind: str = "", of: type | None = None
) -> Handle:
    found = _HANDLES.get(number)
    if found is None:
        cls: Any = _HANDLE_KINDS.get(kind, Handle) if of is None else of
        if kind[:9] == "anchored:" and kind[9:].isdigit():
            cls = _ANCHORS.get(int(kind[9:]), Handle)
        # (a class standing for a product class answers ``__new__`` with the product's)
        found = object.__new__(cls) if type(cls) in _VIEW_TYPES else cls.__new__(cls)
        object.__setattr__(found, "_pw_id", number)
        object.__setattr__(found, "_pw_type", typename)
        object.__setattr__(found, "_pw_callable", is_callable)
        object.__setattr__(found, "_pw_kind", kind)
        _HANDLES[number] = found
    return found


def _label(handle: Handle) -> str:
    """``module.qualname`` of a product object, for a refusal's text (letters, digits, dots,
    underscores and angle brackets only: it is the product's answer)."""
    link = ISOLATION["link"]
    if link is None or link.dead is not None:
        return "?"
    try:
        text = f"{link.request('getattr', [handle, '__module__'])}."
        text += str(link.request("getattr", [handle, "__qualname__"]))
    except Exception:
        return "?"
    return re.sub(r"[^\w.<>]", "?", text)[:120]


class ProductNamespace(dict):  # type: ignore[type-arg]
    """``vars()`` of a product object (a module, an instance, a class): a copy of its
    namespace as the product held it when read, values by value or as handles. Writing to
    it would patch the product: refused."""

    __slots__ = ("_pw_owner",)

    def _patch(self, *args: Any, **kwargs: Any) -> Any:
        owner = object.__getattribute__(self, "_pw_owner")
        raise _refuse(f"the property writes to vars({owner}) (patches the product)")

    __setitem__ = __delitem__ = __ior__ = _patch
    update = pop = popitem = clear = setdefault = _patch

    def __copy__(self) -> dict[str, Any]:
        # A copy is the test's own dict, as copy.copy(vars(m)) is in one process (glom's
        # snippet tests run in copy.copy(glom.__dict__) with names of their own added).
        return dict(self)

    def __deepcopy__(self, memo: Any) -> dict[str, Any]:
        return copy.deepcopy(dict(self), memo)


_MODULE_NAMESPACES: dict[str, ProductNamespace] = {}
"""One namespace object per product module, refilled at each read: ``vars(m) is m.__dict__``
and a function's ``__globals__ is vars(its module)``, as in one process (doctest's finder
tells a module's own functions from imported ones by that identity)."""


def _module_namespace(module: Handle, name: str) -> ProductNamespace:
    fresh = _namespace(module, name)
    owner = object.__getattribute__(module, "_pw_id")
    for key, value in dict.items(fresh):
        _remember("getattr", [owner, key], value)
    kept = _MODULE_NAMESPACES.setdefault(name, fresh)
    if kept is not fresh:
        dict.clear(kept)
        dict.update(kept, fresh)
    return kept


def _globals_of(function: Handle) -> ProductNamespace | None:
    """``__globals__`` of a product function: its module's namespace when they are one dict
    in the product (the product names the module; the proxy module is the oracle's own), else
    None (a function made by ``exec`` in a dict of its own: refused as before)."""
    name = _link().request("globals_of", [function])
    finder = ISOLATION["finder"]
    if type(name) is not str or finder is None or not finder.owns(name):
        return None
    module = sys.modules.get(name)
    if module is None:
        # A submodule the product imported and the test did not (semver._deprecated): in
        # one process it is in sys.modules already; here it is imported as any product
        # module is, through the proxy.
        module = importlib.import_module(name)
    return module.__dict__ if isinstance(module, ProxyModule) else None


def _namespace(target: Any, owner: str) -> ProductNamespace:
    try:
        found = _link().request("vars", [target])
    except TypeError:
        raise AttributeError("__dict__") from None
    if type(found) is not dict:
        raise _fail(ProductUnreadable, f"vars({owner}) is not a dict")
    if "__builtins__" in found:
        # One process has one builtins: code the property runs in a copy of a module's
        # globals (doctest's way) prints and imports here, as in-process, not in the product.
        found["__builtins__"] = vars(builtins)
    namespace = ProductNamespace(found)
    object.__setattr__(namespace, "_pw_owner", owner)
    return namespace


def _op(name: str, *args: Any) -> Any:
    return _link().request(name, list(args))


# -- a method call, one request ----------------------------------------------------------------

_LOAD_METHOD = opcode.opmap["LOAD_METHOD"] if sys.version_info < (3, 12) else None
"""3.11's method load; from 3.12 (where LOAD_METHOD is a pseudo-instruction, never in the
bytecode) it is LOAD_ATTR with its low bit set."""
_LOAD_ATTR = opcode.opmap["LOAD_ATTR"]


def _calls_it(name: str, frame: types.FrameType) -> bool:
    """Whether ``frame`` is at the instruction that loads ``name`` as a method to call it
    (``obj.name(...)``: LOAD_METHOD, or LOAD_ATTR with its method bit): the only use Python
    makes of what that instruction loads is to call it, after the arguments."""
    try:
        code = frame.f_code
        raw, at = code.co_code, frame.f_lasti
        op, arg = raw[at], raw[at + 1]
        shift, back = 8, at - 2
        while back >= 0 and raw[back] == opcode.EXTENDED_ARG:
            arg |= raw[back + 1] << shift
            shift, back = shift + 8, back - 2
        if _LOAD_METHOD is not None:
            index = arg if op == _LOAD_METHOD else -1
        else:
            index = arg >> 1 if op == _LOAD_ATTR and arg & 1 else -1
        names = code.co_names
        return 0 <= index < len(names) and names[index] == name
    except (AttributeError, IndexError, TypeError):
        return False


_DRAINS = {
    name: getattr(builtins, name) for name in ("list", "tuple", "sorted", "set", "frozenset")
}
"""The built-ins that take the whole of what they iterate before any of the test's code runs
again (``set`` and ``frozenset`` hash each item as it comes: only while the items are plain
values does that run no product code)."""
_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_JUMPS = frozenset(dis.hasjrel + dis.hasjabs)
_CODE_INSTRUCTIONS: dict[types.CodeType, list[dis.Instruction]] = {}


def _drained_by(frame: types.FrameType | None) -> str | None:
    """The built-in that ``frame`` is calling on one argument, when it is one of ``_DRAINS``
    (``set(mi.derangements(...))``, ``list(gen)``): the callable is the value the
    instructions before the call pushed first. Walking back from the call, the first
    instruction at which the stack effects add up to the call's one result is the one
    that pushed the callable (every later one runs with it on the stack). Anything else
    (a jump in between, another name, the name shadowed) is None: item by item."""
    if frame is None:
        return None
    try:
        code = frame.f_code
        instructions = _CODE_INSTRUCTIONS.get(code)
        if instructions is None:
            instructions = _CODE_INSTRUCTIONS[code] = list(dis.get_instructions(code))
        at = next(i for i, ins in enumerate(instructions) if ins.offset == frame.f_lasti)
        if instructions[at].opname != "CALL" or instructions[at].arg != 1:
            return None
        total = 0
        for back in range(at, -1, -1):
            ins = instructions[back]
            has_arg = ins.opcode >= dis.HAVE_ARGUMENT
            total += dis.stack_effect(ins.opcode, ins.arg if has_arg else None)
            if total == 1:
                break  # a jump may land here: the stack is as high as before the callable
            if back < at and (ins.is_jump_target or ins.opcode in _JUMPS):
                return None  # within the call's arguments: no straight line to walk back
        else:
            return None
        if ins.opname == "PUSH_NULL":
            ins = instructions[back + 1]
        name = ins.argval
        if ins.opname not in _LOADS or name not in _DRAINS:
            return None
        scopes = (frame.f_locals,) if ins.opname == "LOAD_NAME" else ()
        for scope in (*scopes, frame.f_globals, frame.f_builtins):
            if name in scope:
                return str(name) if scope[name] is _DRAINS[name] else None
        return None
    except (StopIteration, ValueError, TypeError, IndexError):
        return None


class _Drained:
    """A product iterator a drain built-in takes whole (``_drained_by``): its items come
    a batch a request (``drain``: as many as the product makes in a few milliseconds), in
    their order, and what the product's iterator raised comes after the items before it.
    Nothing of the test's runs between two items, so the product running ahead within a
    batch is not seen; for ``set``, a batch ends at an item that is not a plain value (its
    hash is the product's code)."""

    __slots__ = ("_done", "_it", "_items", "_plain")

    def __init__(self, it: Any, plain: bool) -> None:
        self._it, self._plain = it, plain
        self._items: collections.deque[Any] = collections.deque()
        self._done = False

    def __iter__(self) -> _Drained:
        return self

    def __next__(self) -> Any:
        if not self._items:
            if self._done:
                raise StopIteration
            done, items = _op("drain", self._it, self._plain)
            self._done = bool(done)
            self._items.extend(items)
            if not self._items:
                self._done = True
                raise StopIteration
        return self._items.popleft()


_PENDING: list[_MethodCall] = []
"""The method reads not yet asked of the product, in the order the test made them."""


class _AttrOnly:
    """A ``callattr`` reply that is the attribute, not its call: the product's attribute is
    not one it calls itself (one of the test's objects, a value): called here."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _MethodCall:
    """``obj.name`` read to be called (``obj.name(args)``, ``module.f(args)``,
    ``Class.make(args)``): the read and the call go to the product as one request
    (``callattr``), half the round trips of a test that calls methods. Order is kept: any
    other request made before the call (while the arguments are computed) first asks the
    product for the attribute (``_settle_pending``), so the product sees the read, then what
    the arguments did, then the call, as in one process; an attribute the product does not
    have raises there, before the arguments' own requests reach it."""

    __slots__ = ("generation", "name", "owner", "state", "value")

    def __init__(self, owner: Any, name: str) -> None:
        self.owner, self.name, self.state = owner, name, "pending"
        self.value: Any = None
        self.generation = ISOLATION["generation"]
        _PENDING.append(self)

    def settle(self) -> None:
        if self.state != "pending" or self.generation != ISOLATION["generation"]:
            return  # a later property's process never saw this test's read
        try:
            self.value = _link().request("getattr", [self.owner, self.name])
            self.state = "read"
        except BaseException as exc:
            self.state, self.value = "failed", exc
            raise

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        if self.state == "pending":
            with contextlib.suppress(ValueError):
                _PENDING.remove(self)
            self.state = "called"
            got = _link().request("callattr", [self.owner, self.name, *args], kwargs)
            if type(got) is not _AttrOnly:
                return got
            self.state, self.value = "read", got.value
        if self.state == "failed":
            raise self.value
        if self.state == "called":
            return _link().request("getattr", [self.owner, self.name])(*args, **kwargs)
        return self.value(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only reached if C code handed this to something other than the call (a C
        # descriptor's getattr chain): the attribute itself, read now.
        if self.state == "pending":
            with contextlib.suppress(ValueError):
                _PENDING.remove(self)
            self.settle()
        return getattr(self.value, name)


def _settle_pending() -> None:
    """Ask the product for every method read still pending, in order, before any other
    request: one that fails ends the expression there (the later ones are dropped)."""
    pending = _PENDING[:]
    _PENDING.clear()
    for stub in pending:
        stub.settle()


class Handle:
    """An object that lives in the product process; every operation is a request."""

    __slots__ = ("__weakref__", "_pw_callable", "_pw_id", "_pw_kind", "_pw_type")

    def __getattribute__(self, name: str) -> Any:
        if name in _OWN:
            return object.__getattribute__(self, name)
        if name[:2] == "__" and name not in _REMOTE_DUNDERS:
            kind = object.__getattribute__(self, "_pw_kind")
            if name == "__class__":
                if kind[:8] == "builtin:":
                    return _seen_as_builtin(kind[8:], object.__getattribute__(self, "_pw_type"))
                if kind == "class":
                    # A class, to isinstance(x, type) and inspect.isclass (doctest's finder
                    # looks for docstrings only in what isclass says is one: ordered-set's
                    # --doctest-modules); what only a real type can do still meets a handle.
                    return type
                if type(type(self)) in _VIEW_TYPES:
                    return type(self)  # an instance of a plain product class: its class
                klass = _CLASS_OF.get(object.__getattribute__(self, "_pw_id"))
                if klass is not None and kind in _CLASSED:
                    # A view of the product class, so ``x.__class__.__name__`` (cachetools'
                    # repr tests) and ``x.__class__(...)`` answer as in one process, while
                    # an ABC's isinstance still reads the handle's own protocol (funcy's
                    # ``isinstance(it, Iterator)``); ``type(x)`` is still ``Handle``.
                    return _class_view(type(self), klass, object.__getattribute__(self, "_pw_type"))
                return _SEEN_AS.get(kind, Handle)
            if name == "__dict__":
                return _namespace(self, object.__getattribute__(self, "_pw_type"))
            if kind == "function" and name == "__globals__":
                space = _globals_of(self)
                if space is not None:
                    return space
            if kind in _SEEN_AS and name in _FUNCTION_DATA:
                # Plain data (names to classes or strings, default values), read as any
                # attribute is: what staticmethod(), functools.wraps and
                # typing.get_type_hints (with __globals__) read of a product function.
                return _link().request("getattr", [self, name])
            if kind in _SEEN_AS and name == "__code__":
                return _stand_in_code(self)
            if kind in _SEEN_AS and name in _FUNCTION_INTERNALS:
                raise _refuse(f"the property introspects product {kind} {_label(self)} ({name})")
            if kind == "class" and name == "__annotations__":
                # What typing.get_type_hints (and Hypothesis' builds) read of anything that
                # is not a class to them: the product's own evaluation of the class's hints.
                return _op("hints", self)
            if kind == "class" and name not in _CLASS_OWN and name[:4] != "__pw":
                # A class's dunder read by name is the product class's own (Base.__init__(self,
                # ...) in a test's subclass, Color.__members__, Base.__mro__); the protocol
                # methods Python calls on the handle itself are found on its type, never here.
                return _link().request("getattr", [self, name])
            if kind != "method" or name not in _METHOD_PARTS:
                try:
                    return object.__getattribute__(self, name)
                except AttributeError:
                    if kind == "class" or name in _FUNCTION_INTERNALS or name[:4] == "__pw":
                        raise
                # A dunder someone set on the product object itself (funcy's
                # func.__original__), never one of its type's protocol: asked there.
                return _link().request("own", [self, name])
        if name[:2] != "__" and _calls_it(name, sys._getframe(1)):
            return _MethodCall(self, name)
        return _link().request("getattr", [self, name])

    def __setattr__(self, name: str, value: Any) -> None:
        _link().request("setattr", [self, name, value])

    def __delattr__(self, name: str) -> None:
        _link().request("delattr", [self, name])

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return _link().request("call", [self, *args], kwargs)

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[Any, ...]:
        # A class statement of the test's on a product class: the class is made in the
        # product (``_Subclassing``).
        if object.__getattribute__(self, "_pw_kind") != "class":
            raise _refuse("the property subclasses a product object that is no class")
        return (_base_marker(self),)

    def __repr__(self) -> str:
        try:
            return str(_op("repr", self))
        except ProductFailure:
            return f"<product {object.__getattribute__(self, '_pw_type')} (no answer)>"

    def __str__(self) -> str:
        return str(_op("str", self))

    def __format__(self, spec: str) -> str:
        return str(_op("format", self, spec))

    def __len__(self) -> int:
        return int(_op("len", self))

    def __hash__(self) -> int:
        return int(_op("hash", self))

    def __bool__(self) -> bool:
        return bool(_op("bool", self))

    def __iter__(self) -> Any:
        found = _op("iter", self)
        drain = _drained_by(sys._getframe(1)) if type(found) is Handle else None
        return found if drain is None else _Drained(found, drain in ("set", "frozenset"))

    def __next__(self) -> Any:
        return _op("next", self)

    def __reversed__(self) -> Any:
        return _op("reversed", self)

    def __contains__(self, item: Any) -> bool:
        return bool(_op("contains", self, item))

    def __getitem__(self, key: Any) -> Any:
        return _op("getitem", self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _op("setitem", self, key, value)

    def __delitem__(self, key: Any) -> None:
        _op("delitem", self, key)

    def __enter__(self) -> Any:
        return _op("enter", self)

    def __exit__(self, *exc: Any) -> Any:
        if len(exc) == 3 and isinstance(exc[2], types.TracebackType):
            # The traceback stays here (its frames are the test's): the product's context
            # manager gets a stand-in made there with each entry's file, line and function
            # (funcy's log_errors prints it; contextlib's gen.throw takes it).
            entries = [[f.filename, f.lineno or 0, f.name] for f in traceback.extract_tb(exc[2])]
            return _op("exit_traced", self, exc[0], exc[1], entries[-32:])
        return _op("exit", self, *exc)

    def __int__(self) -> int:
        return int(_op("int", self))

    def __bytes__(self) -> bytes:
        found = _op("bytes", self)
        if type(found) is not bytes:
            kind = object.__getattribute__(self, "_pw_type")
            raise TypeError(f"cannot convert '{kind}' object to bytes")
        return found

    def __float__(self) -> float:
        return float(_op("float", self))

    def __index__(self) -> int:
        return int(_op("index", self))

    def __round__(self, *args: Any) -> Any:
        return _op("round", self, *args)

    def __dir__(self) -> Any:
        return list(_op("dir", self))

    def __instancecheck__(self, obj: Any) -> bool:
        return bool(_op("isinstance", obj, self))

    def __subclasscheck__(self, cls: Any) -> bool:
        return bool(_op("issubclass", cls, self))

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Pickled where it lives (parse's test_pickling_bug_110: pickle.dumps(p) must not
        # raise): the product's own pickle, which only the product process ever loads.
        data = _op("pickle", self, protocol if type(protocol) is int else 4)
        if type(data) is not bytes:
            raise _fail(ProductUnreadable, "a pickle of a product object that is no bytes")
        return (_load_in_product, (data,))

    def __copy__(self) -> Any:
        return _op("copy", self)

    def __deepcopy__(self, memo: Any) -> Any:
        return _op("deepcopy", self)


def _load_in_product(data: bytes) -> Any:
    """A product object pickled here (``Handle.__reduce_ex__``), loaded again: in the product
    process, from the bytes it made, as a new product object."""
    if type(data) is not bytes:
        raise TypeError("a product pickle is bytes")
    return _op("unpickle", data)


def _binary(name: str) -> tuple[Any, Any]:
    def forward(self: Handle, other: Any) -> Any:
        return _op(name, self, other)

    def reflected(self: Handle, other: Any) -> Any:
        return _op(name, other, self)

    return forward, reflected


for _name in BINARY_OPS:
    _forward, _reflected = _binary(_name)
    setattr(Handle, f"__{_name}__", _forward)
    setattr(Handle, f"__r{_name}__", _reflected)


def _compare(name: str) -> Any:
    def compare(self: Handle, other: Any) -> Any:
        if issubclass(type(other), type) and _refused_class(other):
            # One of the oracle's classes cannot cross; no product object equals one (as
            # in one process, ``typing`` asks ``arg in (Any, NoReturn, ...)`` of every
            # annotation): Python falls back to identity.
            return NotImplemented
        return _op(name, self, other)

    return compare


for _name in BINARY_OPS:
    # In place, by the product's own protocol (h11's ``buffer += data`` on its __iadd__).
    setattr(
        Handle, f"__i{_name}__", (lambda op: lambda self, other: _op(op, self, other))(f"i{_name}")
    )
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Handle, f"__{_name}__", _compare(_name))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(Handle, f"__{_name}__", (lambda op: lambda self: _op(op, self))(_name))
Handle.__hash__ = Handle.__dict__["__hash__"]  # type: ignore[method-assign]  # kept with __eq__


def _zone_getattribute(self: Any, name: str) -> Any:
    if name in ZONE_METHODS:  # what a datetime asks of its zone: one request each
        return lambda dt: _op("zone", self, name, dt)
    return Handle.__getattribute__(self, name)


ZoneHandle: type = type(
    "Handle",
    (datetime.tzinfo,),
    {
        **{k: v for k, v in vars(Handle).items() if k not in ("__dict__", "__weakref__", *_OWN)},
        "__slots__": Handle.__slots__,
        "__getattribute__": _zone_getattribute,
    },
)
"""A product zone (dateutil's ``tzutc()``, pytz's): a ``Handle`` that is a ``tzinfo``, so an
oracle datetime holds it; what the datetime asks of it (``utcoffset``...) is a request."""


def _descriptor_get(self: Any, instance: Any, owner: Any = None) -> Any:
    # The owner is one of the test's classes, which stays here: the product's descriptor
    # gets None for it (a class access passes no instance either).
    return _op("get", self, instance, None)


def _descriptor_set(self: Any, instance: Any, value: Any) -> None:
    _op("set", self, instance, value)


def _descriptor_delete(self: Any, instance: Any) -> None:
    _op("delete", self, instance)


def _descriptor_set_name(self: Any, owner: Any, name: str) -> None:
    # The class statement of the test's that holds it names it (cachetools' cachedmethod
    # keeps the name, and refuses to work without it); the owner stays here, as for __get__.
    _op("set_name", self, name)


DescriptorHandle: type = type(
    "Handle",
    (Handle,),
    {"__slots__": (), "__get__": _descriptor_get, "__set_name__": _descriptor_set_name},
)  # fmt: skip
DataDescriptorHandle: type = type(
    "Handle",
    (Handle,),
    {"__slots__": (), "__get__": _descriptor_get, "__set__": _descriptor_set,
     "__delete__": _descriptor_delete, "__set_name__": _descriptor_set_name},
)  # fmt: skip
"""A product descriptor (funcy's ``cached_property``) in one of the test's classes: Python's
attribute lookup here asks it, with the test's instance, as it would in one process (a data
descriptor before the instance's own attributes)."""


def _function_get(self: Any, instance: Any, owner: Any = None) -> Any:
    # A product function in a test's class is a method there, as in one process (funcy's
    # func_partial): bound here, called with the instance as its first argument.
    return self if instance is None else types.MethodType(self, instance)


FunctionHandle: type = type("Handle", (Handle,), {"__slots__": (), "__get__": _function_get})
HANDLE_TYPES = {Handle, ZoneHandle, DescriptorHandle, DataDescriptorHandle, FunctionHandle}


def parametrize_id(value: Any) -> str | None:
    """What pytest names a parametrize value by when it is a product enum member
    (``Style.COMPACT``: its ``str``) or a product function (its ``__name__``), as in one
    process; None for any other (pytest's own rule: a handle is named by its place,
    ``style0``, and so is the object in one process). docstring_parser's
    ``test_compose[RenderingStyle.COMPACT-expected0]`` was not found isolated."""
    if type(value) not in HANDLE_TYPES:
        return None
    try:
        if type(value) is FunctionHandle:
            name = getattr(value, "__name__", None)
            return name if type(name) is str else None
        if _op("isinstance", value, enum.Enum) is True:
            text = str(value)
            return text if type(text) is str else None
    except (AttributeError, TypeError, ValueError, IsolationRefused, ProductFailure):
        return None
    return None


"""Every class of the oracle's handles (with each ``_anchor`` made: ``type(obj) in``)."""
_HANDLE_KINDS = {
    "tzinfo": ZoneHandle, "descriptor": DescriptorHandle, "data-descriptor": DataDescriptorHandle,
    "function": FunctionHandle,
}  # fmt: skip


def _send(obj: Any) -> Any:
    """The tagged form of a non-plain object the oracle sends: what the product gave out
    (by the number the process serving this property knows it by), the interpreter's own
    built-ins (by name), and otherwise a handle the oracle gives out; a class, a module,
    code or a frame of the oracle's is refused."""
    tagged = _tagged(obj)
    if tagged[0] == "h":
        return ["h", _current(tagged[1])]
    return tagged


def _tagged(obj: Any) -> Any:
    if type(obj) in _VIEW_TYPES:
        obj = _VIEW_OF[obj]  # a class standing for a product class: the class itself
    if type(obj) in HANDLE_TYPES:
        return ["h", object.__getattribute__(obj, "_pw_id")]
    if type(obj) in REBUILT_TYPES or type(obj) is ProductAlias:
        number = _REBUILT_HANDLES.get(id(obj))
        if number is not None and _REBUILT.get(number) is obj:
            return ["h", number]  # the product's own, again
        parts = rebuilt_parts(obj, _send)
        if parts is not None:
            return ["rbo", _give(obj)[1], *parts]
    if type(obj) is ProxyModule:
        return ["h", _module_dict(obj)["__pw_handle__"]]
    if issubclass(type(obj), type) and "__pw_handle__" in _OWN_DICT(obj):
        return ["h", _OWN_DICT(obj)["__pw_handle__"]]
    own = getattr(obj, "__dict__", None) if isinstance(obj, BaseException) else None
    if type(own) is dict and own.get(FROM_PRODUCT) is True and type(own.get("__pw_exc__")) is int:
        return ["h", own["__pw_exc__"]]  # one the product raised or handed over: its own
    name = getattr(obj, "__name__", None)
    if type(name) is str and getattr(builtins, name, None) is obj:
        return ["bt", name]
    kind = type(obj)
    if kind.__module__ == "builtins" and isinstance(obj, Exception):
        return ["bxi", kind.__name__, encode(obj.args, _send)]
    if _test_exception_class(obj):
        return _exception_mirror(obj)
    named = standard_class_name(obj)
    if named is not None:
        return ["sc", *named]  # resolved there (the product's _standard_class)
    if _test_exception_class(kind) and is_plain(obj.args):
        # One of its instances: an instance of the mirror there, this one again when sent back.
        return ["oxe", _exception_mirror(kind), encode(obj.args, _send), _give(obj)[1]]
    if kind is types.ModuleType and _standard_module(obj):
        return ["sm", obj.__name__]  # os.path handed to simpleeval: the product's own os.path
    member = standard_member(obj)
    if member is not None:
        return ["se", *member]  # re.IGNORECASE, socket.AF_INET6: the product's own member
    if kind is types.MappingProxyType:
        # A read-only view of a dict (a class's __dict__, funcy's empty(A.__dict__)): a
        # view of a copy there, its values crossing as every value does.
        return ["mp", encode(dict(obj), _send)]
    if isinstance(obj, tuple) and _plain_namedtuple(kind):
        # A namedtuple of the test's: a namedtuple there (tabulate's rows, voluptuous'
        # tuple schemas), its values crossing as every value does.
        values = encode(tuple(obj), _send)
        return ["ont", _give(kind)[1], kind.__name__, list(kind._fields), values, _give(obj)[1]]
    owner = getattr(obj, "__self__", None) if kind is types.BuiltinFunctionType else None
    if owner is not None and type(owner) is types.ModuleType and _standard_module(owner):
        name = getattr(obj, "__name__", None)
        if type(name) is str and getattr(owner, name, None) is obj:
            # A C function of the standard library (operator.add handed to funcy's curry):
            # the product's own there, whose signature inspect can read.
            return ["sf", owner.__name__, name]
    if kind is types.FunctionType and _standard_function(obj):
        # A Python function of the standard library (re.match handed to glom's Regex, which
        # compares it with its own re.match): the product's own there, as in one process.
        return ["sf", obj.__module__, obj.__name__]
    if isinstance(obj, type) and _sendable_class(obj):
        # One of the test's classes handed to product code (a registry, a schema, a
        # decorator): a class there that stands for it ("A test's class handed over").
        module = str(getattr(obj, "__module__", "") or "")[:200]
        return ["ocl", _give(obj)[1], str(obj.__qualname__)[:200], module]
    if isinstance(obj, _NOT_GIVEN):
        what = "class" if issubclass(type(obj), type) else kind.__name__
        label = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or ""
        raise _refuse(f"cannot send {what} {str(label)[:80]} of the oracle to the product")
    return _give(obj)


# -- one product state per property: what the oracle keeps across properties ---------------

_RECIPES: dict[int, tuple[str, int, str]] = {}
"""How the oracle came by a product object a property's process gave out: ``("import", 0,
name)`` or ``("getattr", the owner's number, name)``. A later property's process never gave
that number out; it gets the same object by the same steps (``_current``)."""
_MOVED: dict[int, int] = {}
"""An earlier property's handle -> the number this property's process gave the same object
(cleared at each property)."""
_STEPS = frozenset({"import", "getattr", "own"})


def next_property(link: _Link) -> None:
    """A property starts: the product process that serves it is forked from the state the
    import left (sandbox/_inside/_product.py ``_next_property``); what the oracle held in
    step with the last one's containers is let go."""
    _PENDING.clear()  # a read the last test never called: not asked of the next process
    generation = link.request("reseed", [])
    _MOVED.clear()
    _LIVE.held.clear()
    if type(generation) is int and generation >= 0:
        ISOLATION["generation"] = generation
    for key, value in list(_MIRRORS):
        # A test's patch of a shared module that outlives one test (a fixture several
        # share): made again in each later test's process, until it is undone.
        try:
            link.request("mirror", [*key, value])
        except Exception as exc:
            why = f"{type(exc).__name__}: {str(exc)[:80]}"
            what = f"a fixture's patch of {key[1]} cannot be made again"
            raise _refuse(f"{what}, {_UNSHARED} ({why})") from None
    for (_, name), (module, value) in list(_SHARED_PATCHES.items()):
        # A fixture several tests share patched a product module while the first of them
        # ran: made again in each later one's process, until a later set of the same
        # attribute (its teardown) replaces it.
        if value is _DELETED:
            link.request("delattr", [module._pw_module(), name])
        else:
            link.request("setattr", [module._pw_module(), name, value])


def _live_number(number: int) -> bool:
    """Whether the process serving this property knows ``number``: given out by it, or by
    the process that imported the product (every property's process is forked from it)."""
    return number // HANDLE_SPAN in (0, ISOLATION["generation"])


def _number_of(value: Any) -> int | None:
    """The product's number for a value that stands for a product object, else None."""
    kind = type(value)
    if kind in HANDLE_TYPES:
        return object.__getattribute__(value, "_pw_id")  # type: ignore[no-any-return]
    if kind is int:
        return None
    if kind in _VIEW_TYPES:
        return object.__getattribute__(_VIEW_OF[value], "_pw_id")  # type: ignore[no-any-return]
    if kind is ProxyModule:
        return _module_dict(value).get("__pw_handle__")  # type: ignore[no-any-return]
    if kind in REBUILT_TYPES or kind is ProductAlias:
        number = _REBUILT_HANDLES.get(id(value))
        return number if number is not None and _REBUILT.get(number) is value else None
    return None


def _remember(op: str, args: list[Any], value: Any) -> None:
    got = _number_of(value)
    if got is None or got < HANDLE_SPAN or got in _RECIPES:
        return
    if op == "import" and args and type(args[0]) is str:
        _RECIPES[got] = ("import", 0, args[0])
        return
    owner = args[0] if args and type(args[0]) is int else _number_of(args[0] if args else None)
    if owner is not None and len(args) > 1 and type(args[1]) is str:
        _RECIPES[got] = (op, owner, args[1])


def _current(number: int) -> int:
    """``number`` as the process serving this property knows the same object.

    A handle an earlier property's process gave out (a module first imported then, a class
    read then and kept by a module-level name or a fixture) is asked for again by the steps
    that gave it (``_RECIPES``); a product object made during an earlier property (a
    module-scoped fixture's value) has no such steps and does not exist in this property's
    process: refused, so the property runs in-process, named."""
    if _live_number(number):
        return number
    moved = _MOVED.get(number)
    if moved is not None:
        return moved
    recipe = _RECIPES.get(number)
    kept = _HANDLES.get(number)
    if recipe is None:
        what = object.__getattribute__(kept, "_pw_type") if kept is not None else "object"
        raise _refuse(
            f"the property uses a product {what} made during an earlier test (each test "
            "meets the product as its import left it)"
        )
    how, owner, name = recipe
    count = len(_HANDLES)
    if how == "import":
        found = _link().request("import", [name])
    else:
        holder = _HANDLES.get(owner) or _handle(owner, "object", False)
        found = _link().request(how, [holder, name])
    fresh = _number_of(found)
    if fresh is None:
        raise _refuse(f"the product's {name} is no longer what an earlier test read")
    _MOVED[number] = fresh
    if kept is not None and len(_HANDLES) > count and _HANDLES.get(fresh) is found:
        _HANDLES[fresh] = kept  # made just now: the object the test holds stays the one
    if number in _REBUILT and fresh not in _REBUILT:
        _REBUILT[fresh] = _REBUILT[number]
    return fresh


# -- the oracle's objects, given out: callbacks ----------------------------------------------

_GIVEN: dict[int, Any] = {}  # the oracle's handle -> its object (kept alive: never reused)
_GIVEN_IDS: dict[int, int] = {}  # id(object) -> its handle: one object, one handle
_NOT_GIVEN = (type, types.ModuleType, types.CodeType, types.FrameType, types.TracebackType)
"""What the product never gets a handle to: a class would be an oracle type the product's
``isinstance`` cannot use; the others are the oracle's internals."""
_OPAQUE = (
    types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.BuiltinMethodType,
    types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType, types.CellType,
    types.MethodWrapperType, types.WrapperDescriptorType, types.MethodDescriptorType,
    types.ClassMethodDescriptorType, types.GetSetDescriptorType, types.MemberDescriptorType,
    staticmethod, classmethod, property, *_NOT_GIVEN,
)  # fmt: skip
"""Whose attributes the product never reads: a function's globals, closure and code, a
generator's frame, a method's ``__self__`` lead to the property and the test machinery. A
name such an object does not have is answered ``AttributeError``, as the object would (a
probe such as jinja2's sandbox ``getattr(f, "unsafe_callable", False)``); a name it has is
an overreach."""
_BUILTIN_CODE = (
    types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
    types.MethodWrapperType, types.ClassMethodDescriptorType,
)  # fmt: skip
"""C functions and methods: no code, globals or closure of the oracle's behind them, so a
dunder name they lack is answered as they would (``AttributeError``), not as an overreach."""
_INTERNALS = frozenset(
    {"__dict__", "__class__", "__globals__", "__code__", "__closure__", "__func__", "__self__",
     "__mro__", "__bases__", "__base__", "__subclasses__", "__builtins__", "__defaults__",
     "__kwdefaults__", "__wrapped__", "__traceback__", "__context__", "__cause__",
     "__objclass__", "__getattribute__", "__reduce__", "__reduce_ex__", "__init__", "__new__",
     "__module__", "__dir__", "__getstate__", "__init_subclass__", "__weakref__", "__slots__",
     "__annotations__", "__annotate__", "__type_params__", "__spec__", "__loader__"}
)  # fmt: skip
"""Dunder names whose read is an attempt on the oracle's internals (a failure of the
example); any other dunder name is answered ``AttributeError`` (a probe such as
``getattr(x, "__array__", None)``)."""
_MACHINERY = frozenset({"pytest", "_pytest", "pluggy", "hypothesis", "_hypothesis_pytestplugin"})
_CALLBACKS: dict[str, Any] = {
    "call": lambda obj, *args, **kwargs: obj(*args, **kwargs),
    "iter": iter, "next": next, "len": len, "getitem": lambda obj, key: obj[key],
    "setitem": operator.setitem, "delitem": operator.delitem,
    "contains": lambda obj, item: item in obj, "bool": bool, "repr": repr, "str": str,
    "hash": hash, "fspath": os.fspath, "zone": zone_answer, "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "enter": lambda obj: type(obj).__enter__(obj),
    "exit": lambda obj, *exc: type(obj).__exit__(obj, *exc),
    "get": lambda obj, instance, owner=None: type(obj).__get__(obj, instance, owner),
    "set": lambda obj, instance, value: type(obj).__set__(obj, instance, value),
    "delete": lambda obj, instance: type(obj).__delete__(obj, instance),
    # A comparison the product asks of an oracle object: the object's own method, its
    # NotImplemented goes back (the product's _method says why).
    **{op: (lambda name: lambda a, b: getattr(type(a), name)(a, b))(f"__{op}__")
       for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    # An operator product code applies to a test's object: its own method, run here.
    **{op: (lambda name: lambda a, *b: getattr(type(a), name)(a, *b))(f"__{op}__")
       for op in ARITHMETIC},
}  # fmt: skip
"""Every operation the product may ask of an oracle object (and ``getattr``, checked)."""


_VALUE_MODULES = frozenset(
    {"datetime", "decimal", "fractions", "collections", "collections.abc", "enum", "numbers",
     "pathlib", "types", "uuid", "ipaddress", "typing", "zoneinfo"}
)  # fmt: skip
"""Where a standard-library class the product names may be the oracle's own: modules of
value types, whose classes a test may call without running anything on the product's word."""


_VALUE_MODULE_NAMES = _VALUE_MODULES | {
    "math", "cmath", "operator", "string", "re", "itertools", "functools", "json", "posixpath",
    "ntpath", "textwrap", "statistics", "random", "copy", "heapq", "bisect",
}  # fmt: skip
"""The standard-library modules a product hands the test that are the oracle's own there."""


_NAMEDTUPLE_OWN = frozenset(
    {"__doc__", "__slots__", "_fields", "_field_defaults", "__new__", "_make", "_replace",
     "__repr__", "_asdict", "__getnewargs__", "__match_args__", "__module__",
     "__annotations__", "__orig_bases__", "__qualname__", "__firstlineno__",
     "__static_attributes__"}
)  # fmt: skip


def _plain_namedtuple(cls: Any) -> bool:
    """A class ``collections.namedtuple`` (or ``typing.NamedTuple``) made, with nothing of
    the test's own in it (no method a mirror would lack)."""
    fields = _OWN_DICT(cls).get("_fields") if issubclass(type(cls), type) else None
    if cls.__bases__ != (tuple,) or type(fields) is not tuple or "_make" not in _OWN_DICT(cls):
        return False
    return set(_OWN_DICT(cls)) <= _NAMEDTUPLE_OWN | set(fields) and not _machinery(cls)


def _test_exception_class(obj: Any) -> bool:
    """An exception class of the test's (``class CustomError(Exception)``), which crosses as
    a mirror (``_exception_mirror``); never one of the test machinery's."""
    return (
        issubclass(type(obj), type)
        and issubclass(obj, Exception)
        and obj.__module__ != "builtins"
        and "__pw_handle__" not in _OWN_DICT(obj)
        and not _machinery(obj)
    )


def _exception_mirror(cls: type) -> list[Any]:
    """``["oxc", handle, name, qualname, bases]``: one of the test's exception classes as
    the product gets it, a class made there once per handle with the same name on the same
    bases (built-in ones by name, the product's own, the test's mirrored in turn; a
    standard-library base as its nearest built-in), so ``retry_if_exception_type(MyError)``,
    ``except MyError`` and ``raise MyError(...)`` work in product code. Only its name crosses:
    no method or attribute of the test's class does; an instance raised in the product is an
    instance of the test's real class here (``_exception``), and the mirror sent back is the
    test's class again."""
    bases: list[Any] = []
    for base in cls.__bases__:
        if _test_exception_class(base):
            tagged = _exception_mirror(base)
        elif "__pw_handle__" in _OWN_DICT(base):
            tagged = ["h", _OWN_DICT(base)["__pw_handle__"]]
        elif issubclass(base, BaseException):
            builtin = next(c for c in _OWN_MRO(base) if c.__module__ == "builtins")
            tagged = ["bt", builtin.__name__]
        else:
            continue  # a mixin of the test's: its methods stay here
        if tagged not in bases:
            bases.append(tagged)
    return ["oxc", _give(cls)[1], cls.__name__, cls.__qualname__, bases or [["bt", "Exception"]]]


def _refused_class(cls: type) -> bool:
    """A class of the oracle's that ``_send`` refuses (not a built-in by name, not a proxy)."""
    if "__pw_handle__" in _OWN_DICT(cls):
        return False
    return getattr(builtins, cls.__name__, None) is not cls


def _machinery(cls: type) -> bool:
    return any(str(getattr(c, "__module__", "")).split(".")[0] in _MACHINERY for c in _OWN_MRO(cls))


def _give(obj: Any) -> list[Any]:
    """``["oh", handle, operations]``: an oracle object the product may operate on."""
    number = _GIVEN_IDS.get(id(obj))
    if number is None or _GIVEN.get(number) is not obj:
        number = len(_GIVEN) + 1
        _GIVEN[number] = obj
        _GIVEN_IDS[id(obj)] = number
    kind = type(obj)
    offers = ["call"] if callable(obj) else []
    for op in ("iter", "next", "len", "getitem", "setitem", "delitem", "contains", "fspath",
               "enter", "exit"):  # fmt: skip
        if getattr(kind, f"__{op}__", None) is not None:
            offers.append(op)
    describes = type(obj) is property or not isinstance(obj, (*_OPAQUE, *_BUILTIN_CODE))
    if describes and getattr(kind, "__get__", None) is not None:
        # A descriptor of the test's (a property) that product code calls as one (funcy's
        # wrap_prop: prop.__get__(instance, type)): its own methods, run here.
        offers += [op for op in ("get", "set", "delete") if hasattr(kind, f"__{op}__")]
    offers += abcs_of(obj)
    if not _machinery(kind):
        # copy.copy there of what holds it (addict's deepcopy of a Dict holding a test's
        # object, cachetools' of a cache holding a test's timer function): copied here, as
        # in one process (a function is itself again; a generator cannot be, here as there).
        offers += ["copy", "deepcopy"]
        offers += [op for op in ARITHMETIC if getattr(kind, f"__{op}__", None) is not None]
    if getattr(kind, "__hash__", None) is not None:
        offers.append("hash")
    if isinstance(obj, datetime.tzinfo):
        offers.append("tzinfo")  # its stand-in there is a tzinfo (a datetime's zone)
    shape = _shape(obj)
    if kind is types.GeneratorType:
        shape = {"seen_as": "generator"}
    if shape is None and (_test_class(kind) or _dataclass_instance(obj)):
        # Its class, by a handle: a proxy class of its own there, so type(obj)() makes one
        # more of the test's (dpath's type(obj)() on a test's mapping) and isinstance
        # between two of them holds.
        shape = {"cls": [_give(kind)[1], kind.__qualname__[:200]]}
        if _dataclass_instance(obj):
            # What dataclasses.fields() and is_dataclass() read there (tabulate's rows):
            # the field names and their annotations as text; the values stay here.
            fields = [[f.name, _annotation_text(f.type)] for f in dataclasses.fields(obj)]
            shape["dataclass"] = fields
    names = _class_names(kind)
    if names is not None:
        return ["oh", number, offers, shape, names]
    return ["oh", number, offers] + ([shape] if shape is not None else [])


_OWN_ROOT = __name__.split(".")[0]


def _class_names(kind: type) -> list[str] | None:
    """``[__name__, __qualname__, __module__]`` of the class of an object given to the
    product: its proxy class there bears them, so ``type(x).__name__`` in an error message
    or a registry keyed by class name reads as in one process (and no proxy's own name
    tells product code that it is judged). None for the oracle's own classes."""
    names = [getattr(kind, attr, None) for attr in ("__name__", "__qualname__", "__module__")]
    texts = [n for n in names if type(n) is str and 0 < len(n) <= 200]
    if len(texts) != 3 or texts[2].split(".")[0] == _OWN_ROOT:
        return None
    return texts


def _test_class(cls: Any) -> bool:
    """A class of the test's (or of a library the test uses): none of the standard
    library's, the test machinery's or the product's."""
    module = str(getattr(cls, "__module__", "") or "")
    return (
        issubclass(type(cls), type)
        and module.split(".")[0] not in sys.stdlib_module_names
        and module != "builtins"
        and "__pw_handle__" not in _OWN_DICT(cls)
        and not _machinery(cls)
    )


def _sendable_class(cls: type) -> bool:
    """A plain class of the test's: made by ``type`` (or ``ABCMeta``), no exception (those
    cross as mirrors), no test case, nothing of the test machinery's."""
    import unittest

    return (
        type(cls) in (type, abc.ABCMeta)
        and _test_class(cls)
        and not issubclass(cls, (BaseException, unittest.TestCase))
    )


_RUN_BY_PYTEST = ("test", "setup", "teardown")
"""Names pytest runs of a class (``test_*``, ``setup_method``...): never set by the product."""


def _class_settable(cls: type, name: str) -> bool:
    """Whether product code may set ``name`` on a plain class of the test's handed over
    (funcy's ``monkey(A)`` adds a method): a new plain name only, never one pytest would
    run, and never on a class that holds tests (a patch would otherwise put its own function
    where a later test method is looked up)."""
    return (
        _sendable_class(cls)
        and not _holds_tests(cls)
        and not hasattr(cls, name)
        and not name.lower().startswith(_RUN_BY_PYTEST)
    )


def _holds_tests(cls: type) -> bool:
    """A class pytest may collect, or one with a name pytest runs."""
    return cls.__name__.lower().startswith("test") or any(
        str(n).lower().startswith(_RUN_BY_PYTEST) for c in cls.__mro__ for n in vars(c)
    )


def _dataclass_instance(obj: Any) -> bool:
    return (
        not issubclass(type(obj), type)
        and dataclasses.is_dataclass(obj)
        and not _machinery(type(obj))
        and "__pw_handle__" not in _OWN_DICT(type(obj))
    )


_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08
_CO_KINDS = ((0x200, "agen"), (0x80, "async"), (0x20, "gen"))


def _shape(obj: Any) -> dict[str, Any] | None:
    """The parameters of one of the test's functions (or bound methods: ``self`` left out)
    and what kind of function it is, so the product can ask ``inspect`` about it
    (``inspect.signature``, ``iscoroutinefunction``: funcy's and tenacity's decorators do)
    without reading its code: names and counts only, never a default's value, the code,
    its globals or closure. None: not a plain function of the test's."""
    func = obj.__func__ if type(obj) is types.MethodType else obj
    if type(func) is not types.FunctionType or _machinery_code(func):
        return None
    code = func.__code__
    names, count, kwonly = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    at = count + kwonly
    varargs = names[at] if code.co_flags & _CO_VARARGS else None
    at += varargs is not None
    varkw = names[at] if code.co_flags & _CO_VARKEYWORDS else None
    pos, posonly, defaults = list(names[:count]), code.co_posonlyargcount, func.__defaults__
    if func is not obj and pos:  # a bound method: its first parameter is taken
        pos, posonly = pos[1:], max(posonly - 1, 0)
    kind = next((k for flag, k in _CO_KINDS if code.co_flags & flag), "def")
    shown = min(len(defaults or ()), len(pos))
    kwdefaults = func.__kwdefaults__ or {}
    return {
        "name": func.__name__, "qualname": func.__qualname__, "kind": kind, "pos": pos,
        "posonly": posonly, "kwonly": list(names[count : count + kwonly]), "varargs": varargs,
        "varkw": varkw, "defaults": shown, "kwdefaults": sorted(kwdefaults),
        # A default that is plain data goes by value (funcy's call.x of `lambda x=11:`);
        # any other stays the oracle's (the marker there).
        "values": [_default(v) for v in (defaults or ())[len(defaults or ()) - shown :]],
        "kwvalues": {k: _default(v) for k, v in kwdefaults.items()},
    }  # fmt: skip


def _default(value: Any) -> Any:
    return ["v", encode(value, _send)] if is_plain(value) else None


_NEVER_OWN = frozenset({"__pytest_wrapped__", "__wrapped__", "__signature__", "__dict__"})
"""Dunders a function's ``__dict__`` may hold that stay the oracle's (the machinery reads
them, or the description answers them)."""


def _own_attribute(obj: Any, name: str) -> bool:
    """A plain attribute someone set on one of the oracle's functions (``func.pattern``):
    readable, as the product set it or as the property did."""
    if type(obj) is not types.FunctionType or name[:4] == "__pw" or _machinery_code(obj):
        return False
    if name[:1] == "_" and not (name[:2] == name[-2:] == "__" and name not in _NEVER_OWN):
        return False
    return name in vars(obj)  # typing_inspect reads a test's new_type.__supertype__


_DESCRIBED = frozenset(
    {"__name__", "__qualname__", "__module__", "__doc__", "__wrapped__", "__dict__",
     "__annotations__"}
)  # fmt: skip
"""What ``functools.wraps`` and a decorator of the product's read of a function the oracle
hands it (funcy's ``@decorator``, tenacity's ``@retry`` on a test's function): answered by
``_described``, never the function's code, globals, closure or defaults."""
_DESCRIBABLE = (types.FunctionType, types.MethodType, types.BuiltinFunctionType)


def _described(obj: Any, name: str) -> Any:
    """A function's description as data: its names and docstring when they are text, the
    callable it wraps (a function or method, another handle), a copy of its own attributes
    that cross by value or as functions, its annotations with every value that would not
    cross (a class of the test's) as its name, a forward reference as text. A value the
    object lacks, or one that could only cross as something refused, is ``AttributeError``
    (the product's probe never selects the in-process fallback)."""
    value = getattr(obj, name)
    if name in ("__name__", "__qualname__", "__module__", "__doc__"):
        if value is None or type(value) is str:
            return value
    elif name == "__wrapped__":
        if isinstance(value, _DESCRIBABLE) and not _machinery_code(value):
            return value
    elif type(value) is dict:
        crossing = ((k, v) for k, v in value.items() if type(k) is str and not k.startswith("__pw"))
        if name == "__dict__":
            return {k: v for k, v in crossing if is_plain(v) or isinstance(v, _DESCRIBABLE)}
        return {k: v if is_plain(v) or _builtin(v) else _annotation_text(v) for k, v in crossing}
    raise AttributeError(name)


class AttributeView(collections.abc.MutableMapping):  # type: ignore[type-arg]
    """An instance's ``__dict__`` as product code gets it: its own attributes, read and
    written where they are (never a copy). Keys that are not plain names are the setattr
    rule's (an overreach)."""

    __slots__ = ("_pw_of",)

    def __init__(self, of: Any) -> None:
        self._pw_of = of

    def __getitem__(self, key: Any) -> Any:
        return vars(self._pw_of)[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        vars(self._pw_of)[key] = value

    def __delitem__(self, key: Any) -> None:
        del vars(self._pw_of)[key]

    def __iter__(self) -> Any:
        return iter(list(vars(self._pw_of)))

    def __len__(self) -> int:
        return len(vars(self._pw_of))


_VIEWS: dict[int, AttributeView] = {}  # id(instance) -> its view (which keeps it alive)


def _attribute_view(obj: Any) -> AttributeView:
    view = _VIEWS.get(id(obj))
    if view is None or view._pw_of is not obj:
        view = _VIEWS[id(obj)] = AttributeView(obj)
    return view


def _plain_instance(obj: Any) -> bool:
    """An instance of the test's own classes (every class of it but ``object`` defined
    outside the standard library, the test machinery and the product), with a ``__dict__``."""
    kind = type(obj)
    if isinstance(obj, (type, *_OPAQUE)) or type(getattr(obj, "__dict__", None)) is not dict:
        return False
    return not _machinery(kind) and all(
        c is object
        or (
            str(getattr(c, "__module__", "")).split(".")[0] not in sys.stdlib_module_names
            and "__pw_handle__" not in _OWN_DICT(c)
        )
        for c in _OWN_MRO(kind)
    )


_MACHINERY_WORDS = ("pw", "pytest", "hypothesis", "fixture", "unittest", "anyio", "asyncio")


def _documentable(obj: Any, text: Any) -> bool:
    """A test's function (none of the test machinery's) given a docstring that is text or
    None: nothing the oracle runs reads it."""
    plain = text is None or type(text) is str
    return plain and type(obj) is types.FunctionType and not _machinery_code(obj)


def _new_marker(obj: Any, name: str) -> bool:
    """A dunder or private name a decorator of the product's may set on a test's function
    (``__override__``, ``__final__``, parsimonious' ``@rule`` sets ``_rule`` on a visitor's
    method): one the function's type does not define (never ``__code__``, ``__dict__``,
    ``__wrapped__`` or any other the oracle reads), no name the test machinery reads
    (``__pytest_wrapped__``, ``_hypothesis_internal_use_settings``: no name with one of
    ``_MACHINERY_WORDS``), and a private one never on a test function itself, so it lands
    in the function's own attributes and changes nothing the oracle runs."""
    dunder = name[:2] == name[-2:] == "__" and len(name) > 4
    private = name[:1] == "_" and name[1:2].isalpha() and name.isidentifier()
    if isinstance(obj, type):
        # A marker on a plain class of the test's handed over (``typing.final`` and
        # overrides' ``@final`` set ``__final__``): a new dunder no class defines.
        return (
            dunder
            and _sendable_class(obj)
            and not _holds_tests(obj)
            and not hasattr(obj, name)
            and not any(word in name.lower() for word in _MACHINERY_WORDS)
            and name not in _INTERNALS
        )
    return (
        type(obj) is types.FunctionType
        and (dunder or (private and not obj.__name__.startswith("test")))
        and not any(word in name.lower() for word in _MACHINERY_WORDS)
        and name not in _INTERNALS
        and name not in _FUNCTION_INTERNALS
        and name not in _DESCRIBED
        and not hasattr(types.FunctionType, name)
        and not _machinery_code(obj)
    )


def _machinery_code(obj: Any) -> bool:
    """A function or method of the test machinery's (pytest, pluggy, Hypothesis)."""
    module = getattr(obj, "__module__", None)
    return type(module) is str and module.split(".")[0] in _MACHINERY


def _builtin(value: Any) -> bool:
    name = getattr(value, "__name__", None)
    return type(name) is str and getattr(builtins, name, None) is value


def _annotation_text(value: Any) -> str:
    name = getattr(value, "__qualname__", None) if issubclass(type(value), type) else None
    return name if type(name) is str else repr(value)[:200]


_MOCK_OWN = frozenset({"method_calls", "_mock_children", "_mock_return_value"})


def _mock_api(obj: Any, name: Any) -> bool:
    """Whether ``name`` is part of a ``unittest.mock`` mock's own interface (its record:
    ``called``, ``call_args_list``; its settings: ``return_value``, ``side_effect``; its
    methods: ``assert_*``, ``reset_mock``), not an attribute it stands in for."""
    mock = sys.modules.get("unittest.mock")
    if mock is None or type(name) is not str or not isinstance(obj, mock.NonCallableMock):
        return False
    return name in _MOCK_OWN or hasattr(type(obj), name)


def _overreach(link: _Link, obj: Any, name: str) -> dict[str, Any]:
    """A read the callbacks do not offer: the product gets ``AttributeError``, the call it
    serves fails once it returns."""
    why = f"the product read {name} of the oracle's {type(obj).__name__}"
    if link.pending is None:
        link.pending = _fail(ProductOverreach, why)
    return {"raise": {"bx": "AttributeError", "args": encode((name,), _send), "str": name}}


def _serve_callback(link: _Link, message: dict[str, Any]) -> dict[str, Any]:
    """The answer to one callback: the product's operation on an object the oracle gave out."""
    op, number = message.get("cb"), message.get("on")
    if type(number) is not int or number not in _GIVEN:
        raise WireError("a callback on no handle the oracle gave out")
    obj = _GIVEN[number]
    _LIVE.apply(message.get("sync"), _receive)  # what product code changed before asking
    memo = Memo()  # the product's containers it hands the callback, numbered as it did
    args = decode(message.get("args", ["l", []]), _receive, memo=memo)
    kwargs = decode(message["kwargs"], _receive, memo=memo) if "kwargs" in message else {}
    names = type(kwargs) is dict and all(type(k) is str for k in kwargs)
    if type(args) is not list or not names:
        raise WireError("a callback's arguments are not a list and a dict of names")
    kept = [(n, o, contents_of(o)) for n, o in enumerate(memo.objects) if type(o) in MUTABLE]
    reply = _callback_answer(link, op, obj, args, kwargs)
    if kept and "ok" in reply:
        # What the test's code changed in place of the containers the product handed it
        # (dpath's creator filling the product's dict): written back there, as a call's
        # changed arguments are here.
        back = [
            [n, encode(sendable_contents(o), _send, memo=memo)]
            for n, o, before in kept
            if changed_since(o, before)
        ]
        if back:
            reply["back"] = back
    return reply


def _callback_answer(
    link: _Link, op: Any, obj: Any, args: list[Any], kwargs: dict[str, Any]
) -> dict[str, Any]:
    try:
        if op in ("getattr", "setattr") and args and _mock_api(obj, args[0]):
            # A test's mock handed to product code (a patched time.sleep, a callback): its
            # record and its settings are the test's instruments, never the product's to
            # read or change (``reset_mock()`` before the one call a test counts).
            return _overreach(link, obj, f"{str(args[0])[:80]} (the mock's own)")
        if op == "getattr":
            name = str(args[0]) if len(args) == 1 and type(args[0]) is str else ""
            if name in _DESCRIBED and isinstance(obj, _DESCRIBABLE) and not _machinery_code(obj):
                return {"ok": encode(_described(obj, name), _send)}
            if not name or _machinery(type(obj)):
                return _overreach(link, obj, name[:80] or "?")
            if name in ("__module__", "__doc__") and not isinstance(obj, _DESCRIBABLE):
                # The name of the object's module, its docstring (text, as functools.wraps
                # copies them; an instance's is its class's).
                text = getattr(obj, name, None)
                if type(text) is not str:
                    if name == "__doc__":
                        return {"ok": None}
                    raise AttributeError(name)
                return {"ok": text}
            if name == "__dict__" and _plain_instance(obj):
                # What a product descriptor writes its value into (funcy's cached_property:
                # instance.__dict__[name] = value): the instance's own attributes, live.
                return {"ok": encode(_attribute_view(obj), _send)}
            if name in _INTERNALS and not hasattr(obj, name):
                # What the object itself would answer (funcy's curry asks a builtin for its
                # __code__, boltons' wrap_trace a namedtuple for its __dict__): it has none
                # to give, here as in one process.
                raise AttributeError(name)
            if name in _INTERNALS:
                return _overreach(link, obj, name[:80] or "?")
            if _own_attribute(obj, name):
                return _attribute_answer(vars(obj)[name])
            if isinstance(obj, type) and name[:1] != "_" and _sendable_class(obj):
                # A class attribute of a plain class of the test's handed over (glom's
                # target types, voluptuous' schema classes): read as an instance's is.
                return _attribute_answer(getattr(obj, name))
            if name[:2] == "__" or (isinstance(obj, _OPAQUE) and not hasattr(obj, name)):
                raise AttributeError(name)  # a probe, answered as the object would
            if isinstance(obj, _OPAQUE):
                return _overreach(link, obj, name[:80])
            return _attribute_answer(getattr(obj, name))
        if op == "setattr":
            # A decorator of the product's marking what it is handed (parse's with_pattern
            # sets func.pattern): a plain attribute of a function or an instance, no more.
            name = str(args[0]) if len(args) == 2 and type(args[0]) is str else ""
            settable = (
                type(obj) is types.FunctionType
                or not isinstance(obj, _OPAQUE)
                or (isinstance(obj, type) and _class_settable(obj, name))  # funcy's monkey(A)
            )
            if name == "__doc__" and _documentable(obj, args[1]):
                # A decorator of the product's writing a test's function's docstring
                # (docstring_parser's combine_docstrings): text, as in one process.
                obj.__doc__ = args[1]
                return {"ok": None}
            if _new_marker(obj, name):
                # typing's @override sets func.__override__ = True on a test's method: a
                # new attribute of the function's own, as the product set it.
                setattr(obj, name, args[1])
                return {"ok": None}
            if not name or name[:1] == "_" or not settable or _machinery(type(obj)):
                return _overreach(link, obj, f"{name[:80] or '?'} (to set it)")
            setattr(obj, name, args[1])
            return {"ok": None}
        if op not in _CALLBACKS or (kwargs and op != "call"):
            raise WireError(f"no such callback: {str(op)[:40]}")
        if op in ("setitem", "delitem") and (_machinery(type(obj)) or isinstance(obj, _OPAQUE)):
            return _overreach(link, obj, f"an item of it (to {op.removesuffix('item')} it)")
        if op in ("setitem", "delitem") and type(obj) is AttributeView:
            key = args[0] if args else None
            if type(key) is not str or key[:1] == "_":  # as a setattr: plain names only
                return _overreach(link, obj._pw_of, f"{str(key)[:80]} (to set it)")
        result = _CALLBACKS[op](obj, *args, **kwargs)
        if op in ("call", "getitem") and sys.getrefcount(result) > _RETURNED_ONLY:
            # A container the test's code keeps and hands out (cachetools' cachedmethod
            # calls ``lambda self: self.cache``): kept in step, as a read attribute is.
            return _attribute_answer(result)
        return {"ok": encode(result, _send)}
    except WireError:
        raise
    except BaseException as exc:
        return {"raise": _crossing(link, exc)}


_RETURNED_ONLY = 2
"""References a callback's result has when nothing of the test's keeps it: the serving
function's name for it and ``sys.getrefcount``'s argument."""


def _attribute_answer(value: Any) -> dict[str, Any]:
    """The product reads an attribute of a test's object: a container of plain data
    (cachetools' ``cachedmethod(lambda self: self.cache)`` with a test's ``dict``) is kept in
    step both ways, as a product attribute the test reads is, under a number of the
    oracle's (negative: never a product handle), so what product code puts in it is in the
    test's dict."""
    answer: dict[str, Any] = {"ok": encode(value, _send)}
    if type(value) in MUTABLE and is_plain(value) and not _interpreter_own(value):
        number = -_give(value)[1]
        answer["live"] = number
        _LIVE.keep(number, value)
    return answer


def _crossing(link: _Link, exc: BaseException, depth: int = 0) -> dict[str, Any]:
    """``_crossed`` with the exception's chain (``raise TryAgain from UnderlyingError``, or
    raised while handling one: tenacity unwraps ``__cause__``/``__context__``), four deep."""
    crossing = _crossed(link, exc)
    if depth < 4 and "abort" not in crossing:
        for key in ("__cause__", "__context__"):
            linked = getattr(exc, key, None)
            if isinstance(linked, Exception) and linked is not exc and not _machinery(type(linked)):
                crossing[key.strip("_")] = _crossing(link, linked, depth + 1)
        if exc.__suppress_context__:
            crossing["suppress"] = True
    return crossing


def _crossed(link: _Link, exc: BaseException) -> dict[str, Any]:
    """How an exception an oracle callback raised reaches the product: a product exception
    as itself; an ``Exception`` of the oracle's as its nearest built-in class, with the
    oracle's handle so that raised on it is the oracle's again; anything else (a
    ``BaseException`` only, the test machinery's, a refusal, a product failure) ends the
    call the product serves: the product gets ``OracleAbort`` and the oracle re-raises the
    original when that call returns."""
    own = vars(exc).get("__pw_exc__") if hasattr(exc, "__dict__") else None
    if type(own) is int:
        return {"h": own}
    if isinstance(exc, Exception) and not _machinery(type(exc)):
        base = next(c for c in _OWN_MRO(type(exc)) if c.__module__ == "builtins")
        try:
            text = str(exc)[:2000]
        except Exception:
            text = type(exc).__name__
        args = encode(exc.args, _send) if is_plain(exc.args) else None
        crossing = {"bx": base.__name__, "args": args, "str": text, "oracle": _give(exc)[1]}
        extras = exception_extras(exc)
        if extras:
            crossing["extras"] = encode(extras, _send)
        product = next((c for c in _OWN_MRO(type(exc)) if "__pw_handle__" in _OWN_DICT(c)), None)
        if product is not None:
            # One of the product's classes the test raised (voluptuous' validators raise
            # Invalid): an instance of that class there, so product code's `except` takes it.
            crossing["product"] = _OWN_DICT(product)["__pw_handle__"]
        if _test_exception_class(type(exc)):
            crossing["mirror"] = _exception_mirror(type(exc))  # raised there as a MyError
            # A library's (pytz's NonExistentTimeError, from the test's zone): the product's
            # own class of that name when it has the module loaded, so its `except` works.
            crossing["named"] = [type(exc).__module__, type(exc).__qualname__]
        return crossing
    if link.pending is None:
        link.pending = exc
    return {"abort": type(exc).__name__}


def _receive(tagged: list[Any]) -> Any:
    tag = tagged[0]
    if tag == "h" and 5 <= len(tagged) <= 7 and type(tagged[1]) is int and type(tagged[4]) is str:
        kind, of = tagged[4], None
        if len(tagged) in (6, 7) and type(tagged[5]) is int and kind in _CLASSED:
            _CLASS_OF[tagged[1]] = tagged[5]
            if len(tagged) == 7 and kind == "":
                of = _product_class(tagged[5], tagged[6])  # h11's type(event) is Response
        if len(tagged) == 6 and kind == "class":
            plain = _product_class(tagged[1], tagged[5])
            if plain is not None:
                return plain
        if kind.startswith("module:"):
            module = _proxy_module(tagged[1], kind.removeprefix("module:"))
            if module is not None:
                return module
            own = sys.modules.get(kind.removeprefix("module:"))
            if own is not None and own.__name__ in _VALUE_MODULE_NAMES and _standard_module(own):
                # One of values (math, os.path): the oracle's own; never one that runs
                # something the test then calls on the product's word (subprocess, os).
                return own
            kind = ""
        return _handle(tagged[1], str(tagged[2])[:200], bool(tagged[3]), kind, of)
    if tag == "se" and len(tagged) == 5 and all(type(t) is str for t in tagged[1:4]):
        # A member of a standard-library enum the product gave: this one when its module is
        # loaded here, else the product's handle.
        member = standard_member_of(tagged[1], tagged[2], tagged[3])
        if member is not None:
            return member
        if type(tagged[4]) is list and tagged[4][:1] == ["h"]:
            return _receive(tagged[4])
    if tag == "onv" and len(tagged) == 3 and type(tagged[1]) is int:
        # A namedtuple of the test's class that product code made (``row._replace``).
        cls: Any = _GIVEN.get(tagged[1])
        values = decode(tagged[2], _receive)
        fits = type(values) is tuple and len(values) == len(getattr(cls, "_fields", ()))
        if issubclass(type(cls), type) and _plain_namedtuple(cls) and fits:
            return cls(*values)
        raise WireError("a namedtuple of no class the oracle gave out")
    if tag == "oh" and len(tagged) == 2 and type(tagged[1]) is int and tagged[1] in _GIVEN:
        return _GIVEN[tagged[1]]
    if tag == "sc" and len(tagged) == 4 and type(tagged[1]) is str and type(tagged[2]) is str:
        # A standard-library class the product named: this one when its module is loaded
        # here (never imported on the product's word) and holds values (a class the test
        # then calls runs here: never subprocess.Popen on the product's word), else the
        # product's handle.
        standard = tagged[1] in _VALUE_MODULES
        found: Any = sys.modules.get(tagged[1]) if standard else None
        for part in tagged[2].split("."):
            found = getattr(found, part, None)
        if issubclass(type(found), type) and standard_class_name(found) == (tagged[1], tagged[2]):
            return found
        if type(tagged[3]) is list and tagged[3][:1] == ["h"]:
            return _receive(tagged[3])
    if tag == "oxc" and len(tagged) == 2 and type(tagged[1]) is int:
        own = _GIVEN.get(tagged[1])
        if _test_exception_class(own):
            return own  # the test's exception class, back from its mirror
    if tag == "bt" and len(tagged) == 2 and type(tagged[1]) is str:
        found = getattr(builtins, tagged[1], None)
        if issubclass(type(found), type):  # a built-in class by its name, never a function
            return found
    if tag == "rb" and len(tagged) >= 3 and type(tagged[1]) is int:
        found = _REBUILT.get(tagged[1])
        if found is None:
            found = rebuild(tagged[2], tagged[3:], _receive, ProductAlias)
            _REBUILT[tagged[1]] = found
            _REBUILT_HANDLES[id(found)] = tagged[1]
        return found
    if (
        tag == "xv"
        and len(tagged) == 2
        and type(tagged[1]) is dict
        and type(tagged[1].get("h")) is int
    ):
        # A product exception as a value: an instance of its class here, one per product
        # object (the same one again each time it crosses).
        raised, number = tagged[1], tagged[1]["h"]
        found = _EXCEPTION_VALUES.get(number)
        if found is not None:
            _refresh(found, raised)  # product code may have changed it since (its message)
        else:
            if type(raised.get("cls")) is not list or _exception_class(raised["cls"]) is None:
                return _handle(number, "Exception", False, "")  # a class that does not cross
            found = _exception(raised)
            if len(_EXCEPTION_VALUES) < 65536:
                _EXCEPTION_VALUES[number] = found
        return found
    if tag in ("bx", "sx", "xc", "bad"):
        cls = _exception_class(tagged)
        if cls is None:
            raise _fail(ProductUnreadable, f"an exception class that does not cross: {tagged[1]}")
        return cls
    raise WireError(f"unknown tag {str(tag)[:40]}")


def _exception_class(desc: list[Any]) -> type[BaseException] | None:
    """The oracle's class for a product exception class (None: it must not cross)."""
    tag = desc[0]
    if tag == "bx":
        found = getattr(builtins, str(desc[1]), None)
        ok = isinstance(found, type) and issubclass(found, Exception)
        return found if ok else None
    if tag == "sx":
        module = sys.modules.get(str(desc[1]))  # only what the oracle has loaded already
        found = module
        for part in str(desc[2]).split("."):
            found = getattr(found, part, None)
        if isinstance(found, type) and issubclass(found, Exception):
            return found
        desc = [
            "xc",
            desc[3],
            desc[1],
            desc[2],
            str(desc[2]).rsplit(".", 1)[-1],
            [["bx", "Exception"]],
        ]
    if desc[0] == "oxc" and len(desc) == 2 and type(desc[1]) is int:
        # A mirror of one of the test's exception classes: the test's class itself.
        own = _GIVEN.get(desc[1])
        return own if isinstance(own, type) and issubclass(own, Exception) else None
    if desc[0] != "xc" or type(desc[1]) is not int:
        return None
    if desc[1] in _EXCEPTION_CLASSES:
        return _EXCEPTION_CLASSES[desc[1]]
    library = library_exception(desc[2], desc[3])
    if (
        library is not None
        and "__pw_handle__" not in _OWN_DICT(library)
        and not _machinery(library)
    ):
        _EXCEPTION_CLASSES[desc[1]] = library
        return library  # pytz's NonExistentTimeError: the test's `except` names this one
    bases = [_exception_class(b) for b in desc[5]] if type(desc[5]) is list else [None]
    made: type[BaseException] | None = None
    if bases and all(b is not None for b in bases):
        namespace = {
            "__module__": str(desc[2]),
            "__qualname__": str(desc[3]),
            "__pw_handle__": desc[1],
            "__getattr__": _exception_attribute,
            "__setattr__": _exception_setattr,
            "__delattr__": _exception_delattr,
            "__str__": _exception_text,
            "__repr__": _exception_repr,
            "__new__": _new_product_exception,
            "__init__": _init_product_exception,
        }
        try:
            made = type(str(desc[4]), tuple(bases), namespace)  # type: ignore[arg-type]
        except TypeError:  # bases whose layouts conflict: the first one keeps the name
            made = type(str(desc[4]), (bases[0],), namespace)  # type: ignore[arg-type]
    _EXCEPTION_CLASSES[desc[1]] = made
    return made


def _new_product_exception(cls: type[BaseException], *args: Any, **kwargs: Any) -> Any:
    """A product exception class called by the test (``raise Invalid("bad")``,
    simpleeval's ``AttributeDoesNotExist("foo", "foo in bar")``): made in the product, where
    its ``__init__`` sets what product code and the test read of it (``e.attr``), and an
    instance of this class here for it."""
    number = _OWN_DICT(cls).get("__pw_handle__")
    if type(number) is not int:
        return BaseException.__new__(cls, *args)
    made = _link().request("call", [_handle(number, cls.__name__, True, "class"), *args], kwargs)
    if isinstance(made, cls):
        return made
    return BaseException.__new__(cls, *args)  # the class made something else: as before


def _init_product_exception(self: BaseException, *args: Any, **kwargs: Any) -> None:
    # One the product made (its __init__ ran there) keeps the args it was given there.
    if "__pw_exc__" not in getattr(self, "__dict__", {}):
        BaseException.__init__(self, *args)


def _exception_attribute(self: BaseException, name: str) -> Any:
    number = vars(self).get("__pw_exc__")
    if number is None or name[:2] == "__":
        raise AttributeError(name)
    return _link().request("getattr", [_handle(number, type(self).__name__, False), name])


def _exception_setattr(self: BaseException, name: str, value: Any) -> None:
    """An attribute the test sets on a product exception (``except BadSignature as e:
    e.payload = None; raise``, itsdangerous' signer): set on the product's own exception,
    which product code catches when the test raises it back. The exception's own
    bookkeeping (``args``, dunders, a built-in base's attributes: ``errno``, ``name``) is
    this instance's, as decoding sets it."""
    number = vars(self).get("__pw_exc__")
    own = name[:2] == "__" or name == "args"
    if number is None or own or any(name in vars(k) for k in _builtin_bases(type(self))):
        BaseException.__setattr__(self, name, value)
        return
    vars(self).pop(name, None)
    _link().request("setattr", [_handle(number, type(self).__name__, False), name, value])


def _exception_delattr(self: BaseException, name: str) -> None:
    number = vars(self).get("__pw_exc__")
    if number is None or name[:2] == "__" or name in vars(self):
        BaseException.__delattr__(self, name)
        return
    _link().request("delattr", [_handle(number, type(self).__name__, False), name])


def _builtin_bases(cls: type) -> list[type]:
    return [k for k in cls.__mro__ if k.__module__ == "builtins"]


def _exception_text(self: BaseException) -> str:
    text = vars(self).get("__pw_str__")
    return text if type(text) is str else BaseException.__str__(self)


def _exception_repr(self: BaseException) -> str:
    text = vars(self).get("__pw_repr__")  # the product's own repr (voluptuous' errors list)
    return text if type(text) is str else BaseException.__repr__(self)


_WARNED_AT: dict[str, dict[Any, Any]] = {}
"""A warning registry per product file, as each module's ``__warningregistry__`` would be
in-process (a ``default`` filter shows a warning once per place)."""


def _print_again(printed: Any) -> None:
    """Write to the oracle's own streams what product code printed during a call, where
    pytest captures it as in-process (``capsys``, a failure's captured output)."""
    if type(printed) is not list or len(printed) != 2:
        return
    for text, stream in zip(printed, (sys.stdout, sys.stderr), strict=True):
        if type(text) is str and text:
            stream.write(text)


def _warn_again(warned: Any) -> None:
    """Issue in the oracle, under its filters, the warnings product code issued in a call
    (``pytest.warns``, ``recwarn``, ``filterwarnings = error`` see them; an ``error`` filter
    raises here, when the call returns, where in-process it raised at the warning)."""
    if type(warned) is not list:
        return
    for item in warned:
        if type(item) is not list or len(item) != 4 or type(item[0]) is not list:
            continue
        try:
            cls = _exception_class(item[0]) if item[0] else None
        except (IndexError, TypeError, ValueError):  # from the product: data, never trusted
            cls = None
        if cls is None or not issubclass(cls, Warning):
            cls = UserWarning
        text, filename, lineno = str(item[1])[:2000], str(item[2])[:500], item[3]
        line = lineno if type(lineno) is int and lineno >= 0 else 0
        registry = _WARNED_AT.setdefault(filename, {})
        warnings.warn_explicit(text, cls, filename, line, registry=registry)


def _refresh(exc: BaseException, raised: dict[str, Any]) -> None:
    """What a product exception says now, on the instance that stands for it here."""
    own = getattr(exc, "__dict__", None)
    if type(own) is not dict:
        return
    if type(raised.get("str")) is str and "__pw_str__" in own:
        own["__pw_str__"] = raised["str"][:2000]
    if type(raised.get("repr")) is str and "__pw_repr__" in own:
        own["__pw_repr__"] = raised["repr"][:2000]
    if raised.get("args") is not None:
        with contextlib.suppress(WireError, IsolationRefused, ProductFailure):
            args = decode(raised["args"], _receive)
            if type(args) is tuple:
                exc.args = args


def _bare(cls: type[BaseException], args: Any) -> BaseException:
    """An instance of the class without running its (or the product's) constructor."""
    return BaseException.__new__(cls, *args)


def _chained(raised: Any) -> BaseException | None:
    """An exception of a product exception's chain, when it crosses (one that does not is
    left out: only the exception raised fails the property)."""
    if type(raised) is not dict:
        return None
    if "oracle" in raised:
        own = _GIVEN.get(raised["oracle"]) if type(raised["oracle"]) is int else None
        return own if isinstance(own, BaseException) else None
    if type(raised.get("cls")) is not list or not raised["cls"]:
        return None
    if _exception_class(raised["cls"]) is None:
        return None
    return _exception(raised)


def _exception(raised: Any) -> BaseException:
    """The exception to raise in the oracle for one the product raised."""
    if type(raised) is dict and "oracle" in raised:
        # One an oracle callback raised, raised on by product code: the oracle's own again.
        own = _GIVEN.get(raised["oracle"]) if type(raised["oracle"]) is int else None
        if isinstance(own, BaseException):
            return own
        return _fail(ProductUnreadable, "the product raised an oracle object that is no exception")
    if type(raised) is not dict or type(raised.get("cls")) is not list or not raised["cls"]:
        return _fail(ProductUnreadable, "an unreadable exception from the product")
    text = str(raised.get("str", ""))[:2000]
    cls = _exception_class(raised["cls"])
    if cls is None:
        name = str(raised["cls"][1])[:200]
        return _fail(ProductError, f"the product raised {name}, which does not cross: {text}")
    args: Any = (text,)
    if raised.get("args") is not None:
        try:
            args = decode(raised["args"], _receive)
        except (WireError, IsolationRefused, ProductFailure):
            args = (text,)
    if type(args) is not tuple:
        args = (text,)
    try:
        mirrored = cls.__module__ != "builtins" and "__pw_handle__" not in _OWN_DICT(cls)
        exc = cls(*args) if cls.__module__ == "builtins" or mirrored else _bare(cls, args)
    except Exception:
        exc = _bare(cls, args)
    exc.args = args
    if raised.get("extras") is not None:
        with contextlib.suppress(WireError, IsolationRefused, ProductFailure):
            set_exception_extras(exc, decode(raised["extras"], _receive))
    if cls.__module__ != "builtins" and "__pw_handle__" in _OWN_DICT(cls):
        vars(exc)["__pw_str__"] = text
        if type(raised.get("repr")) is str:
            vars(exc)["__pw_repr__"] = raised["repr"][:2000]
    if type(raised.get("h")) is int and hasattr(exc, "__dict__"):
        vars(exc)["__pw_exc__"] = raised["h"]  # raised back into the product: its own again
    if raised.get("suppress") is True:
        exc.__suppress_context__ = True
    cause, context = (_chained(raised.get(key)) for key in ("cause", "context"))
    if cause is not None:
        exc.__cause__ = cause
    if context is not None:
        exc.__context__ = context
    tb = raised.get("tb")
    if type(tb) is str and tb:
        exc.add_note("raised in the product process:\n" + tb[-4000:])
    # Marked as the product's: whatever it says, it never selects the in-process fallback
    # (_plugin's _refuse_proxy_type_errors; docs/design/isolated-oracle.md).
    vars(exc)[FROM_PRODUCT] = True
    return exc


# -- the product's modules -------------------------------------------------------------------

_MODULE_OWN = frozenset(
    {"__spec__", "__loader__", "__file__", "__path__", "__package__", "__cached__",
     "__pw_handle__", "__builtins__"}
)  # fmt: skip


_module_dict: Any = vars(types.ModuleType)["__dict__"].__get__
"""The proxy module's own namespace (the import system's entries): ``__dict__`` on a proxy
module is the product module's."""


_MODULE_METADATA = frozenset(
    {"__version__", "__version_info__", "__author__", "__author_email__", "__email__",
     "__license__", "__copyright__", "__title__", "__summary__", "__description__", "__uri__",
     "__url__", "__maintainer__", "__credits__", "__status__", "__date__", "__release__"}
)  # fmt: skip
"""A module's metadata dunders (PEP 8's ``__version__``, ``__author__``, ...), which tests
read (``pkg.__version__ == ...``): the product's answer, as its other attributes. Any other
dunder on a product module is a protocol probe, answered as an absent attribute."""


class ProxyModule(types.ModuleType):
    """A product module as the oracle sees it: every attribute is read from the product, and
    so are ``dir()`` and ``vars()`` (its ``__doc__`` is the product's, read at import)."""

    def _pw_module(self) -> Handle:
        number = _module_dict(self).get("__pw_handle__")
        if number is None:
            raise AttributeError("__pw_handle__")
        return _handle(number, "module", False)

    def __getattr__(self, name: str) -> Any:
        if name[:2] == "__" and name not in _REMOTE_DUNDERS and name not in _MODULE_METADATA:
            raise AttributeError(name)
        if name[:2] != "__" and _calls_it(name, sys._getframe(1)):
            return _MethodCall(self._pw_module(), name)
        return _link().request("getattr", [self._pw_module(), name])

    def __dir__(self) -> list[str]:
        names = _link().request("dir", [self._pw_module()])
        if type(names) is not list or any(type(n) is not str for n in names):
            raise _fail(ProductUnreadable, f"dir({self.__name__}) is not a list of names")
        return names

    @property
    def __dict__(self) -> ProductNamespace:  # type: ignore[override]
        return _module_namespace(self._pw_module(), self.__name__)

    def __setattr__(self, name: str, value: Any) -> None:
        if type(value) is ProxyModule:
            # The import system binding a submodule on its package: kept here unless the
            # product's package has its own attribute of that name (tenacity's ``retry``
            # function beside its ``tenacity.retry`` module), which wins as in Python.
            if _product_binds(self, name, value):
                _module_dict(self)[name] = value
            return
        if name in _MODULE_OWN or _own_submodule(self, name, value):
            _module_dict(self)[name] = value  # the import system's own bookkeeping
            return
        if _by_clock_library():
            return
        _patch_module(self, name, value)
        _link().request("setattr", [self._pw_module(), name, value])

    def __delattr__(self, name: str) -> None:
        _patch_module(self, name, _DELETED)
        _link().request("delattr", [self._pw_module(), name])


_DELETED = object()
_SHARED_PATCHES: dict[tuple[str, str], tuple[ProxyModule, Any]] = {}
"""The patches of product modules a fixture several tests share made (``next_property``)."""


_REAL_CLOCK = (time.time, datetime.datetime)
"""As imported (a tuple: a clock library swaps module attributes, never what a tuple holds)."""


def _frozen_clock() -> dict[str, Any] | None:
    """The clock a test froze with freezegun, for the product process to freeze too (its
    ``_set_clock``): the frozen moment and the zone offset; None while the clock runs. A
    clock patched another way (``time.time = ...``) is refused: the product's is its own."""
    running = time.time is _REAL_CLOCK[0] or _mirrored(time.time)  # a mirrored patch: made there
    if running and datetime.datetime is _REAL_CLOCK[1]:
        return None
    api = sys.modules.get("freezegun.api")
    factories = getattr(api, "freeze_factories", None)
    offsets = getattr(api, "tz_offsets", None)
    swapped = {getattr(time.time, "__module__", None), datetime.datetime.__module__}
    if api is not None and not factories and swapped & CLOCK_LIBRARIES:
        return None  # freezegun between freezes: starting, or putting the real ones back
    if not factories or not offsets:
        raise _refuse(f"the property patches the clock (time.time, datetime), {_UNSHARED}")
    moment, offset = factories[-1](), offsets[-1]
    return {"at": moment.isoformat(), "tz": offset.total_seconds()}


def _by_clock_library() -> bool:
    """Whether the setattr being made on a product module is a clock library's (freezegun
    swapping ``datetime`` where a module imported it): the product's copy of the library
    makes its own in the product process (``_frozen_clock``), so none is forwarded."""
    caller = sys._getframe(2).f_globals.get("__name__")
    return caller in CLOCK_LIBRARIES


def _patch_module(module: ProxyModule, name: str, value: Any) -> None:
    """A test patching a product module (``monkeypatch.setattr(lib, "helper", fake)``): done
    in the product process, which serves this property alone (each starts from the state
    the import left, "One product state per property"), so the patch ends with it as
    monkeypatch's undo would. A fixture several tests share (``setUpClass``, a class- or
    module-scoped fixture) runs in the first one's process only: its patch is kept and
    made again in each later test's process, until a later set of the same attribute
    outside such a fixture (its teardown) replaces it."""
    key = (module.__name__, name)
    if ISOLATION["shared_setup"] is not None and ISOLATION["prop"] is not None:
        _SHARED_PATCHES[key] = (module, value)
    else:
        _SHARED_PATCHES.pop(key, None)


def _product_binds(package: ProxyModule, name: str, submodule: ProxyModule) -> bool:
    """Whether ``package.name`` in the product is ``submodule`` (or nothing): a submodule
    the import system binds on its proxy package may be cached there only then. Otherwise
    the product's attribute of that name (a function its ``__init__`` defined after
    importing the submodule) is what ``package.name`` and ``from package import name``
    read, one request each, as Python gives it."""
    if _module_dict(submodule).get("__name__") != f"{package.__name__}.{name}":
        return True
    try:
        found = _link().request("getattr", [package._pw_module(), name])
    except AttributeError:
        return True
    return found is submodule


def _own_submodule(module: ProxyModule, name: str, value: Any) -> bool:
    """The import system binding a test package or module of the oracle's (``pkg.tests``)
    on its proxy parent: kept here, never sent to the product."""
    finder = ISOLATION["finder"]
    full = f"{module.__name__}.{name}"
    return (
        isinstance(value, types.ModuleType)
        and _module_dict(value).get("__name__") == full
        and finder is not None
        and finder.oracle_own(full) is not None
    )


class ProductFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """First on sys.meta_path: every module of the product is a proxy module; the tests a
    product package holds are the oracle's own, loaded from the oracle's tree."""

    def __init__(self, names: list[str], tree: str = "", roots: Any = (), own: Any = ()) -> None:
        self.names = names
        self.tree, self.roots, self.own = tree, [str(r) for r in roots], frozenset(own)
        self.facts: dict[str, Any] = {}

    def package(self, name: str) -> str | None:
        """The product package ``name`` is in (None: not the product's)."""
        return next((n for n in self.names if name == n or name.startswith(n + ".")), None)

    def owns(self, name: str) -> bool:
        return self.package(name) is not None and self.oracle_own(name) is None

    def oracle_own(self, name: str) -> str | None:
        """Where the oracle's tree holds ``name``, when it is test code under a product
        package (docs/design/isolated-oracle.md, "Tests inside a product package"): a
        module of a directory named as TEST_DIRECTORIES (its ``__init__``, test modules,
        conftests and helpers), a ``conftest``, or one of the run's own test files. None:
        the product's."""
        package = self.package(name)
        if package is None:
            return None
        inner = name[len(package) :].split(".")[1:]
        if not inner:
            return None
        parts = package.split(".")
        places = (os.path.normpath(os.path.join(self.tree, r, *parts)) for r in self.roots)
        base = next((place for place in places if os.path.isdir(place)), None)
        if base is None:
            return None
        where = os.path.join(base, *inner)
        directory = os.path.isdir(where)
        tests = any(part in TEST_DIRECTORIES for part in inner[: None if directory else -1])
        if not (tests or inner[-1] == "conftest" or name in self.own):
            return None
        if directory:
            return where
        return where + ".py" if os.path.isfile(where + ".py") else None

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if self.package(name) is None:
            return None
        where = self.oracle_own(name)
        if where is not None:
            # Found in the oracle's own tree, never through the proxy package's __path__
            # (the product's answer).
            if not os.path.isdir(where):
                return importlib.util.spec_from_file_location(name, where)
            init = os.path.join(where, "__init__.py")
            if os.path.isfile(init):
                return importlib.util.spec_from_file_location(
                    name, init, submodule_search_locations=[where]
                )
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [where]
            return spec
        link = _link()
        _IMPORTING.add(name)
        try:
            module = link.request("import", [name])
        finally:
            _IMPORTING.discard(name)
        facts = link.last_facts or {}
        if type(module) is not Handle:
            raise _fail(ProductUnreadable, f"the product's {name} is not a module")
        self.facts[name] = (module, facts)
        is_package = facts.get("path") is not None
        spec = importlib.machinery.ModuleSpec(name, self, is_package=is_package)
        if facts.get("file"):
            # pytest's importlib mode imports a parent package by its path, and runs the
            # file itself unless the spec's origin is that path: the origin is where the
            # oracle's tree has the module, never the product's answer (which could name
            # another file). __file__ stays the product's answer (provenance reads it).
            spec.origin = self.tree_file(name) or facts["file"]
            spec.has_location = True
        if is_package:
            spec.submodule_search_locations = list(facts["path"])
        return spec

    def tree_file(self, name: str) -> str | None:
        """The file of module ``name`` in the oracle's tree (its ``__init__.py`` for a
        package), from the first import root that has it; None: not there."""
        for root in self.roots:
            base = os.path.normpath(os.path.join(self.tree, root, *name.split(".")))
            for candidate in (os.path.join(base, "__init__.py"), base + ".py"):
                if os.path.isfile(candidate):
                    return candidate
        return None

    def create_module(self, spec: Any) -> Any:
        return ProxyModule(spec.name)

    def exec_module(self, module: Any) -> None:
        handle, facts = self.facts.pop(module.__name__)
        own = _module_dict(module)
        own["__pw_handle__"] = object.__getattribute__(handle, "_pw_id")
        own["__doc__"] = facts.get("doc") if type(facts.get("doc")) is str else None
        if type(facts.get("file")) is str:
            own["__file__"] = facts["file"]


_STDLIB = os.path.dirname(os.__file__) + os.sep


def _standard_function(function: types.FunctionType) -> bool:
    """A function of a standard-library module, as that module has it under its name, whose
    code is the standard library's own (not a test's function put there by a patch)."""
    module = sys.modules.get(str(function.__module__))
    name = function.__name__
    return (
        module is not None
        and _standard_module(module)
        and getattr(module, name, None) is function
        and function.__code__.co_filename.startswith(_STDLIB)
        and "site-packages" not in function.__code__.co_filename
    )


def _standard_module(module: Any) -> bool:
    """A standard-library module, loaded under its own name: the same module on both sides."""
    name = getattr(module, "__name__", None)
    if type(name) is not str or name.split(".")[0] not in sys.stdlib_module_names:
        return False
    return sys.modules.get(name) is module


def _proxy_module(number: int, name: str) -> ProxyModule | None:
    """The proxy of a product module the product handed out (``pkg.sub``, a module in a
    namespace), imported now if the oracle has not yet; None: not a module of the product
    (a standard-library module stays a handle), or not the module of that name."""
    finder = ISOLATION["finder"]
    if finder is None or not finder.owns(name) or name in _IMPORTING:
        return None
    module = sys.modules.get(name)
    if type(module) is not ProxyModule:
        try:
            module = importlib.import_module(name)
        except ImportError:
            return None
    if type(module) is not ProxyModule:
        return None
    kept = _module_dict(module).get("__pw_handle__")
    if type(kept) is int and kept != number and not _live_number(kept):
        # Imported during an earlier property, whose process is gone: this property's
        # process gave the module out again (imported anew there).
        _MOVED[kept] = number
        _module_dict(module)["__pw_handle__"] = kept = number
    return module if kept == number else None


def _oracle_own(name: str) -> bool:
    """conftest (pytest's, per directory) and a top-level module or package named ``test*``
    (a test module on an import root, as a pytest ``pythonpath`` of the tests directory
    makes them): the oracle's code, imported by pytest itself (``--import-mode=importlib``
    imports a test module by its name)."""
    return name == "conftest" or name.startswith("test")


def _shared_module(owner: Any, tree: str) -> str | None:
    """The name of a module the property patches that the product process has its own
    copy of (the standard library's, an installed library's): None for the product's own
    (a proxy module: its patches are refused where they are made) and the test's."""
    if isinstance(owner, str):
        found = sys.modules.get(owner)
        while found is None and "." in owner:
            owner = owner.rpartition(".")[0]
            found = sys.modules.get(owner)
        owner = found
    if issubclass(type(owner), type) and not isinstance(owner, ProxyModule):
        module = sys.modules.get(str(getattr(owner, "__module__", "")))
        owner = module if module is not None else owner
    if type(owner) is not types.ModuleType or ISOLATION["prop"] is None:
        return None  # only what a test and its fixtures patch (pytest patches its own too)
    location = getattr(owner, "__file__", None)
    if type(location) is str and os.path.realpath(location).startswith(tree + os.sep):
        return None  # the test's own module (or conftest)
    name = str(owner.__name__)
    # builtins too: product code's print, open and input are the product process's own.
    return None if name.split(".")[0] in ("__main__", *_MACHINERY) else name


_UNSHARED = "which the product process does not share"
_SERVED = frozenset(
    {"os", "posixpath", "genericpath", "posix", "sys", "select", "io", "_io", "json", "warnings",
     "signal", "gc", "traceback", "linecache", "types", "typing", "importlib", "threading",
     "_thread", "tempfile", "contextlib", "functools", "inspect", "operator", "collections",
     "copy", "copyreg", "base64", "enum", "decimal", "fractions", "datetime", "pathlib", "stat",
     "abc", "dataclasses", "keyword", "weakref", "codecs", "atexit", "tracemalloc"}
)  # fmt: skip
"""Modules the product process's own code uses while a call runs (the wire, pytest's
capture, the probes): a test's patch there is not made in that process, where it would
change the server too; the test runs in-process, named, as before mirroring."""
_MIRRORED_BUILTINS = frozenset({"print", "input", "open"})
"""The built-ins a test's patch of which is made in the product process too (a CLI's output
and prompts, a file read); any other built-in the server calls itself."""
_MIRRORS: list[tuple[list[Any], Any]] = []
"""The test's patches of shared modules that hold, in the order made: ``(key, value)``, the
key as the product process names what was patched (``["attr", module, path, name]`` or
``["env", name]``). Made again in each property's process (``next_property``): a fixture
several tests share patched while the first of them ran."""


def _mirror_key(owner: Any, name: str) -> list[Any] | None:
    """How the product process names ``owner.name`` (a module's attribute, or a class's of a
    module, by its qualified name); None: not one the product process can patch too."""
    if type(owner) is types.ModuleType:
        module, path = str(owner.__name__), []
    elif issubclass(type(owner), type) and not isinstance(owner, ProxyModule):
        module, path = str(owner.__module__), str(owner.__qualname__).split(".")
        found: Any = sys.modules.get(module)
        for part in path:
            found = getattr(found, part, None)
        if found is not owner:
            return None  # a class no name reaches (made in a function)
    else:
        return None
    top = module.split(".")[0]
    if top in _SERVED or (top == "builtins" and name not in _MIRRORED_BUILTINS):
        return None
    return ["attr", module, path, name] if sys.modules.get(module) is not None else None


def _mirror(key: list[Any], value: Any, what: str) -> tuple[list[Any], Any]:
    """A test's patch of a module the product process has its own copy of, made there too
    (a function of the test's crosses as a handle the product calls back): product code
    sees what it sees in one process. Undone by ``_unmirror``."""
    entry = (key, value)
    _MIRRORS.append(entry)  # first: the request's own clock check sees a mirrored time.time
    link = ISOLATION["link"]
    if link is not None and link.dead is None:
        try:
            link.request("mirror", [*key, value])
        except BaseException as exc:
            _MIRRORS.remove(entry)
            if not isinstance(exc, Exception):
                raise
            why = f"{type(exc).__name__}: {str(exc)[:80]}"  # a module the product lacks
            raise _refuse(f"the property {what}, {_UNSHARED} ({why})") from None
    return entry


def _unmirror(entry: tuple[list[Any], Any]) -> None:
    """The test's patch undone here (monkeypatch's undo, a ``mock.patch`` ending): undone in
    the product process too, if the property's process still serves."""
    if not any(e is entry for e in _MIRRORS):
        return
    _MIRRORS[:] = [e for e in _MIRRORS if e is not entry]
    link = ISOLATION["link"]
    if link is not None and link.dead is None and ISOLATION["prop"] is not None:
        with contextlib.suppress(ProductFailure, IsolationRefused, Exception):
            link.request("unmirror", entry[0])


def _mirrored(value: Any) -> bool:
    return any(v is value for _, v in _MIRRORS)


def _guard_shared_patches(tree: str) -> None:
    """A patch the property makes to a module the product process has its own copy of
    (``monkeypatch.setattr("time.sleep", ...)``, ``mock.patch("time.time")``,
    ``monkeypatch.setenv``) is made in the product process too, and undone with the test's
    (``_mirror``): product code sees it, as in one process. What cannot be made there (a
    module the server itself uses, ``os.environ`` patched as a dict, the working directory,
    a deletion) runs the test in-process instead, named."""
    import unittest.mock

    from _pytest.monkeypatch import MonkeyPatch, derive_importpath

    real = {n: getattr(MonkeyPatch, n) for n in ("setattr", "delattr", "setenv", "delenv", "chdir")}
    real_undo = MonkeyPatch.undo

    def kept(patcher: Any) -> list[Any]:
        return patcher.__dict__.setdefault("_pw_mirrors", [])  # type: ignore[no-any-return]

    def checked_setattr(self: Any, target: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
        # setattr("time.sleep", value) or setattr(owner, "name", value)
        patched, attribute = target, name
        if isinstance(target, str):
            try:  # imports the module named by text, as monkeypatch itself does
                attribute, patched = derive_importpath(target, False)
            except Exception:
                return real["setattr"](self, target, name, *args, **kwargs)  # its own error
        shared = _shared_module(patched, tree)
        what = f"patches {target if isinstance(target, str) else f'{shared}.{name}'}"[:130]
        key = _mirror_key(patched, str(attribute)) if shared is not None else None
        if shared is not None and key is None:
            raise _refuse(f"the property {what}, {_UNSHARED}")  # before: nothing to undo
        done = real["setattr"](self, target, name, *args, **kwargs)
        if key is None:
            return done
        own = patched.__dict__ if isinstance(patched, type) else None
        value = own[attribute] if own is not None else getattr(patched, attribute)
        kept(self).append(_mirror(key, value, what))
        return done

    def checked_delattr(self: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        owner = target.rpartition(".")[0] if isinstance(target, str) else target
        shared = _shared_module(owner, tree)
        if shared is not None:
            raise _refuse(f"the property deletes from {shared}, {_UNSHARED}")
        return real["delattr"](self, target, *args, **kwargs)

    def checked_env(method: str) -> Any:
        def patched(self: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
            done = real[method](self, name, *args, **kwargs)
            if ISOLATION["prop"] is not None and type(name) is str:
                what = f"{'sets' if method == 'setenv' else 'deletes'} the environment variable"
                value = os.environ.get(name)
                entry = _mirror(["env", name], value, f"{what} {name[:80]}")
                kept(self).append(entry)
            return done

        return patched

    def checked_undo(self: Any) -> None:
        try:
            real_undo(self)
        finally:
            mirrors = self.__dict__.pop("_pw_mirrors", [])
            for entry in reversed(mirrors):
                _unmirror(entry)

    MonkeyPatch.setattr = checked_setattr  # type: ignore[method-assign]
    MonkeyPatch.delattr = checked_delattr  # type: ignore[method-assign]
    MonkeyPatch.setenv = checked_env("setenv")  # type: ignore[method-assign]
    MonkeyPatch.delenv = checked_env("delenv")  # type: ignore[method-assign]
    MonkeyPatch.undo = checked_undo  # type: ignore[method-assign]

    def checked_chdir(self: Any, path: Any) -> Any:
        if ISOLATION["prop"] is None:
            return real["chdir"](self, path)
        raise _refuse(f"the property changes the working directory, {_UNSHARED}")

    MonkeyPatch.chdir = checked_chdir  # type: ignore[method-assign]
    enter = unittest.mock._patch.__enter__
    leave = unittest.mock._patch.__exit__

    def checked_enter(self: Any) -> Any:
        try:
            owner = self.getter()
        except Exception:
            owner = None
        shared = _shared_module(owner, tree) if owner is not None else None
        if shared is None:
            return enter(self)
        what = f"patches {shared}.{str(self.attribute)[:80]}"
        key = _mirror_key(owner, str(self.attribute))
        if key is None:
            raise _refuse(f"the property {what}, {_UNSHARED}")
        done = enter(self)
        try:
            own = owner.__dict__ if isinstance(owner, type) else None
            value = own[self.attribute] if own is not None else getattr(owner, self.attribute)
            kept(self).append(_mirror(key, value, what))
        except BaseException:
            leave(self, None, None, None)
            raise
        return done

    def checked_exit(self: Any, *exc_info: Any) -> Any:
        mirrors = self.__dict__.get("_pw_mirrors")
        try:
            return leave(self, *exc_info)
        finally:
            if mirrors:
                _unmirror(mirrors.pop())

    unittest.mock._patch.__enter__ = checked_enter  # type: ignore[method-assign]
    unittest.mock._patch.__exit__ = checked_exit  # type: ignore[method-assign]
    enter_dict = unittest.mock._patch_dict._patch_dict  # type: ignore[attr-defined]

    def checked_dict(self: Any) -> Any:
        environ = self.in_dict is os.environ or self.in_dict == "os.environ"
        if environ and ISOLATION["prop"] is not None:
            raise _refuse(f"the property patches os.environ, {_UNSHARED}")
        return enter_dict(self)

    unittest.mock._patch_dict._patch_dict = checked_dict  # type: ignore[attr-defined]
    import tracemalloc

    start_tracing = tracemalloc.start

    def checked_start(*args: Any) -> Any:
        if ISOLATION["prop"] is not None:
            # Product code allocates in the product process: what this one traces is the
            # wire's (xmltodict's streaming memory test), not what the test measures.
            raise _refuse(f"the property traces memory allocations, {_UNSHARED}")
        return start_tracing(*args)

    tracemalloc.start = checked_start


def install_proxies(
    opts: dict[str, str], tree: str, spec_root: str, layout: Any, targets: Any = ()
) -> None:
    """Connect to the product process and put the finder first on sys.meta_path. Product
    names: the layout's packages, minus conftest (pytest's, per directory) and the test
    code inside them (``ProductFinder.oracle_own``; ``targets``' files are the run's own)."""
    fds = [int(x) for x in opts["product-fds"].split(",")]
    req_fd, rep_fd, status_fd, *beat = (os.dup(fd) for fd in fds)
    for fd in fds:
        os.close(fd)
    for fd in beat:
        os.set_blocking(fd, False)
    timeout = float(opts.get("call-timeout", "30"))
    test_timeout = float(opts["test-timeout"]) if "test-timeout" in opts else None
    link = _Link(req_fd, rep_fd, status_fd, timeout, beat[0] if beat else None, test_timeout)
    ISOLATION["link"] = link
    names = [str(p) for p in layout.get("packages", []) if not _oracle_own(str(p))]
    roots = [str(r) for r in layout.get("roots", ["."])]
    own = set()
    if spec_root == tree:
        for _prop, node in targets:
            path = str(node).split("::", 1)[0].removesuffix(".py")
            for root in roots:
                inner = os.path.relpath(path, root)
                if not inner.startswith(".."):
                    own.add(inner.replace(os.sep, ".").removesuffix(".__init__"))
    ISOLATION["finder"] = ProductFinder(names, tree, roots, own)
    sys.meta_path.insert(0, ISOLATION["finder"])
    _guard_shared_patches(os.path.realpath(tree))
