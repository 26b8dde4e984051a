"""The isolated oracle: the product in a sandboxed process of its own, only data between.

Real bubblewrap, real pytest and product processes (docs/design/isolated-oracle.md). Each
fault of the product process (crash, exit, hang, flood, memory) fails the property it
served with a witness naming it; a property that cannot run isolated runs in-process and
its record says why; what the product does in its process stays there.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from patchwarden.sandbox import (
    Limits,
    PropertyTarget,
    RunEntropy,
    SandboxConfig,
    SandboxError,
    run_properties,
)

pytestmark = pytest.mark.bwrap

PRODUCT = textwrap.dedent(
    """
    import os, signal, sys, time

    class PricingError(ValueError):
        def __init__(self, message, code):
            super().__init__(message)
            self.code = code

    import datetime

    class Zone(datetime.tzinfo):  # parse's FixedTzOffset: a product tzinfo
        def utcoffset(self, dt):
            return datetime.timedelta(hours=1)

    class Buffer(bytes):  # a product object the oracle's C code reads as bytes
        pass

    class Basket:
        def __init__(self, *prices):
            self.prices = list(prices)
        def __len__(self):
            return len(self.prices)
        def __iter__(self):
            return iter(self.prices)
        def total(self):
            return sum(self.prices)

    TOKEN = os.urandom(8).hex()  # one per product process

    def token():
        return TOKEN

    def endless():
        n = 0
        while True:
            yield n
            n += 1

    def retry_forever(attempt):  # tenacity's retry, taking every failure for one more try
        while True:
            try:
                return attempt()
            except BaseException:
                pass

    def price(n):
        if n < 0:
            raise PricingError("negative", n)
        return n * 2

    def claims_a_proxy(n):  # the TypeError a proxy meets in C code, raised by the product
        raise TypeError(f"an Item is required, not type 'Handle' ({n})")

    def seeds_seen():  # what scored product code could tell its run apart by
        import random
        return [os.environ.get("PYTHONHASHSEED"), hash("zq"), random.random(), sys.argv[4]]

    def contract_write():
        try:
            open("tests/test_props.py", "a").close()
        except OSError as exc:  # read-only, as in the agent's run_tests
            return type(exc).__name__
        return "written"

    def what_the_product_sees():
        with open("shop/scratch.txt", "w") as f:  # its own copy of the tree: writable
            f.write("product")
        return {
            "hypothesis": "hypothesis" in sys.modules,
            "pytest": "pytest" in sys.modules,
            "tree_writable": os.access("shop/__init__.py", os.W_OK),
            "contract": "def test_price" in open("tests/test_props.py").read(),
            "contract_write": contract_write(),
            "canary": os.path.exists("/patchwarden-canary"),
            "argv": sys.argv[:1],
        }

    def forge_modules():
        # What an attack does from product code: replace the test machinery it can reach.
        import types
        fake = types.ModuleType("hypothesis")
        fake.given = lambda *a, **k: (lambda f: (lambda *x, **y: None))
        sys.modules["hypothesis"] = fake
        return True

    def crash():
        os.kill(os.getpid(), signal.SIGSEGV)

    def leave():
        os._exit(3)

    def hang():
        time.sleep(600)

    def flood():
        while True:
            sys.stdout.write("x" * 65536)

    def exhaust():
        return len(bytearray(1 << 40))

    def quit_test():
        sys.exit(0)

    def apply(function, value):
        return function(value)

    def total(iterable):
        return sum(iterable)

    def biggest(items, key):
        return max(items, key=key)

    def chunks(seq, n):  # more-itertools' sliced
        from itertools import count, takewhile
        return takewhile(len, (seq[i : i + n] for i in count(0, n)))

    def caught(function):
        try:
            function()
        except Exception as exc:
            return type(exc).__name__
        return "nothing"

    def swallow(function):
        try:
            function()
        except BaseException:
            pass
        return "swallowed"

    def old_price(n):
        import warnings
        warnings.warn("old_price is deprecated: use price", DeprecationWarning, stacklevel=2)
        return price(n)

    def with_pattern(pattern):  # parse's decorator: marks the converter it is handed
        def decorator(func):
            func.pattern = pattern
            return func
        return decorator

    def pattern_of(func):
        return func.pattern

    def relevel(obj, level):
        obj.level = level

    def ident(value):
        return id(value)

    def is_safe_callable(obj):  # jinja2's sandbox, on what a template is about to call
        return not (getattr(obj, "unsafe_callable", False) or getattr(obj, "alters_data", False))

    def reach(step, g, f, x):
        # What an attack does with the oracle's objects it is handed: walk to the property.
        import sys
        try:
            if step == "gi_frame":
                found = g.gi_frame.f_back.f_globals
            elif step == "gi_code":
                found = g.gi_code.co_filename
            elif step == "globals":
                found = f.__globals__["__name__"]
            elif step == "mro":
                # The proxy's own classes, of this process: one is named as the test's
                # class, but holds none of its code (the test's `check`).
                local = type(x).__mro__
                found = [c for c in local if "check" in vars(c)] or x.__mro__
            elif step == "dict":  # its own attributes are a live view: never a private name
                x.__dict__["_pw_verdict"] = "pass"
                found = "set"
            elif step == "bound":
                found = x.check.__self__
            elif step == "set_code":
                f.__code__ = (lambda v: 0).__code__
                found = "set"
            elif step == "set_machinery":  # a marker the test machinery reads
                f.__pytest_wrapped__ = None
                found = "set"
            elif step == "set_private_machinery":  # Hypothesis' settings of a test function
                f._hypothesis_internal_use_settings = None
                found = "set"
            elif step == "set_generator":
                g.level = 0
                found = "set"
            elif step == "set_item_machinery":  # an item of the test machinery's mapping
                x["verdict"] = "pass"
                found = "set"
            elif step == "module":
                found = sys.modules.get("test_props") or f.__builtins__["__import__"]
            else:
                # The product program itself, through a method of the proxy's class (its
                # module is not in sys.modules; the method is sealed): a request it may
                # not make.
                callback = type(x).__repr__.__globals__["_callback"]
                found = callback("delattr", x, ["level"], {})
        except AttributeError:
            return "refused"
        return repr(found)
    """
)

PROPS = textwrap.dedent(
    """
    import os
    import time

    import hypothesis
    import pytest
    from hypothesis import given, strategies as st

    import shop

    @given(st.integers(min_value=0, max_value=1000))
    def test_price(n):
        assert shop.price(n) == 2 * n

    def test_errors_cross_as_themselves():
        with pytest.raises(shop.PricingError, match="negative") as info:
            shop.price(-1)
        assert isinstance(info.value, ValueError) and info.value.code == -1
        try:
            shop.price(-2)
        except ValueError as exc:
            assert type(exc).__name__ == "PricingError"

    def test_handles():
        basket = shop.Basket(1, 2, 3)
        assert len(basket) == 3 and list(basket) == [1, 2, 3] and basket.total() == 6
        assert isinstance(basket, shop.Basket)

    def test_boundary():
        seen = shop.what_the_product_sees()
        assert seen["hypothesis"] is False and seen["pytest"] is True
        assert seen["tree_writable"] is True and seen["contract"] is True
        assert seen["contract_write"] == "OSError" and seen["canary"] is False
        assert not os.path.exists("shop/scratch.txt")  # the oracle's tree is not the copy
        assert shop.forge_modules() is True
        assert hypothesis.given is given  # the product's sys.modules is not the oracle's

    def test_patches_the_product(monkeypatch):
        monkeypatch.setattr(shop, "price", lambda n: 0)
        assert shop.price(3) == 0

    def test_fallback_sees_its_tree(monkeypatch):
        import tracemalloc

        tracemalloc.start()  # falls back: the product's allocations are not traced here
        tracemalloc.stop()
        # In-process the product shares this process: it sees the tree this test sees.
        assert os.access("shop/__init__.py", os.W_OK)
        with open("shop/scratch-fallback.txt", "w") as f:  # its run's copy: writable
            f.write("in-process")
        with pytest.raises(OSError):
            open("tests/test_props.py", "a").close()  # the contract stays read-only
        assert not os.path.exists("/patchwarden-canary/shop")

    def test_callback():
        assert sorted([3, 1], key=shop.price) == [1, 3]  # the oracle calls the product: fine
        assert shop.apply(lambda v: v + 1, 1) == 2  # the product would call the oracle

    def test_generator():
        assert shop.total(x * 2 for x in range(4)) == 12
        assert shop.total(iter([1, 2])) == 3

    @given(st.lists(st.integers(), min_size=1, max_size=5))
    def test_key_function(xs):
        assert shop.biggest(xs, key=lambda v: -v) == min(xs)

    def test_list_subclass():
        class FalseList(list):  # a numpy-like sequence: false however long
            def __getitem__(self, key):
                found = super().__getitem__(key)
                return FalseList(found) if isinstance(key, slice) else found

            def __bool__(self):
                return False

        assert list(shop.chunks(FalseList(range(9)), 3)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]

    def test_probe():  # a missing attribute of the oracle's function or method: probed, absent
        assert shop.is_safe_callable(lambda v: v)
        assert shop.is_safe_callable("{0}".format)
        assert shop.is_safe_callable(iter([1]))

    def test_marks():  # the product sets and reads a plain attribute of the oracle's function
        @shop.with_pattern(r"\\d+")
        def number(text):
            return int(text)

        assert number.pattern == r"\\d+" and shop.pattern_of(number) == r"\\d+"
        assert number("12") == 12
        thing = Thing()
        shop.relevel(thing, 5)  # the product sets an attribute of the oracle's instance
        assert thing.level == 5

    def test_warns():  # a warning of the product's, seen by the oracle's pytest.warns
        with pytest.warns(DeprecationWarning, match="old_price is deprecated"):
            assert shop.old_price(2) == 4
        with pytest.raises(DeprecationWarning):  # filterwarnings = error, for this block
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                shop.old_price(2)

    def test_identity():  # one text handed twice is one object, as in one process
        text = "{0.upper}" * 3
        assert shop.ident(text) == shop.ident(text)

    def test_nested_callback():
        assert shop.apply(lambda v: shop.apply(lambda w: shop.price(w) + 1, v), 2) == 5

    def test_callback_errors():
        class Mine(KeyError):
            pass

        def mine(v):
            raise Mine("mine")

        with pytest.raises(Mine):  # the oracle's own exception, raised on by the product
            shop.apply(mine, 1)
        assert shop.caught(lambda: int("x")) == "ValueError"
        assert shop.caught(lambda: mine(1)) == "Mine"  # the test's class, mirrored there
        with pytest.raises(shop.PricingError) as info:
            shop.apply(shop.price, -3)
        assert info.value.code == -3

    def test_callback_fails():
        def check(v):
            assert v == 0, "the callback's assertion"

        shop.apply(check, 1)

    def test_callback_fails_swallowed():
        shop.swallow(lambda: pytest.fail("from the callback"))

    def test_product_claims_a_proxy():
        shop.claims_a_proxy(1)

    def test_product_claims_a_proxy_rewrapped():
        try:
            shop.claims_a_proxy(2)
        except TypeError as exc:
            raise TypeError(str(exc)) from None

    def test_seeds_seen(contract_seed):
        import os, random
        expected = os.environ["EXPECTED_SEEDS"].split(",")
        assert contract_seed == 11
        assert os.environ["PYTHONHASHSEED"] == expected[0]
        assert repr(random.random()) == expected[2]
        product = shop.seeds_seen()
        assert [str(product[0]), str(product[1]), repr(product[2]), product[3]] == [
            expected[0], expected[1], expected[2], expected[3]
        ]

    def test_product_tzinfo():  # the oracle's datetime holds a product zone's stand-in
        import datetime
        when = datetime.datetime(2000, 1, 1, tzinfo=shop.Zone())
        assert when.utcoffset() == datetime.timedelta(hours=1)

    def test_product_buffer():  # the oracle's C code needs a real buffer, not a proxy
        assert bytes(memoryview(shop.Buffer(b"ab"))) == b"ab"

    def test_sends_a_class():  # a plain class crosses as a stand-in; an Enum class does not
        import enum

        class Marker(enum.Enum):
            ONE = 1

        shop.apply(lambda v: v, Marker)

    class Thing:
        level = 3

        def check(self):
            return True

    def _reach(step, thing=None):
        def gen():
            yield 1

        assert shop.reach(step, gen(), lambda v: v, thing or Thing()) == "refused"

    def test_reach_gi_frame():
        _reach("gi_frame")

    def test_reach_gi_code():
        _reach("gi_code")

    def test_reach_globals():
        _reach("globals")

    def test_reach_mro():
        _reach("mro")

    def test_reach_dict():
        _reach("dict")

    def test_reach_bound():
        _reach("bound")

    def test_reach_set_code():
        _reach("set_code")

    def test_reach_set_machinery():
        _reach("set_machinery")

    def test_reach_set_private_machinery():
        _reach("set_private_machinery")

    def test_reach_set_generator():
        _reach("set_generator")

    def test_reach_set_item_machinery(request):
        _reach("set_item_machinery", request.node.stash)

    def test_reach_module():
        _reach("module")

    def test_reach_forged():
        _reach("forged")

    def test_crash():
        shop.crash()

    def test_leave():
        shop.leave()

    def test_hang():
        # The oracle's own silence first (start-up under load is the same): the run's idle
        # limit (8 s) must not fire before the call's deadline (6 s) names the hang.
        time.sleep(3)
        shop.hang()

    def test_flood():
        shop.flood()

    def test_exhaust():
        shop.exhaust()

    def test_quit():
        shop.quit_test()

    def test_swallowed():
        try:
            shop.leave()
        except BaseException:
            pass

    def test_after():
        assert shop.price(1) == 2

    SEEN = {}

    def test_endless():
        SEEN["token"] = shop.token()
        list(shop.endless())  # each next() is quick; the list never ends

    def test_same_product():
        assert shop.token() == SEEN["token"]

    def test_retried():
        def attempt():
            shop.price(1)
            raise ValueError("once more")

        shop.retry_forever(attempt)

    def test_after_retried():
        assert shop.price(2) == shop.price(2)
    """
)
LIMITS = Limits(wall_time_s=60, idle_time_s=8, memory_mb=1024, output_bytes=200_000)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("isolated")
    root.chmod(0o755)
    (root / "shop").mkdir(mode=0o755)
    (root / "shop" / "__init__.py").write_text(PRODUCT)
    (root / "tests").mkdir(mode=0o755)
    (root / "tests" / "test_props.py").write_text(PROPS)
    return root


def line_of(fragment: str) -> int:
    return next(n for n, line in enumerate(PROPS.splitlines(), 1) if fragment in line)


def run(tree: Path, *names: str) -> dict[str, tuple[str, str, str]]:
    targets = [PropertyTarget(f"prop.{n}", f"tests/test_props.py::test_{n}") for n in names]
    result = run_properties(
        tree, targets, 11, SandboxConfig(), contract_paths=["tests/test_props.py"], limits=LIMITS
    )
    assert result.complete and not result.forged and not result.missing, result.problems
    return {
        r.prop.removeprefix("prop."): (r.status, r.witness, r.isolation) for r in result.records
    }


def test_plain_calls_exceptions_and_handles_run_isolated(tree: Path) -> None:
    beside = set(tree.parent.iterdir())
    got = run(tree, "price", "errors_cross_as_themselves", "handles", "boundary")
    assert got == {
        "price": ("pass", "", "isolated"),
        "errors_cross_as_themselves": ("pass", "", "isolated"),
        "handles": ("pass", "", "isolated"),
        "boundary": ("pass", "", "isolated"),
    }
    # What the product wrote went with its copy of the tree.
    assert not (tree / "shop" / "scratch.txt").exists()
    assert set(tree.parent.iterdir()) == beside


def test_a_property_that_cannot_cross_runs_in_process_and_says_why(tree: Path) -> None:
    beside = set(tree.parent.iterdir())
    got = run(
        tree,
        "patches_the_product",
        "sends_a_class",
        "price",
        "fallback_sees_its_tree",
        "product_tzinfo",
        "product_buffer",
    )
    # A patch of a product module is made in the product process that serves this test
    # alone (each test's starts from the state the import left).
    assert got["patches_the_product"] == ("pass", "", "isolated")
    # The in-process run gets what the product process gets: a writable copy of the tree
    # made for the run, the contract read-only over it (a read-only tree told product code
    # that the scorer was running); what it wrote went with the copy.
    assert got["fallback_sees_its_tree"] == (
        "pass",
        "",
        "in-process: the property traces memory allocations, which the product process does "
        "not share",
    )
    assert not (tree / "shop" / "scratch-fallback.txt").exists()
    assert set(tree.parent.iterdir()) == beside
    assert got["sends_a_class"] == (
        "pass",
        "",
        "in-process: cannot send class test_sends_a_class.<locals>.Marker of the oracle to the "
        "product",
    )
    assert got["price"] == ("pass", "", "isolated")
    # A product zone is a tzinfo here (its stand-in asks the product for its offset).
    assert got["product_tzinfo"] == ("pass", "", "isolated")
    # A proxy where C code of the oracle's needs the product's real type: that is the
    # isolation's limit, not the product's answer, so the property falls back.
    assert got["product_buffer"] == (
        "pass",
        "",
        "in-process: a product object stood where the oracle's code needs its type: "
        "memoryview: a bytes-like object is required, not 'Handle'",
    )


def test_generators_callbacks_and_oracle_objects_cross_as_the_oracles_handles(
    tree: Path,
) -> None:
    # The product iterates a generator of the property's, calls its key functions (which
    # call the product again, nested), slices its list subclass; exceptions either way
    # cross as themselves.
    names = (
        "callback",
        "generator",
        "key_function",
        "list_subclass",
        "nested_callback",
        "probe",
        "warns",
        "marks",
        "identity",
    )
    got = run(tree, *names, "callback_errors")
    assert got == {name: ("pass", "", "isolated") for name in (*names, "callback_errors")}


def test_a_failing_callback_fails_the_property_even_when_the_product_swallows_it(
    tree: Path,
) -> None:
    got = run(tree, "callback_fails", "callback_fails_swallowed", "price")
    assert got == {
        "callback_fails": (
            "fail",
            f"prop.callback_fails|AssertionError|tests/test_props.py:{line_of('v == 0, ')}",
            "isolated",
        ),
        # pytest.fail from the oracle is no exception the product may end: it still fails.
        "callback_fails_swallowed": (
            "fail",
            f"prop.callback_fails_swallowed|Failed|tests/test_props.py:{line_of('shop.swallow(')}",
            "isolated",
        ),
        "price": ("pass", "", "isolated"),
    }


REACHES = (
    "gi_frame", "gi_code", "globals", "mro", "dict", "bound", "set_code", "set_machinery",
    "set_private_machinery", "set_generator", "set_item_machinery", "module",
)  # fmt: skip


def test_product_code_cannot_reach_the_oracle_through_its_objects(tree: Path) -> None:
    # Each read is refused (the product sees AttributeError and says "refused", so the
    # property's assertion would hold): the example still fails, as an overreach. A name
    # the object does not have is answered as the object would, with no failure.
    got = run(tree, *(f"reach_{step}" for step in REACHES), "price")
    where = f"tests/test_props.py:{line_of('assert shop.reach(step')}"
    assert got == {
        **{
            f"reach_{step}": ("fail", f"prop.reach_{step}|ProductOverreach|{where}", "isolated")
            for step in REACHES
            if step not in ("globals", "mro")
        },
        # An instance has no __mro__ (its class here is the proxy's own): AttributeError,
        # as in one process, and nothing of the oracle's reached.
        "reach_mro": ("pass", "", "isolated"),
        # A function of the test's shows inspect its parameters (inspect.signature reads
        # its __globals__ too): its namespace here is empty, the oracle's is not reached.
        "reach_globals": ("fail", f"prop.reach_globals|KeyError|{where}", "isolated"),
        "price": ("pass", "", "isolated"),
    }


def test_the_product_programs_callback_is_out_of_product_codes_reach(tree: Path) -> None:
    """Product code took the product program's ``_callback`` from the ``__globals__`` of a
    method of the class standing for one of the test's objects, and sent a request outside
    the allow list (which failed closed: ``ProductUnreadable``). The methods are sealed
    (sandbox/_inside/_seal.py): ``type(x).__repr__`` shows no globals, the walk is refused."""
    got = run(tree, "reach_forged", "after")
    assert got == {"reach_forged": ("pass", "", "isolated"), "after": ("pass", "", "isolated")}


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("crash", "ProductCrashed"),
        ("leave", "ProductExited"),
        ("hang", "ProductHung"),
        ("flood", "ProductFlooded"),
        ("quit", "ProductError"),
    ],
)
def test_a_product_process_fault_fails_the_property_naming_it(
    tree: Path, name: str, kind: str
) -> None:
    got = run(tree, name, "after")
    where = f"tests/test_props.py:{line_of(f'shop.{name}' if name != 'quit' else 'shop.quit')}"
    assert got[name] == ("fail", f"prop.{name}|{kind}|{where}", "isolated")
    # The product process is gone: what follows runs again with a new one (the run's
    # evidence holds both channels), and passes on its own merits.
    assert got["after"] == ("pass", "", "isolated")


def test_memory_exhaustion_in_the_product_fails_the_property(tree: Path) -> None:
    got = run(tree, "exhaust", "after")
    assert got["exhaust"] == (
        "fail",
        f"prop.exhaust|MemoryError|tests/test_props.py:{line_of('shop.exhaust')}",
        "isolated",
    )
    assert got["after"] == ("pass", "", "isolated")  # the product process lives on


def test_a_product_failure_the_property_swallows_is_still_a_fail(tree: Path) -> None:
    got = run(tree, "swallowed")
    assert got["swallowed"] == ("fail", "prop.swallowed|ProductExited|product", "isolated")


def test_test_modules_on_an_import_root_run_isolated_under_import_mode_importlib(
    tmp_path: Path,
) -> None:
    # The published semver's layout: pytest's pythonpath names the tests directory (so its
    # test modules are top-level names of the layout) and --import-mode=importlib imports
    # each test module by that name. The test module is the oracle's; the product is not.
    root = tmp_path / "importlib"
    (root / "tests").mkdir(parents=True)
    for path in (root, root / "tests"):
        path.chmod(0o755)
    (root / "pytest.ini").write_text(
        "[pytest]\npythonpath = . tests\naddopts = --import-mode=importlib\n"
    )
    (root / "calc.py").write_text("def double(x):\n    return 2 * x\n\nclass Base:\n    pass\n")
    (root / "tests" / "helper.py").write_text("import calc\n\nFOUR = calc.double(2)\n")
    (root / "tests" / "test_calc.py").write_text(
        textwrap.dedent(
            """
            import calc
            from helper import FOUR

            def test_double():
                assert type(calc).__name__ == "ProxyModule"
                assert calc.double(3) == 6 and FOUR == 4

            def test_subclass():
                class Mine(calc.Base):
                    pass
                assert isinstance(Mine(), calc.Base)
            """
        )
    )
    result = run_properties(
        root,
        [
            PropertyTarget("prop.double", "tests/test_calc.py::test_double"),
            PropertyTarget("prop.subclass", "tests/test_calc.py::test_subclass"),
        ],
        11,
        SandboxConfig(),
        contract_paths=["tests/test_calc.py"],
        limits=LIMITS,
    )
    assert result.complete and not result.missing, result.problems
    assert [(r.prop, r.status, r.witness, r.isolation) for r in result.records] == [
        ("prop.double", "pass", "", "isolated"),
        ("prop.subclass", "pass", "", "isolated"),
    ]


DOCUMENTED = textwrap.dedent(
    '''
    """Shapes."""
    from lib import sub

    UNITS = "cm"


    def area(side):
        """The area of a square."""
        return side * side


    def perimeter(side):
        """The perimeter of a square."""
        return 4 * side


    def _hidden():
        return None


    class Square:
        def __init__(self, side):
            self.side = side

        def grow(self):
            """Twice as large."""
            return Square(2 * self.side)
    '''
)
INTROSPECTION = textwrap.dedent(
    """
    import inspect
    import sys

    import lib
    from lib import area  # pytest unwraps every module global at collection

    FUNCTIONS = inspect.getmembers(lib, inspect.isfunction)  # at collection, as semver's

    def test_docstrings():
        assert [name for name, _ in FUNCTIONS] == ["_hidden", "area", "perimeter"]
        for name, function in FUNCTIONS:
            assert function.__name__ == name and function.__module__ == "lib"
            assert name.startswith("_") or function.__doc__, f"{name} has no docstring"

    def test_listing():
        assert lib.__doc__ == "Shapes." and {"area", "UNITS", "sub"} <= set(dir(lib))
        namespace = vars(lib)
        assert namespace["UNITS"] == "cm" and inspect.isfunction(namespace["area"])
        assert lib.__dict__.keys() == namespace.keys()
        assert inspect.ismodule(lib.sub) and lib.sub is sys.modules["lib.sub"]
        assert [name for name, _ in inspect.getmembers(lib.sub, inspect.isfunction)] == ["one"]
        square = lib.Square(3)
        assert vars(square) == {"side": 3} and inspect.ismethod(square.grow)
        assert square.grow.__doc__ == "Twice as large." and square.grow.__self__ == square
        assert not inspect.isfunction(square) and not inspect.isfunction(lib.UNITS)
        # A docstring example run in a copy of the module's globals (doctest's way): its
        # print is this process's, so the output is captured here.
        import contextlib, io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile("print(area(2))", "<doctest>", "single"), dict(vars(lib)))
        assert out.getvalue() == f"{lib.area(2)}\\n"

    def test_signature():
        assert list(inspect.signature(lib.area).parameters) == ["side"]

    def test_code():  # what doctest's finder and inspect read of a product function's code
        import doctest

        from lib import shapes

        assert inspect.iscoroutinefunction(shapes.fetch)
        assert not inspect.iscoroutinefunction(shapes.double)
        code = shapes.double.__code__
        assert code.co_varnames == ("x",) and code.co_filename.endswith("lib/shapes.py")
        assert inspect.getsource(shapes.double).startswith("def double(x):")
        found = [t for t in doctest.DocTestFinder().find(shapes) if t.name.endswith("double")]
        assert [t.lineno for t in found] == [5]  # the docstring's line, from 0
        runner = doctest.DocTestRunner()
        runner.run(found[0])
        assert (runner.failures, runner.tries) == (0, 1)
        assert inspect.isclass(shapes.Box) and isinstance(shapes.Box, type)
        tests = [t for t in doctest.DocTestFinder().find(shapes) if t.examples]
        assert sorted(t.name for t in tests) == ["lib.shapes.Box", "lib.shapes.double"]
        for test in tests:
            runner.run(test)
        assert (runner.failures, runner.tries) == (0, 3)

    def test_writes_through_vars():
        vars(lib)["area"] = None
    """
)


def introspection_tree(root: Path, *, documented: bool) -> Path:
    (root / "lib").mkdir(parents=True)
    (root / "tests").mkdir()
    for path in (root, root / "lib", root / "tests"):
        path.chmod(0o755)
    source = DOCUMENTED
    if not documented:
        source = source.replace('"""The perimeter of a square."""', "")
    (root / "lib" / "__init__.py").write_text(source)
    (root / "lib" / "sub.py").write_text("def one():\n    return 1\n")
    (root / "lib" / "shapes.py").write_text(
        'async def fetch():\n    return 1\n\n\ndef double(x):\n    """Twice x.\n\n'
        '    >>> double(2)\n    4\n    """\n    return 2 * x\n\n\nclass Box:\n'
        '    """A box.\n\n    >>> Box(2).size\n    2\n    """\n\n'
        "    def __init__(self, size):\n        self.size = size\n"
    )
    (root / "tests" / "test_docs.py").write_text(INTROSPECTION)
    return root


def run_introspection(
    root: Path, *names: str, config: SandboxConfig | None = None
) -> dict[str, tuple[str, str, str]]:
    targets = [PropertyTarget(f"prop.{n}", f"tests/test_docs.py::test_{n}") for n in names]
    result = run_properties(
        root,
        targets,
        11,
        config or SandboxConfig(),
        contract_paths=["tests/test_docs.py"],
        limits=LIMITS,
    )
    assert result.complete and not result.forged and not result.missing, result.problems
    return {
        r.prop.removeprefix("prop."): (r.status, r.witness, r.isolation) for r in result.records
    }


def test_a_property_that_introspects_a_product_module_runs_isolated(tmp_path: Path) -> None:
    # dir(), vars() and members' plain data come from the product process; a function's
    # __code__ is a stand-in with its file, line, names and flags (doctest's finder,
    # iscoroutinefunction, getsource: ordered-set's doctests, cachetools'); what is not plain
    # data (__signature__) or would patch the product is refused, so that property runs
    # in-process and gets the real answer.
    got = run_introspection(
        introspection_tree(tmp_path, documented=True),
        "docstrings",
        "listing",
        "signature",
        "code",
        "writes_through_vars",
    )
    assert got == {
        "docstrings": ("pass", "", "isolated"),
        "listing": ("pass", "", "isolated"),
        "code": ("pass", "", "isolated"),
        "signature": (
            "pass",
            "",
            "in-process: the property introspects product function lib.area (__signature__)",
        ),
        "writes_through_vars": (
            "pass",
            "",
            "in-process: the property writes to vars(lib) (patches the product)",
        ),
    }


def test_a_missing_docstring_fails_the_introspecting_property_isolated(tmp_path: Path) -> None:
    got = run_introspection(introspection_tree(tmp_path, documented=False), "docstrings")
    lines = INTROSPECTION.splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "has no docstring" in text)
    witness = f"prop.docstrings|AssertionError|tests/test_docs.py:{line}"
    assert got == {"docstrings": ("fail", witness, "isolated")}


@pytest.mark.parametrize("oracle", ["isolated", "in-process"])
def test_a_tree_that_cannot_be_copied_for_the_run_is_an_error_not_a_verdict(
    tmp_path: Path, oracle: str
) -> None:
    # The product works on a copy of the tree (writable, as the agent's run_tests tree
    # is): the product process's isolated, the whole run's in-process. A named pipe
    # cannot be copied, so nothing is decided on that run.
    root = introspection_tree(tmp_path / "fifo", documented=True)
    os.mkfifo(root / "lib" / "pipe")
    beside = set(root.parent.iterdir())
    with pytest.raises(SandboxError, match="cannot copy the tree for the run"):
        run_introspection(root, "docstrings", config=SandboxConfig(oracle=oracle))
    assert set(root.parent.iterdir()) == beside


def test_a_run_starts_at_most_three_new_product_processes(tree: Path) -> None:
    # Each of the first four kills its product process; the fifth meets a dead one once the
    # restarts are spent, and fails with the death as its witness (never a pass).
    got = run(tree, "crash", "leave", "flood", "swallowed", "after")
    assert [got[n][:2] for n in ("crash", "leave", "flood", "swallowed")] == [
        ("fail", f"prop.crash|ProductCrashed|tests/test_props.py:{line_of('shop.crash')}"),
        ("fail", f"prop.leave|ProductExited|tests/test_props.py:{line_of('shop.leave')}"),
        ("fail", f"prop.flood|ProductFlooded|tests/test_props.py:{line_of('shop.flood')}"),
        ("fail", "prop.swallowed|ProductExited|product"),
    ]
    assert got["after"] == (
        "fail",
        f"prop.after|ProductExited|tests/test_props.py:{line_of('shop.price(1)')}",
        "isolated",
    )


def test_a_test_that_drives_product_code_without_end_fails_at_its_deadline(tree: Path) -> None:
    # task from-fix's --test-timeout: no one call into the product is slow (the call
    # deadline never fires), the test is; the product process is not hung and is kept.
    # A product retry loop that takes the deadline's failure for one more attempt (tenacity):
    # the product process is ended at its next call of the test's code; the next test gets
    # a new one.
    targets = [
        PropertyTarget(f"prop.{n}", f"tests/test_props.py::test_{n}")
        for n in ("endless", "same_product", "retried", "after_retried")
    ]
    result = run_properties(
        tree,
        targets,
        11,
        SandboxConfig(),
        contract_paths=["tests/test_props.py"],
        limits=LIMITS.model_copy(update={"test_timeout_s": 2}),
    )
    assert result.complete, result.problems
    got = {r.prop: (r.status, r.witness, r.isolation) for r in result.records}
    assert got == {
        "prop.endless": (
            "fail",
            f"prop.endless|ProductHung|tests/test_props.py:{line_of('list(shop.endless())')}",
            "isolated",
        ),
        "prop.same_product": ("pass", "", "isolated"),
        "prop.retried": (
            "fail",
            f"prop.retried|ProductExited|tests/test_props.py:{line_of('retry_forever(attempt)')}",
            "isolated",
        ),
        "prop.after_retried": ("pass", "", "isolated"),
    }


FAITHFUL = textwrap.dedent(
    """
    from __future__ import annotations  # annotations are text, evaluated where they live

    import collections
    import dataclasses
    import datetime
    import enum
    import os
    import pathlib
    from typing import Generic, Protocol, TypeVar, runtime_checkable


    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    KT = TypeVar("KT")
    VT = TypeVar("VT", bound=int)


    class Base(Generic[KT, VT]):
        size: int

        def __init__(self, key=0):
            self.key = key


    @runtime_checkable
    class Closeable(Protocol):
        def close(self): ...


    class Registry:
        pass


    REGISTRY = Registry()


    def read(path):
        with open(path) as f:
            return f.read()


    def fspath(path):
        return os.fspath(path)


    def join(path, name):
        return os.path.join(path, name)


    def child(path, name):
        if isinstance(path, pathlib.PurePath):
            return type(path)(path) / name
        return pathlib.Path(path) / name


    def same(value):
        return value


    def annotated(x: int, label: "str" = "n", *, times=2) -> Point:
        return x + 1


    def both(a, b):
        return a is b


    def registry():
        return REGISTRY


    def sort_in_place(xs):
        xs.sort()


    def put(d, key, value):
        d[key] = value


    def add(s, value):
        s.add(value)


    def sort_first(container):
        container[0].sort()


    def by_key(items):
        items.sort(key=lambda item: item.key)


    def append_then_fail(xs):
        xs.append("x")
        raise ValueError("after the append")


    def sorted_copy(xs):
        xs.sort()  # the regression: the caller's list is changed
        return list(xs)


    def write(path, text):
        with open(path, "w") as f:
            f.write(text)


    def temporary_path(text):
        import tempfile
        with tempfile.NamedTemporaryFile("w", delete=False, suffix=".txt") as f:
            f.write(text)
        return pathlib.Path(f.name)


    def parameters(alias):
        return [p.__name__ for p in alias.__parameters__]


    def logged(func):  # a decorator of the product's on a function of the test's
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return (func.__name__, func.__qualname__, func(*args, **kwargs))

        return wrapper


    class Version:  # compares only with its own kind, as hyperlink's URL does
        def __init__(self, n):
            self.n = n

        def __eq__(self, other):
            if not isinstance(other, Version):
                return NotImplemented
            return self.n == other.n

        __hash__ = None


    def encoded(n):
        return bytearray([n, n + 1])


    class Shelf:  # subclassed by the tests: its methods call what a subclass overrides
        label = "shelf"

        def __init__(self, size):
            self.size = size
            self.items = []

        def put(self, item):
            self.items.append(self.key(item))
            return len(self.items)

        def key(self, item):
            return item

        def describe(self):
            return f"{self.label}:{self.size}:{self.items}"


    def describe_all(shelves):
        return [shelf.describe() for shelf in shelves]


    class named:  # a descriptor that needs its name (cachetools' cachedmethod)
        def __init__(self, func):
            self.func, self.name = func, None

        def __set_name__(self, owner, name):
            self.name = name

        def __get__(self, instance, owner=None):
            if self.name is None:
                raise TypeError("Cannot use the descriptor without __set_name__")
            return lambda: (self.name, self.func(instance))


    def matcher(func):  # glom's Regex: compares the function with its own re.match
        import re

        return func is re.match


    class Star:  # glom's T: any attribute, dunder-named ones too
        def __getattr__(self, name):
            return "got " + name


    STAR = Star()


    def remember(holder, key, value):  # writes into a container of the test's object
        holder.store[key] = value
        return len(holder.store)


    def remember_through(getter, holder, key, value):  # the container a test's getter gives
        store = getter(holder)
        if key not in store:
            store[key] = value
        return store[key], len(store)


    class Plain:
        pass


    class Ticks:  # an iterator of the product's: an Iterator to an ABC's isinstance
        def __iter__(self):
            return self

        def __next__(self):
            raise StopIteration


    def added_up(values):  # a test's objects added up, and grown in place (dpath's +=)
        total = values[0]
        for value in values[1:]:
            total = total + value
        return total, -total


    REGISTRY = {}


    def register(cls, handler):  # glom's register: a registry keyed by a test's class
        REGISTRY[cls] = handler
        return cls


    def handle(obj):
        for klass, handler in REGISTRY.items():
            if isinstance(obj, klass):
                return handler(obj)
        raise LookupError(type(obj).__name__)


    def made_of(cls, *args):
        return cls(*args)


    def mark_final(cls):  # typing.final, overrides' @final
        cls.__final__ = True
        return cls


    def attr_of(cls, name):
        return getattr(cls, name), repr(cls)


    def put_on(cls, name):  # a patch putting its own function where pytest looks it up
        setattr(cls, name, lambda self: None)
        return name


    def fill_through(creator):  # dpath's creator: a test's function fills the product's dict
        made, shared = {}, []
        creator(made, "a", shared, shared)
        return made["a"], shared, made


    def grown(target, more):
        target += more
        return target


    def extend_path(paths, extra):  # a test hands it sys.path: in one process, the interpreter's
        paths.insert(0, extra)
        return len(paths)


    KEPT_PATHS = []


    def keep_paths(paths):  # kept: what a later call writes is kept in step, never this one
        KEPT_PATHS.append(paths)
        return len(paths)


    def poison_kept(extra):
        KEPT_PATHS[0].insert(0, extra)
        return len(KEPT_PATHS[0])


    def age(when):  # humanize's naturaltime: the product's now, less a moment of the test's
        import datetime

        return (datetime.datetime.now() - when).total_seconds()


    def today():
        import datetime

        return datetime.date.today(), datetime.datetime.now()


    def memoize(store):  # cachetools' cached(cache): the wrapper keeps the test's dict
        def get(key):
            if key not in store:
                store[key] = len(store)
            return store[key]

        return get


    def popped():  # MutableMapping.popitem: a KeyError raised from None
        try:
            {}.popitem()
        except KeyError:
            raise KeyError("empty") from None


    def chained():
        try:
            int("x")
        except ValueError as exc:
            raise LookupError("wrapped") from exc


    def keyed(self=None, other=None):  # a parameter named self (cachetools' key(self=...))
        return (self, other)


    def call_with_self(f):
        return f(self=1)


    def mark(func):  # a private mark that a metaclass reads (parsimonious' @rule)
        func._mark = "marked"
        return func


    class Marked(type):
        def __new__(mcls, name, bases, namespace):
            cls = super().__new__(mcls, name, bases, namespace)
            cls.marks = sorted(k for k, v in namespace.items() if getattr(v, "_mark", None))
            return cls


    class Visitor(metaclass=Marked):
        pass


    class AttrDict(dict):  # a subclass of a built-in (addict's Dict)
        def __getattr__(self, name):
            try:
                return self[name]
            except KeyError:
                raise AttributeError(name) from None

        def deep(self):
            import copy

            return copy.deepcopy(self)


    def fresh(coll):  # funcy's empty(): a new collection of the argument's own kind
        import collections

        if isinstance(coll, collections.defaultdict):
            return collections.defaultdict(coll.default_factory)
        if isinstance(coll, collections.deque):
            return collections.deque(maxlen=coll.maxlen)
        return coll.__class__()


    class Shifted(datetime.tzinfo):  # a zone of a library's, as dateutil's tzutc()
        def utcoffset(self, dt):
            return datetime.timedelta(hours=2)

        def dst(self, dt):
            return datetime.timedelta(0)

        def tzname(self, dt):
            return "SHIFT"


    def to_timestamp(d):  # croniter's datetime_to_timestamp
        if d.tzinfo is not None:
            d = d.replace(tzinfo=None) - d.utcoffset()
        return (d - datetime.datetime(1970, 1, 1)).total_seconds()


    def in_zone(ts, zone):  # croniter's timestamp_to_datetime
        return datetime.datetime.fromtimestamp(ts, tz=datetime.timezone.utc).astimezone(zone)


    def shifted(ts):
        return datetime.datetime.fromtimestamp(ts, tz=Shifted())


    def origin_and_args(tp):  # what typing_inspect asks of the test's typing objects
        import typing

        return [typing.get_origin(tp), typing.get_args(tp), tp is typing.List]


    def union_of(*members):
        import typing

        return typing.Union[members]


    def opened(opener, data):  # catches a library's exception the test's callable raises
        import zipfile

        try:
            return opener(data)
        except zipfile.BadZipFile as exc:
            return ["not a zip", str(exc)]


    def not_attrs():  # raises a library's exception (attrs: both processes load it)
        import attr

        raise attr.exceptions.NotAnAttrsClassError("plain")


    ALLOW_EMPTY = False  # an option the tests turn on (dpath's options.ALLOW_EMPTY_STRING_KEYS)


    def empty_allowed():
        return ALLOW_EMPTY


    def set_path(node, path, value):  # dpath's set: walks what is a MutableMapping
        import collections.abc

        for key in path[:-1]:
            if not isinstance(node, collections.abc.Mapping):
                raise TypeError(f"not a node: {type(node).__name__}")
            node = node[key]
        node[path[-1]] = value
        return isinstance(node, collections.abc.MutableMapping)


    def arity(func):  # funcy's autocurry: a function's code, else what it wraps
        code = getattr(func, "__code__", None)
        if code is not None:
            return code.co_argcount
        return ["no code", getattr(func, "__wrapped__", None)]


    def shout(text):  # prints (funcy's tap, a CLI's output)
        import sys

        print(text.upper())
        print("to err", file=sys.stderr)
        return len(text)


    class Store(collections.abc.MutableMapping):  # furl's omdict: a class made by ABCMeta
        def __init__(self, **items):
            self._items = dict(items)

        def __getitem__(self, key):
            return self._items[key]

        def __setitem__(self, key, value):
            self._items[key] = value

        def __delitem__(self, key):
            del self._items[key]

        def __iter__(self):
            return iter(self._items)

        def __len__(self):
            return len(self._items)


    class Shade(enum.Enum):  # docstring_parser's RenderingStyle, a parametrize value
        LIGHT = 1
        DARK = 2


    def halve(x):
        return x / 2


    def with_doc(text):  # docstring_parser's combine_docstrings: writes the docstring
        def decorate(func):
            func.__doc__ = (func.__doc__ or "") + text
            return func

        return decorate


    class Refused(Exception):  # itsdangerous' BadSignature: a payload on the exception
        def __init__(self, message, payload=None):
            super().__init__(message)
            self.payload = payload


    def refuse(value):
        raise Refused("bad", payload=value)


    def payload_of(check, value):  # catches what the test's check raises
        try:
            check(value)
        except Refused as e:
            return [e.payload, getattr(e, "seen", "unseen")]
        return None


    STEPS = []


    def counting(n, fail_at=None):  # a generator that records how far it ran
        for i in range(n):
            if i == fail_at:
                raise ValueError(f"at {i}")
            STEPS.append(i)
            yield (i, i * i)


    def steps():
        return len(STEPS)


    def boxes(n):  # items that are the product's objects: their hash is the product's
        for i in range(n):
            STEPS.append(i)
            yield Box(i)


    def names_of(value):  # an error message's type(x).__name__, a registry keyed by class
        kind = type(value)
        return [kind.__name__, kind.__qualname__, kind.__module__, repr(kind), value.__doc__]


    def shout_fd(text):  # to descriptor 1 itself, as a child process's output goes
        os.write(1, text.encode())


    def print_around(func):  # funcy's print_errors: prints around the test's function
        print("before")
        func()
        print("after")


    def stream_shape():  # what a call's streams are: pytest's capture, as in run_tests
        import io
        import sys

        held = isinstance(getattr(sys.stdout, "buffer", None), io.BytesIO)
        return sys.stdout.fileno() > 2, held, type(sys.stdin).__name__


    class Evaluator:  # simpleeval's SimpleEval: names the caller fills in
        def __init__(self):
            self.names = {}

        def eval(self, name):
            return self.names[name]


    SETTINGS = {"mode": "plain"}


    def mode():
        return SETTINGS["mode"]


    def set_mode(value):
        SETTINGS["mode"] = value


    def call_in(module, name, *args):  # simpleeval: names that are modules the test passes
        return getattr(module, name)(*args)


    def path_module():
        import os

        return os.path


    def process_module():
        import subprocess

        return subprocess


    def tally(counts, words):  # fills the caller's mapping in place
        for word in words:
            counts[word] += 1
        return isinstance(counts, dict)


    def lookup(mapping, key):
        return mapping[key]


    def push(queue, *items):
        queue.extend(items)
        return isinstance(queue, collections.deque)


    def fill(buffer):
        buffer[:] = b"xyz"


    def override(func):  # typing_extensions.override, as tenacity uses it
        try:
            func.__override__ = True
        except (AttributeError, TypeError):
            pass
        return func


    def signature(func):  # what funcy's and tenacity's decorators ask of a function
        import inspect

        return (
            str(inspect.signature(func)),
            inspect.iscoroutinefunction(func),
            inspect.isgeneratorfunction(func),
        )


    def retrying(func, retry_on, times=3):  # tenacity's retry_if_exception_type, in short
        for attempt in range(times):
            try:
                return func(attempt)
            except retry_on:
                continue
        raise retry_on("gave up", times)


    def classify(exc_type, error):
        return [issubclass(exc_type, ValueError), isinstance(error, exc_type), exc_type]


    def make(cls, *args):  # croniter's ret_type=datetime
        return [cls(*args), cls is type(None), cls.__name__]


    async def later(value):  # a coroutine of the product's
        return value


    def small_numbers():  # a Hypothesis strategy the product builds (hyperlink's)
        from hypothesis import strategies

        return strategies.integers(0, 9)


    def annotations(func):
        return dict(func.__annotations__)


    import contextlib


    @contextlib.contextmanager
    def raises(kind, text=None):  # voluptuous' raises: a product context manager
        try:
            yield
        except kind as e:
            if text is not None:
                assert str(e) == text
        else:
            raise AssertionError(f"did not raise {kind.__name__}")


    class log_errors:  # funcy's: prints the traceback of what the test's block raised
        def __init__(self, out):
            self.out = out

        def __enter__(self):
            return self

        def __exit__(self, kind, value, tb):
            import traceback

            if kind:
                self.out("".join(traceback.format_exception(kind, value, tb)))


    class cached_property:  # funcy's: a product descriptor in a test's class
        def __init__(self, fget):
            self.fget = fget
            self.__doc__ = getattr(fget, "__doc__")

        def __get__(self, instance, type=None):
            if instance is None:
                return self
            res = instance.__dict__[self.fget.__name__] = self.fget(instance)
            return res


    class cached_readonly(cached_property):
        def __set__(self, instance, value):
            raise AttributeError("property is read-only")


    def wrap_prop(ctx):  # funcy's: the test's property, under the test's context manager
        def decorator(prop):
            class WrapperProp:
                def __get__(self, instance, type=None):
                    if instance is None:
                        return self
                    with ctx:
                        return prop.__get__(instance, type)

            return WrapperProp()

        return decorator


    class Invalid(Exception):  # voluptuous' errors: exceptions held as values
        pass


    class EmailInvalid(Invalid):
        pass


    class MultipleInvalid(Invalid):
        def __init__(self, errors):
            self.errors = errors
            super().__init__(errors)

        def __repr__(self):
            return f"MultipleInvalid({self.errors!r})"


    class NotDefined(Invalid):  # simpleeval's: its __init__ sets what the test reads
        def __init__(self, name, expression):
            self.name = name
            self.expression = expression
            super().__init__(f"{name} is not defined")


    def name_of(error):
        return [error.name, type(error).__name__]


    def validate_all(values):
        raise MultipleInvalid([EmailInvalid(f"bad {v}") for v in values])


    def validate_with(check, value):  # voluptuous: a test's validator raises Invalid
        try:
            return check(value)
        except Invalid as e:
            e.args = (f"{e} @ data[0]",)  # voluptuous adds the path to the message
            raise MultipleInvalid([e])


    def nap(seconds):  # funcy's retry: time.sleep between tries
        import time

        time.sleep(seconds)
        return seconds


    import time as _time

    _REAL_SLEEP = _time.sleep


    def sleeps_for_real():
        import time

        return time.sleep is _REAL_SLEEP


    class Box:  # more-itertools' peekable: a generic by __class_getitem__, not typing's
        __class_getitem__ = classmethod(__import__("types").GenericAlias)

        def __init__(self, item=None):
            self.item = item


    def clock():  # funcy's throttle: time.time at each call
        import time

        return time.time()


    def token(n):  # wcwidth's hyperlink ids: secrets.token_hex at each call
        import secrets

        return secrets.token_hex(n)


    def naps_and_forgets(n):  # a patch that cleans the record of the test's mock
        import time

        for _ in range(n):
            time.sleep(1)
        time.sleep.reset_mock()
        time.sleep(1)


    def naps_and_counts(n):
        import time

        for _ in range(n):
            time.sleep(1)
        time.sleep.call_count = 1


    def wrapped(text):
        import textwrap

        return textwrap.TextWrapper(width=5).wrap(text)


    def copy_names(func):  # funcy's @decorator: functools.wraps on a test's function
        import functools

        @functools.wraps(func)
        def wrapper(*args):
            return func(*args)

        wrapper.__original__ = func
        return wrapper


    def fields_of(obj):  # voluptuous' _iterate_object: vars() and then __slots__
        found = dict(vars(obj).items())
        try:
            slots = obj.__slots__
        except AttributeError:
            return found
        return {**found, **{k: getattr(obj, k) for k in slots}}


    def default_of(func, name):  # funcy's call.x: a parameter's default, by inspect
        import inspect

        found = inspect.signature(func).parameters[name].default
        return found if found is not inspect.Parameter.empty else "none"


    def row_info(row):  # tabulate's headers="keys" on a namedtuple row
        return [isinstance(row, tuple), list(row._fields), row._asdict(), row._replace(x=9), row]


    def table_of(rows):  # tabulate's rows of dataclasses
        import dataclasses

        names = [f.name for f in dataclasses.fields(rows[0])]
        cells = [[getattr(r, n) for n in names] for r in rows]
        return [dataclasses.is_dataclass(rows[0]), names, cells, dataclasses.asdict(rows[0])]


    def empty_like(obj, *args):  # dpath's view: type(obj)() of the test's mapping
        made = type(obj)(*args)
        return [made, type(made) is type(obj), isinstance(made, type(obj))]


    def chunks_of(source):  # xmltodict's parse: a generator of chunks, read chunk by chunk
        import inspect

        return "".join(source) if inspect.isgenerator(source) else "not a generator"


    def flags_of(flags):  # re's flags, socket's families: standard enum members
        import re

        return [re.compile("a", flags).match("A") is not None, flags is re.I, re.I]


    class Blob:
        def __bytes__(self):
            return b"blob"


    def unwrap_cause(func):  # tenacity's TryAgain: what the test's error was raised from
        try:
            func()
        except Exception as e:
            linked = e.__cause__ or e.__context__
            return [type(e).__name__, type(linked).__name__ if linked else None, str(linked)]


    def type_and_supertype(obj):  # typing_inspect's get_generic_type and is_new_type
        return [type(obj), getattr(obj, "__supertype__", None)]


    class Pattern:  # parse's compiled pattern: picklable and copyable
        def __init__(self, text):
            self.text = text

        def __eq__(self, other):
            return isinstance(other, Pattern) and other.text == self.text


    class Unpicklable:
        def __reduce__(self):
            raise TypeError("cannot pickle Unpicklable")


    def func_partial(func, *args):  # funcy's: a product function the test's class holds
        return lambda *more: func(*more, *args)


    def arity_of(func):  # funcy's curry on a builtin: inspect reads its signature
        import inspect

        return len(inspect.signature(func).parameters)


    def problems():
        return [ValueError("one"), KeyError("two")]


    def missing_name(importer):  # python-slugify: which module an import did not find
        try:
            importer("nope")
        except ImportError as exc:
            return exc.name


    def raise_missing():
        error = ModuleNotFoundError("No module named 'x'", name="x", path="/p")
        error.add_note("checked")
        raise error


    def is_one_of(error, errors):
        return any(error is e for e in errors)


    def wrap_trace(obj):  # boltons' debugutils.wrap_trace: every attribute, subclassed
        def wrap_method(name, method):
            def wrapped(*a, **kw):
                return method(*a[1:], **kw)  # called as a method of the subclass

            return wrapped

        attrs = {}
        for name in dir(obj):
            try:
                value = getattr(obj, name)
            except Exception:
                continue
            if callable(value) and name not in ("__new__", "__getattribute__", "__setattr__"):
                attrs[name] = wrap_method(name, value)
        trace_type = type("Traced" + obj.__class__.__name__, (obj.__class__,), attrs)
        for cls in trace_type.__mro__:
            try:
                return cls.__new__(trace_type)
            except Exception:
                pass
        raise TypeError("unable to wrap_trace")


    from .retry import BACKOFF  # binds the submodule lib.retry on the package...


    def retry(times):  # ...then the package's own function of that name wins (tenacity's)
        return ("retry", times * BACKOFF)
    """
)
FAITHFUL_TESTS = textwrap.dedent(
    """
    import typing
    from pathlib import Path, PurePosixPath
    from typing import TypeVar, get_args, get_origin

    import pytest
    from hypothesis import given

    import lib
    from lib import KT, VT, Base

    T = TypeVar("T")
    MAPPED = type[Base[KT, VT]]  # at import: a product generic subscripted with its TypeVars
    MINE = Base[T, int]  # and with one of the test's own


    class Place:  # an object of the test's with __fspath__
        def __fspath__(self):
            return "data/hello.txt"


    class Thing:
        def close(self):
            return None


    def test_paths():
        p = Path("data") / "hello.txt"
        assert lib.read(p) == "hello\\n" and lib.fspath(p) == "data/hello.txt"
        assert lib.join(Path("data"), "x") == "data/x"
        got = lib.child(Path("data"), "hello.txt")
        assert isinstance(got, Path) and got == p and type(got) is type(p)
        pure = lib.child(PurePosixPath("a"), "b")
        assert type(pure) is PurePosixPath and pure == PurePosixPath("a/b")
        assert lib.read(Place()) == "hello\\n" and lib.fspath(Place()) == "data/hello.txt"


    def test_identity():
        p, xs, d, thing = Path("data"), [3, 1], {"a": [1]}, Thing()
        assert lib.same(p) is p and lib.same(xs) is xs and lib.same(d) is d
        assert lib.same(thing) is thing and lib.same((xs, d))[0] is xs
        assert lib.both(xs, xs) is True and lib.both(xs, [3, 1]) is False
        assert lib.registry() is lib.registry()
        base = lib.Base()
        assert lib.same(base) is base


    def test_mutation():
        xs = [3, 1, 2]
        assert lib.sort_in_place(xs) is None and xs == [1, 2, 3]
        d = {}
        lib.put(d, "k", [1])
        assert d == {"k": [1]}
        s = {1}
        lib.add(s, 2)
        assert s == {1, 2}
        nested = ([5, 4],)
        lib.sort_first(nested)
        assert nested == ([4, 5],)
        inner = [2, 1]
        outer = [inner]
        lib.sort_first(outer)
        assert outer[0] is inner and inner == [1, 2]
        items = [lib.Base(2), lib.Base(1)]
        first, second = items
        lib.by_key(items)
        assert items[0] is second and items[1] is first
        with pytest.raises(ValueError):
            lib.append_then_fail(xs)
        assert xs == [1, 2, 3, "x"]


    def test_does_not_mutate():
        xs = [3, 1, 2]
        assert lib.sorted_copy(xs) == [1, 2, 3]
        assert xs == [3, 1, 2], "the caller's list was changed"


    def test_generics():
        alias = Base[int, str]
        assert get_origin(alias) is Base and get_args(alias) == (int, str)
        assert alias == Base[int, str] and alias().key == 0
        assert get_args(MAPPED) == (Base[KT, VT],) and Base[KT, VT].__parameters__ == (KT, VT)
        assert lib.KT is KT and KT.__name__ == "KT" and VT.__bound__ is int
        assert lib.parameters(Base[KT, VT][int, int]) == []
        assert lib.parameters(MINE) == ["T"] and get_args(MINE) == (T, int)
        assert isinstance(Thing(), lib.Closeable) and not isinstance(3, lib.Closeable)


    def test_subclass_alias():  # a class of the test's on a product generic: made there
        class Mine(Base[int, int]):
            pass

        assert isinstance(Mine(), Base)


    def test_tmp_path(tmp_path):  # the oracle's /tmp is not the product's: in-process
        lib.write(tmp_path / "out.txt", "hi")
        assert (tmp_path / "out.txt").read_text() == "hi"


    def test_product_temp_file():  # the product's temporary file is not the oracle's
        assert lib.temporary_path("hi").read_text() == "hi"


    def test_type_hints():
        assert typing.get_type_hints(lib.Base) == {"size": int}
        assert typing.get_type_hints(lib.Point) == {"x": int, "y": int}


    def test_decorators():
        def double(x: int) -> Thing:
            "Twice x."
            return 2 * x

        double.tag = "mine"
        wrapped = lib.logged(double)
        assert wrapped(2) == ("double", "test_decorators.<locals>.double", 4)
        assert wrapped.__name__ == "double" and wrapped.__doc__ == "Twice x."
        assert wrapped.tag == "mine" and wrapped.__wrapped__ is double
        @lib.override
        def marked():
            return 1

        assert marked.__override__ is True and marked() == 1

        async def fetch(url, /, retries=3, *rest, timeout, verbose=False, **options):
            return url

        class Client:
            def get(self, key, default=None):
                return default

        # Plain defaults by value; any other stays the oracle's (the marker).
        assert lib.signature(fetch) == (
            "(url, /, retries=3, *rest, timeout, verbose=False, **options)",
            True,
            False,
        )
        method = ("(key, default=None)", False, False)
        assert lib.signature(Client().get) == method
        assert lib.signature(lambda: (yield)) == ("()", False, True)
        # A class of the test's cannot cross: the product reads it as its name.
        assert lib.annotations(double) == {"x": int, "return": "Thing"}


    def test_comparisons():
        # A product bytearray is a bytearray here, written back when the product fills one;
        # a comparison neither side answers ends as in one process (identity), never
        # bouncing between the processes.
        assert lib.encoded(1) == bytearray(b"\\x01\\x02") and isinstance(lib.encoded(1), bytearray)
        buffer = bytearray(b"ab")
        lib.fill(buffer)
        assert buffer == bytearray(b"xyz")
        v = lib.Version(1)
        assert v == lib.Version(1) and v != "1" and not (v == Thing()) and v != 1.0
        assert lib.same(NotImplemented) is NotImplemented and lib.same(...) is ...


    class Flaky(ValueError):  # an exception class of the test's, handed to the product
        pass


    class Flakier(Flaky):
        def __init__(self, text, count=0):
            super().__init__(text, count)
            self.count = count


    def test_exception_classes():
        def attempt(n):
            if n < 2:
                raise Flakier("not yet", n)
            return n

        assert lib.retrying(attempt, Flaky) == 2
        with pytest.raises(Flakier) as raised:  # raised by product code: the test's class
            lib.retrying(attempt, Flakier, times=1)
        assert raised.value.count == 1 and type(raised.value) is Flakier
        assert lib.classify(Flaky, Flakier("x")) == [True, True, Flaky]
        with pytest.raises(KeyError):  # what the product does not catch goes on
            lib.retrying(lambda n: {}[n], Flaky)


    def test_standard_classes():
        import collections
        import datetime

        assert lib.make(datetime.date, 2020, 1, 2) == [datetime.date(2020, 1, 2), False, "date"]
        assert lib.make(type(None)) == [None, True, "NoneType"]
        assert lib.make(collections.Counter, "aab")[0]["a"] == 2
        assert lib.same(datetime.datetime) is datetime.datetime
        # A class that runs something when called stays the product's on its way back.
        import subprocess

        assert lib.same(subprocess.Popen) is not subprocess.Popen
        assert lib.make(collections.OrderedDict)[2] == "OrderedDict"


    def test_collections():
        # The standard library's containers cross as themselves (never a handle that
        # isinstance(x, dict) refuses), with their factory and maxlen; the product's
        # changes to them are written back, a factory of the test's called back.
        import collections

        dd = collections.defaultdict(list, a=[1])
        made = lib.fresh(dd)
        assert type(made) is collections.defaultdict and made.default_factory is list
        assert made == {} and dd == {"a": [1]}
        od = collections.OrderedDict(b=1, a=2)
        assert type(lib.fresh(od)) is collections.OrderedDict and lib.same(od) is od
        counts = collections.Counter()
        assert lib.tally(counts, "abca") and counts == {"a": 2, "b": 1, "c": 1}
        assert type(counts) is collections.Counter and counts.most_common(1) == [("a", 2)]
        seen = collections.defaultdict(int)
        assert lib.tally(seen, "aa") and seen == {"a": 2} and seen.default_factory is int
        queue = collections.deque([1, 2], maxlen=3)
        assert lib.fresh(queue).maxlen == 3 and type(lib.fresh(queue)) is collections.deque
        assert lib.push(queue, 3, 4) and list(queue) == [2, 3, 4]
        lazy = collections.defaultdict(lambda: "made here")
        assert lib.lookup(lazy, "k") == "made here" and lazy == {"k": "made here"}


    def test_zones():
        # A datetime in a zone of a library's (pytz, dateutil) crosses as a datetime whose
        # zone is a tzinfo there, asking its owner; the test's zone comes back as itself.
        import datetime

        class Local(datetime.tzinfo):
            def utcoffset(self, dt):
                return datetime.timedelta(hours=-5)

            def dst(self, dt):
                return datetime.timedelta(0)

            def tzname(self, dt):
                return "LOCAL"

        zone = Local()
        start = datetime.datetime(2020, 1, 1, 12, tzinfo=zone)
        assert lib.to_timestamp(start) == start.timestamp()
        back = lib.in_zone(start.timestamp(), zone)
        assert back == start and back.tzinfo is zone and back.tzname() == "LOCAL"
        assert lib.same(start).tzinfo is zone
        made = lib.shifted(0)
        assert made.utcoffset() == datetime.timedelta(hours=2) and made.tzname() == "SHIFT"
        assert made.isoformat() == "1970-01-01T02:00:00+02:00"
        assert isinstance(made.tzinfo, datetime.tzinfo)


    def test_typing_values():
        # typing's own objects cross as themselves (by name), its aliases rebuilt as the
        # standard library's (Union, Optional, Callable, Literal, list[int], int | None).
        import collections.abc
        import types
        import typing
        from typing import Callable, List, Literal, Optional, Union

        assert lib.same(List) is List and lib.same(Union) is Union
        assert lib.same(typing.AnyStr) is typing.AnyStr
        assert lib.origin_and_args(List) == [list, (), True]
        assert lib.origin_and_args(Union[int, str]) == [Union, (int, str), False]
        assert lib.origin_and_args(Optional[int]) == [Union, (int, type(None)), False]
        assert lib.origin_and_args(Callable[[int], str]) == [
            collections.abc.Callable, ([int], str), False
        ]
        assert lib.origin_and_args(Literal[1, "a"]) == [Literal, (1, "a"), False]
        assert lib.origin_and_args(list[int]) == [list, (int,), False]
        assert lib.origin_and_args(int | None) == [types.UnionType, (int, type(None)), False]
        assert lib.union_of(int, str) == Union[int, str]
        assert lib.same(typing.ForwardRef("Thing")) == typing.ForwardRef("Thing")
        alias = Union[int, List[str]]
        assert lib.same(alias) is alias


    def test_library_exceptions():
        # An exception of a library both processes load is the receiver's own class there:
        # product code's `except zipfile.BadZipFile` catches what the test's callable
        # raised, and the test's pytest.raises catches what attrs raised in the product.
        import zipfile

        import attr

        def opener(data):
            raise zipfile.BadZipFile(f"bad: {data}")

        assert lib.opened(opener, "x") == ["not a zip", "bad: x"]
        with pytest.raises(attr.exceptions.NotAnAttrsClassError, match="plain"):
            lib.not_attrs()


    def test_container_abcs():
        # A test's own MutableMapping is one to product code, which may set its items.
        import collections.abc

        class Store(collections.abc.MutableMapping):
            def __init__(self, **data):
                self.data = dict(data)

            def __getitem__(self, key):
                return self.data[key]

            def __setitem__(self, key, value):
                self.data[key] = value

            def __delitem__(self, key):
                del self.data[key]

            def __iter__(self):
                return iter(self.data)

            def __len__(self):
                return len(self.data)

        store = Store(a=Store())
        assert lib.set_path(store, ["a", "b"], 1) is True
        assert store["a"].data == {"b": 1}


    def test_builtin_probes():
        # A C function has no code or wrapped function: it says so, as in one process; a
        # method descriptor is no descriptor of the test's there (inspect sees a callable).
        import inspect

        assert lib.call_in(inspect, "ismethoddescriptor", str.split) is False
        assert lib.arity(str.upper) == ["no code", None]
        assert lib.arity("abc".upper) == ["no code", None]
        assert lib.arity(lambda a, b: a) == 2


    def test_descriptors():
        # A product descriptor in a test's class is one here: Python asks it with the
        # test's instance, and what it writes into the instance's __dict__ is there.
        calls = []

        class A:
            @lib.cached_property
            def prop(self):
                "prop doc"
                calls.append(1)
                return 7

            @lib.cached_readonly
            def fixed(self):
                return 8

        a = A()
        assert a.prop == 7 and a.prop == 7 and calls == [1]
        a.prop = 42
        assert a.prop == 42
        del a.prop
        assert a.prop == 7 and calls == [1, 1]
        assert A.prop.__doc__ == "prop doc"
        assert a.fixed == 8
        with pytest.raises(AttributeError, match="read-only"):
            a.fixed = 9


    def test_context_managers():
        # The test's context manager and property, used by product code as one.
        entered = []

        class Manager:
            def __enter__(self):
                entered.append("in")

            def __exit__(self, *exc):
                entered.append("out")

        class B:
            @lib.wrap_prop(Manager())
            @property
            def prop(self):
                return 1

        assert B().prop == 1 and entered == ["in", "out"]
        # A product context manager around an exception raised here, or by the product.
        with lib.raises(ValueError, "bad"):
            raise ValueError("bad")
        with lib.raises(lib.Invalid):
            lib.validate_all(["a"])
        with pytest.raises(AssertionError, match="did not raise"):
            with lib.raises(KeyError):
                pass
        log = []
        with pytest.raises(ZeroDivisionError):
            with lib.log_errors(log.append):
                1 / 0
        assert log[0].startswith("Traceback (most recent call last):")
        assert 'test_faithful.py", line' in log[0] and "in test_context_managers" in log[0]
        assert log[0].endswith("ZeroDivisionError: division by zero\\n")


    def test_exception_values():
        # An exception the product holds as a value is an instance of its class here, as a
        # raised one is, the same object each time, and the product's own when sent back.
        with pytest.raises(lib.MultipleInvalid) as ctx:
            lib.validate_all(["a", "b"])
        first = ctx.value.errors[0]
        assert isinstance(first, lib.EmailInvalid) and isinstance(first, lib.Invalid)
        assert str(first) == "bad a" and ctx.value.errors[0] is first
        assert lib.is_one_of(first, ctx.value.errors)
        assert repr(ctx.value) == "MultipleInvalid([EmailInvalid('bad a'), EmailInvalid('bad b')])"
        def is_even(value):
            if value % 2:
                raise lib.EmailInvalid(f"{value} is odd")
            return value

        with pytest.raises(lib.MultipleInvalid) as ctx:
            lib.validate_with(is_even, 3)
        assert isinstance(ctx.value.errors[0], lib.EmailInvalid)
        assert str(ctx.value.errors[0]) == "3 is odd @ data[0]"
        assert lib.validate_with(is_even, 4) == 4
        try:
            raise lib.NotDefined("foo", "foo in bar")
        except lib.Invalid as e:
            assert e.name == "foo" and str(e) == "foo is not defined"
            assert e.args == ("foo is not defined",) and lib.name_of(e) == ["foo", "NotDefined"]
        one, two = lib.problems()
        assert isinstance(one, ValueError) and one.args == ("one",)
        assert isinstance(two, KeyError)
        # What a built-in exception holds beside its args crosses both ways.
        def importer(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

        assert lib.missing_name(importer) == "nope"
        with pytest.raises(ModuleNotFoundError) as ctx:
            lib.raise_missing()
        assert (ctx.value.name, ctx.value.path, ctx.value.__notes__[0]) == ("x", "/p", "checked")


    def test_traced():
        # boltons' wrap_trace reads every attribute of a test's namedtuple (dunders among
        # them) and subclasses its class: what the object has not to give is not given.
        import collections

        Target = collections.namedtuple("Target", "x y z")
        assert lib.wrap_trace(Target(1, 2, 3)) == (1, 2, 3)


    def test_printed(capfd):
        # What product code prints, to sys.stdout or to descriptor 1, is printed in the
        # oracle, where capfd sees it; a call writes to pytest's capture, as in run_tests.
        assert lib.shout("hi") == 2
        lib.shout_fd("raw\\n")
        assert capfd.readouterr() == ("HI\\nraw\\n", "to err\\n")
        # A product call inside the test's callback: one process's order, nothing lost.
        lib.print_around(lambda: lib.shout("in"))
        assert capfd.readouterr() == ("before\\nIN\\nafter\\n", "to err\\n")
        assert lib.stream_shape() == (True, False, "DontReadFromInput")


    def test_live_containers(monkeypatch):
        # A container read as an attribute of a product object or module is kept in step
        # with the product's: the test fills it, product code sees it, and back.
        s = lib.Evaluator()
        s.names["x"] = 1
        assert s.eval("x") == 1 and s.names is s.names
        settings = lib.SETTINGS
        lib.set_mode("loud")
        assert settings["mode"] == "loud"
        monkeypatch.setitem(lib.SETTINGS, "mode", "patched")
        assert lib.mode() == "patched"


    def test_standard_modules():
        # A standard-library module crosses by name: the product's own there, and one of
        # values the product hands back is the oracle's own; never one that runs processes.
        import math
        import os

        assert lib.call_in(os.path, "join", "a", "b") == "a/b"
        assert lib.call_in(math, "floor", 2.5) == 2
        assert lib.path_module() is os.path
        import subprocess

        assert lib.process_module() is not subprocess


    def test_methods_and_builtins():
        from operator import __add__

        class A:
            f = lib.func_partial(lambda self, x: (type(self).__name__, x + 1), 10)

        assert A().f() == ("A", 11)

        def func(x):
            return x

        assert lib.copy_names(func).__module__ == __name__ == func.__module__
        assert lib.copy_names(func).__original__ is func
        marker = object()
        assert lib.default_of(lambda x=11: None, "x") == 11
        assert lib.default_of(lambda *, x=(1, "a"): None, "x") == (1, "a")
        assert repr(lib.default_of(lambda x=marker: None, "x")) == "<the oracle's default>"

        class Value:
            def __init__(self, value):
                self.value = value

        assert lib.fields_of(Value(1)) == {"value": 1}
        assert lib.type_and_supertype(Value(2)) == [Value, None]

        def new_type(x):
            return x

        new_type.__supertype__ = int
        assert lib.type_and_supertype(new_type)[1] is int
        import typing

        Age = typing.NewType("Age", int)  # typing_inspect's is_new_type
        assert lib.type_and_supertype(Age) == [typing.NewType, int]
        assert lib.arity_of(__add__) == 2 and lib.call_in(__import__("math"), "floor", 2.5) == 2


    def test_namedtuples():
        import collections
        import typing

        Row = collections.namedtuple("Row", "x y")
        r = Row(1, 2)
        is_tuple, fields, as_dict, replaced, same = lib.row_info(r)
        assert is_tuple and fields == ["x", "y"] and as_dict == {"x": 1, "y": 2}
        assert type(replaced) is Row and replaced == Row(9, 2) and same is r

        class P(typing.NamedTuple):
            x: int
            b: str = "z"

        assert lib.row_info(P(1))[1:4] == [["x", "b"], {"x": 1, "b": "z"}, P(9, "z")]


    def test_dataclasses():
        import dataclasses

        @dataclasses.dataclass
        class Person:
            name: str
            years: int = 0

        got = lib.table_of([Person("Al", 3), Person("Bo")])
        assert got == [True, ["name", "years"], [["Al", 3], ["Bo", 0]], {"name": "Al", "years": 3}]
        Made = dataclasses.make_dataclass("Made", ["a", "b"])  # its __module__ is "types"
        assert lib.table_of([Made(1, 2)])[:3] == [True, ["a", "b"], [[1, 2]]]
        import types

        view = types.MappingProxyType({"a": 1})
        assert lib.empty_like(view, {"b": 2})[0] == {"b": 2}
        made, same_type, same_class = lib.empty_like(Person("Al"), "Cy", 4)
        assert made == Person("Cy", 4) and type(made) is Person and same_type and same_class


    def test_values_by_kind():
        import re

        assert lib.chunks_of(c for c in "abc") == "abc"
        matched, same, back = lib.flags_of(re.IGNORECASE)
        assert matched and same and back is re.IGNORECASE
        assert bytes(lib.Blob()) == b"blob"


    def test_exception_chains():
        class Underlying(Exception):
            pass

        def by_cause():
            raise KeyError("k") from Underlying("boom")

        def by_context():
            try:
                raise Underlying("ctx")
            except Underlying:
                raise ValueError("v")  # noqa: B904

        assert lib.unwrap_cause(by_cause) == ["KeyError", "Underlying", "boom"]
        assert lib.unwrap_cause(by_context) == ["ValueError", "Underlying", "ctx"]


    def test_pickle_and_copy():
        # A product object is pickled and copied where it lives, as in one process.
        import copy
        import pickle

        p = lib.Pattern("{a:d}")
        again = pickle.loads(pickle.dumps(p))
        assert again == p and again is not p
        assert copy.copy(p) == p and copy.deepcopy(p) == p and copy.copy(p) is not p
        with pytest.raises(TypeError, match="cannot pickle Unpicklable"):
            pickle.dumps(lib.Unpicklable())


    def test_writes_tree():  # simpleeval's test_load_file writes into the working tree
        with open("written.txt", "w") as f:
            f.write("hello")
        assert lib.read("written.txt") == "hello"


    def test_shared_patch(monkeypatch):  # funcy's retry tests patch time.sleep
        slept = []
        monkeypatch.setattr("time.sleep", slept.append)
        assert lib.nap(5) == 5 and slept == [5]
        monkeypatch.setattr("time.time", iter([7.5, 8.0]).__next__)  # funcy's throttle
        assert lib.clock() == 7.5
        assert not lib.sleeps_for_real()
        monkeypatch.undo()  # undone in the product process too
        assert lib.sleeps_for_real()


    def test_shared_mock():  # python-slugify's CLI test patches the product's print
        from unittest import mock

        with mock.patch("builtins.print") as printed:
            lib.shout("hi")
        assert printed.call_count == 2
        assert printed.call_args_list[0] == mock.call("HI")
        lib.shout("again")  # the product's own print again: the mock is not called
        assert printed.call_count == 2


    @pytest.mark.parametrize("shade, how", [(lib.Shade.DARK, lib.halve), (lib.Shade.LIGHT, 1)])
    def test_param_ids(shade, how):  # ids by value: [Shade.DARK-halve], as in one process
        assert shade.name in ("DARK", "LIGHT")


    def test_doc_written():  # a product decorator writes the test's function's docstring
        @lib.with_doc(" More.")
        def told():
            "Told."

        assert told.__doc__ == "Told. More."


    def test_exception_written():  # the test writes on a product exception, raises it back
        def check(value):
            try:
                lib.refuse(value)
            except lib.Refused as e:
                assert e.payload == value and str(e) == "bad"
                e.payload = None
                e.seen = True
                assert e.payload is None and e.seen is True
                raise

        assert lib.payload_of(check, 5) == [None, True]

        def forget(value):
            try:
                lib.refuse(value)
            except lib.Refused as e:
                e.seen = 1
                del e.seen
                raise

        assert lib.payload_of(forget, 6) == [6, "unseen"]


    def test_drained():  # list()/set() take a product generator whole: in batches
        assert list(lib.counting(3000)) == [(i, i * i) for i in range(3000)]
        assert set(lib.counting(50)) == {(i, i * i) for i in range(50)}
        assert sorted(lib.counting(4)) == [(0, 0), (1, 1), (2, 4), (3, 9)]
        assert tuple(lib.counting(0)) == () and frozenset(lib.counting(1)) == {(0, 0)}
        before = lib.steps()
        with pytest.raises(ValueError, match="at 700"):
            list(lib.counting(1000, fail_at=700))
        assert lib.steps() - before == 700  # ran to the error, not past it
        before = lib.steps()
        taken = set(lib.boxes(3))
        assert len(taken) == 3 and lib.steps() - before == 3
        before = lib.steps()
        for i, item in enumerate(lib.counting(5)):  # a loop: nothing of it run ahead
            assert lib.steps() - before == i + 1 and item == (i, i * i)
        gen = lib.counting(4)
        assert next(gen) == (0, 0) and list(gen) == [(1, 1), (2, 4), (3, 9)]
        before = lib.steps()
        assert _first_only(lib.counting(9)) == [(0, 0)] and lib.steps() - before == 1


    def _first_only(it):
        list = lambda it: [next(iter(it))]  # noqa: E731  a "list" that is not the built-in
        return list(it)


    def test_type_names():  # type(x) of the test's objects is named as their class there
        import threading

        class Point:
            "A point."

        def walk():
            pass

        here = f"{__name__}.test_type_names.<locals>.Point"
        assert lib.names_of(Point()) == [
            "Point", "test_type_names.<locals>.Point", __name__, f"<class '{here}'>", "A point."
        ]
        assert lib.names_of(walk) == [
            "function", "function", "builtins", "<class 'function'>", None
        ]
        lock = threading.Lock()
        assert lib.names_of(lock) == [type(lock).__name__, type(lock).__qualname__,
            type(lock).__module__, repr(type(lock)), lock.__doc__]


    def test_class_alias():  # a real types.GenericAlias of the product class, both ways
        import types

        alias = lib.Box[str]
        assert isinstance(alias, types.GenericAlias)
        assert alias.__origin__ is lib.Box and alias.__args__ == (str,)
        assert alias("x").item == "x"


    def test_shared_served(monkeypatch):  # the product server's own os: not made there
        monkeypatch.setattr("os.getcwd", lambda: "/elsewhere")
        assert lib.call_in(__import__("os"), "getcwd") == "/elsewhere"


    def test_shared_class():  # a class of a shared module, patched by name
        import textwrap
        from unittest import mock

        with mock.patch.object(textwrap.TextWrapper, "wrap", return_value=["x"]) as wrap:
            assert lib.wrapped("a b") == ["x"]
        wrap.assert_called_once_with("a b")
        assert lib.wrapped("aaa bbb") == ["aaa", "bbb"]


    def test_mock_forgotten():  # what the mock recorded is the test's, never the product's
        from unittest import mock

        with mock.patch("time.sleep") as sleep:
            lib.naps_and_forgets(3)
        sleep.assert_called_once_with(1)


    def test_mock_counted():
        from unittest import mock

        with mock.patch("time.sleep") as sleep:
            lib.naps_and_counts(3)
        assert sleep.call_count == 1


    @pytest.fixture(scope="module")
    def hex_ids():  # wcwidth's autouse fixture, shared by several tests
        with pytest.MonkeyPatch.context() as m:
            m.setattr("secrets.token_hex", lambda n: "ab" * n)
            yield


    def test_shared_fixture_first(hex_ids):
        assert lib.token(2) == "abab"


    def test_shared_fixture_second(hex_ids):  # a process of its own: made again there
        assert lib.token(3) == "ababab"


    def test_shared_memory():  # xmltodict: the product's allocations are not traced here
        import tracemalloc

        tracemalloc.start()
        assert lib.chunks_of(c for c in "abc") == "abc"
        assert tracemalloc.get_traced_memory()[1] < 1_000_000
        tracemalloc.stop()


    def test_shared_env(monkeypatch):
        monkeypatch.setenv("PW_MODE", "loud")
        assert lib.call_in(__import__("os"), "getenv", "PW_MODE") == "loud"
        monkeypatch.delenv("PW_MODE")
        assert lib.call_in(__import__("os"), "getenv", "PW_MODE") is None
        monkeypatch.undo()
        monkeypatch.setenv("HOME", "/nowhere")
        assert lib.call_in(__import__("os"), "getenv", "HOME") == "/nowhere"


    def test_product_coroutine():  # awaited here it is a handle: in-process, named
        import asyncio

        async def main():
            return await lib.later(3)

        assert asyncio.run(main()) == 3


    @given(lib.small_numbers())
    def test_product_strategy(n):  # the product's strategy is not one here: in-process
        assert 0 <= n <= 9


    def test_function_globals():  # doctest's finder (--doctest-modules) on a test module
        import doctest
        import sys

        from lib import same  # a product function among the test module's names

        assert same.__globals__ is vars(lib) and vars(lib) is lib.__dict__
        assert same.__globals__["__name__"] == "lib" and "same" in same.__globals__
        here = sys.modules[__name__]
        assert not doctest.DocTestFinder()._from_module(here, same)
        assert doctest.DocTestFinder()._from_module(here, test_function_globals)
        names = [t.name for t in doctest.DocTestFinder(exclude_empty=False).find(here)]
        assert f"{here.__name__}.test_function_globals" in names
        assert f"{here.__name__}.same" not in names


    def test_function_annotations():  # cachetools' DECORATOR = staticmethod(fifo_cache)
        import functools
        import typing

        from lib import Point, annotated

        class Holder:
            DECORATOR = staticmethod(annotated)  # reads the function's __annotations__

        assert Holder.DECORATOR(2) == 3
        # the product's own (text: its module has ``from __future__ import annotations``),
        # evaluated in its module's namespace
        assert annotated.__annotations__ == {"x": "int", "label": "'str'", "return": "Point"}
        assert typing.get_type_hints(annotated) == {"x": int, "label": str, "return": Point}

        @functools.wraps(annotated)
        def wrapper(*args):
            return annotated(*args)

        assert wrapper.__name__ == "annotated" and wrapper(4) == 5
        assert wrapper.__annotations__ == annotated.__annotations__
        # tenacity's test_retry_preserves_argument_defaults: plain data too
        assert annotated.__defaults__ == ("n",) and annotated.__kwdefaults__ == {"times": 2}


    def test_module_namespace_copied():  # glom's snippets run in copy.copy(glom.__dict__)
        import copy

        names = copy.copy(lib.__dict__)
        names.update(extra=1)  # the test's own dict: no write reaches the product
        assert type(names) is dict and names["same"] is lib.same and "extra" not in vars(lib)
        assert eval("same(2) + extra", names) == 3


    def test_type_of_a_product_function():  # tabulate's API test: a handle is no function
        assert type(lib.same) is type(lambda: None)


    def test_really_fails():
        assert lib.same(1) == 2


    def test_doctest_runner():  # doctest clears and restores the trace function
        import doctest

        def twice(x):
            '''
            >>> twice(2)
            4
            '''
            return 2 * x

        runner = doctest.DocTestRunner()
        for test in doctest.DocTestFinder().find(twice, "twice", globs={"twice": twice}):
            runner.run(test)
        assert (runner.failures, runner.tries) == (0, 1)


    def test_submodule_shadowed():
        import sys

        import lib.retry  # the submodule by its name: lib.retry is still the function
        from lib import retry

        assert retry(2) == ("retry", 4) and lib.retry(3) == ("retry", 6) and lib.retry is retry
        assert sys.modules["lib.retry"].BACKOFF == 2
    """
)


CLASS_FIXTURE_TESTS = """import inspect
import unittest

import lib


class TestWithSignature(unittest.TestCase):
    @classmethod
    def setUpClass(cls):  # what cannot cross: refused once, for every test of the class
        cls.params = list(inspect.signature(lib.empty_allowed).parameters)

    def test_one(self):
        assert self.params == []

    def test_two(self):
        assert self.params == []


class TestWithOptions(unittest.TestCase):  # dpath's TestSegments
    @classmethod
    def setUpClass(cls):
        lib.ALLOW_EMPTY = True

    @classmethod
    def tearDownClass(cls):
        lib.ALLOW_EMPTY = False

    def test_one(self):
        assert lib.empty_allowed() is True

    def test_two(self):
        assert lib.empty_allowed() is True


def test_after():  # after the class's teardown set it back
    assert lib.empty_allowed() is False
"""
SUBCLASSING_TESTS = """import pickle

import lib


class Mine(lib.Shelf):  # a class statement on a product class at the top: made there
    label = "mine"

    def key(self, item):  # called by the product's put
        return item * 2

    @staticmethod
    def twice(x):
        return 2 * x

    @classmethod
    def make(cls, size):
        return cls(size)

    @property
    def first(self):
        return self.items[0]


class Again(Mine):
    def key(self, item):
        return Mine.key(self, item) + 1  # the base's method, through the product class


def test_mine():
    shelf = Mine.make(3)
    assert shelf.put(5) == 1 and shelf.first == 10 and shelf.describe() == "mine:3:[10]"
    assert isinstance(shelf, Mine) and isinstance(shelf, lib.Shelf) and Mine.twice(2) == 4
    assert lib.describe_all([shelf, Again(1)]) == ["mine:3:[10]", "mine:1:[]"]
    assert pickle.loads(pickle.dumps(shelf)).describe() == "mine:3:[10]"
    assert Mine.__name__ == "Mine" and issubclass(Again, Mine) and not issubclass(Mine, Again)


def test_again():
    shelf = Again(1)
    shelf.put(1)
    assert shelf.items == [3] and shelf.label == "mine"


class Box:  # an object of the test's that a product object holds
    def __init__(self):
        self.inside = True


def test_builtin_subclass():
    import collections.abc
    import unittest

    found = lib.AttrDict(a=1, box=Box(), fn=test_again)
    assert isinstance(found, dict) and isinstance(found, collections.abc.Mapping)
    assert not isinstance(found, list) and isinstance(found, lib.AttrDict)
    assert found.__class__.__name__ == "AttrDict" and found.a == 1
    unittest.TestCase().assertDictEqual(lib.AttrDict(a=1), {"a": 1})
    found.setdefault("c", []).append(2)  # the list the product keeps, changed here
    found["c"].append(3)
    assert found.c == [2, 3] and lib.AttrDict.__getitem__(found, "c") == [2, 3]
    copied = found.deep()  # copy.deepcopy in the product of what holds the test's Box
    copied.box.inside = False
    assert found.box.inside is True and copied.box.inside is False
    assert copied.fn is found.fn is test_again  # a function is copied as itself


class Holder:  # a class of the test's holding a product descriptor
    @lib.named
    def value(self):
        return 7


class Visiting(lib.Visitor):  # the product's metaclass reads what its decorator marked
    @lib.mark
    def visit_a(self):
        return "a"

    def visit_b(self):
        return "b"


class Store:
    def __init__(self):
        self.store = {}


def test_a_test_objects_container():  # cachetools' cachedmethod(lambda self: self.cache)
    holder = Store()
    assert lib.remember(holder, "a", 1) == 1 and holder.store == {"a": 1}
    holder.store.clear()  # the test's change, seen there at the next call
    assert lib.remember(holder, "b", 2) == 1 and holder.store == {"b": 2}
    getter = lambda self: self.store  # noqa: E731  (cachetools: cachedmethod(lambda self: ...))
    assert lib.remember_through(getter, holder, "c", 3) == (3, 2) and holder.store["c"] == 3
    assert lib.remember_through(getter, holder, "c", 4) == (3, 2)  # found, as in one process
    assert lib.remember_through(lambda self: {}, holder, "d", 5) == (5, 1)  # a new one: a copy
    assert "d" not in holder.store


def test_kept_classed_and_chained():
    import pytest

    import collections.abc

    thing = lib.Plain()  # its class is the product's: cachetools' repr tests read its name
    assert thing.__class__ == lib.Plain and thing.__class__.__name__ == "Plain"
    made = thing.__class__()  # one more, made there
    assert made is not thing and made.__class__ == lib.Plain and repr(made) != repr(thing)
    ticks = lib.Ticks()
    assert isinstance(ticks, collections.abc.Iterator) and list(ticks) == []
    assert ticks.__class__.__name__ == "Ticks" and repr(ticks.__class__) == repr(lib.Ticks)
    store = {}
    get = lib.memoize(store)  # the product keeps the test's dict: kept in step, both ways
    assert (get("a"), get("b"), get("a")) == (0, 1, 0) and store == {"a": 0, "b": 1}
    store.clear()
    assert get("b") == 0 and store == {"b": 0}
    with pytest.raises(KeyError) as info:
        lib.popped()
    assert info.value.__suppress_context__ and info.value.__cause__ is None
    with pytest.raises(LookupError) as info:
        lib.chained()
    assert type(info.value.__cause__) is ValueError and "'x'" in str(info.value.__cause__)


class Money:
    def __init__(self, cents):
        self.cents = cents

    def __add__(self, other):
        return Money(self.cents + other.cents)

    def __neg__(self):
        return Money(-self.cents)


def test_operators():
    import collections.abc

    class Row(collections.abc.MutableSequence):  # its += is MutableSequence's extend
        def __init__(self):
            self.items = []

        def __getitem__(self, i):
            return self.items[i]

        def __setitem__(self, i, v):
            self.items[i] = v

        def __delitem__(self, i):
            del self.items[i]

        def __len__(self):
            return len(self.items)

        def insert(self, i, v):
            self.items.insert(i, v)

    total, negated = lib.added_up([Money(1), Money(2), Money(4)])
    assert (total.cents, negated.cents) == (7, -7)
    row = Row()
    assert lib.grown(row, [1, 2]) is row and row.items == [1, 2]


class Point:
    kind = "point"

    def __init__(self, x):
        self.x = x


def test_class_handed_over():
    assert lib.register(Point, lambda p: p.x * 2) is Point
    assert lib.handle(Point(3)) == 6  # an instance of it there is one of the class there
    made = lib.made_of(Point, 5)  # made here, by the test's __init__
    assert type(made) is Point and made.x == 5
    assert lib.attr_of(Point, "kind") == ("point", repr(Point))
    assert lib.mark_final(Point) is Point and Point.__final__ is True


class TestLater:  # a class pytest collects: the product may set nothing on it
    def test_checked(self):
        assert False, "a test the patch would like to replace"


def test_class_overreach_tests():
    lib.put_on(TestLater, "helper")


def test_class_overreach_runs():
    class Plain:
        def run(self):
            return 1

    assert lib.put_on(Plain, "helper") == "helper"  # a new plain name: as funcy's monkey
    lib.put_on(Plain, "setup_method")


def test_class_overreach_replaces():
    class Plain:
        def run(self):
            return 1

    lib.put_on(Plain, "run")


def test_callback_writes():
    def creator(current, key, one, same):
        current[key] = [key]
        one.append(1)
        assert one is same  # one list handed twice is one list here too

    assert lib.fill_through(creator) == (["a"], [1], {"a": ["a"]})


def test_names_and_marks():
    import re

    assert lib.matcher(re.match) is True  # a standard-library function: the product's own
    assert lib.STAR.__star__ == "got __star__" and lib.STAR.plain == "got plain"
    assert lib.keyed(self=1, other=2) == (1, 2)  # a keyword named self, either way
    assert lib.call_with_self(lambda self: self + 1) == 2
    assert Holder().value() == ("value", 7)
    assert Visiting.marks == ["visit_a"] and Visiting().visit_a() == "a"


def test_super():  # super() in a method: the base's method, run in the product
    class WithSuper(lib.Shelf):
        def __init__(self, size, extra):
            super().__init__(size)
            self.extra = extra

        def key(self, item):
            return super().key(item) + self.extra

        def describe(self):
            return "with " + super().describe()

    class Deeper(WithSuper):
        def key(self, item):
            return super().key(item) * 10

    shelf = Deeper(1, 2)
    shelf.put(1)
    assert shelf.items == [30] and shelf.describe() == "with shelf:1:[30]"
    assert lib.describe_all([shelf]) == ["with shelf:1:[30]"] and isinstance(shelf, WithSuper)
"""
SUPER_AT_THE_TOP_TESTS = """import lib


class Made(lib.Shelf):  # super() in a class method at a test module's top: in-process
    @classmethod
    def label_of(cls):
        return super().label


def test_made():
    assert Made.label_of() == "shelf"
"""
FIELDS_TESTS = """import dataclasses
import lib

FIELDS = [f.name for f in dataclasses.fields(lib.Point)]


def test_fields():
    assert FIELDS == ["x", "y"]
"""
BROKEN_TESTS = """from lib import no_such_name


def test_broken():
    pass
"""


CLOCK_TESTS = """import datetime
import time

from freezegun import freeze_time

import lib


@freeze_time("2020-01-02 03:04:05")
def test_frozen():
    assert lib.age(datetime.datetime(2020, 1, 2, 3, 4, 0)) == 5.0
    day, now = lib.today()  # the product's frozen values, back here
    assert day == datetime.date(2020, 1, 2) and now == datetime.datetime(2020, 1, 2, 3, 4, 5)
    with freeze_time("2021-06-01", tz_offset=2):
        assert lib.age(datetime.datetime(2021, 6, 1, 1, 0)) == 3600.0  # moved, with the zone


def test_thawed():
    assert lib.age(datetime.datetime(2020, 1, 1)) > 10**7


def test_interpreter_own():  # the patch must not choose what the oracle imports
    import sys

    before = len(sys.path)
    assert lib.extend_path(sys.path, "/workspace/evil") == before + 1
    assert sys.path[0] == "/workspace/evil"


def test_kept_interpreter_own():
    import sys

    before = list(sys.path)
    assert lib.keep_paths(sys.path) == len(before)
    assert lib.poison_kept("/workspace/evil") == len(before) + 1
    lib.keep_paths([])  # another message: nothing kept in step reaches sys.path
    assert sys.path == before


def test_by_hand():  # a clock patched another way: the product's is its own
    real = time.time
    time.time = lambda: 0.0
    try:
        assert lib.age(datetime.datetime(2020, 1, 1)) > 10**7
    finally:
        time.time = real
"""


EVENTS = textwrap.dedent(
    """
    import abc


    class Event(abc.ABC):  # h11's events: classes the tests tell apart by type(e) is ...
        def __init__(self, n):
            self.n = n

        def __repr__(self):
            return f"{type(self).__name__}({self.n})"


    class Request(Event):
        pass


    class Closed(Event):
        pass


    class Connection:
        def __init__(self):
            self.left = 3

        def next_event(self):  # Closed, again and again, once the data is out
            self.left -= 1
            return Request(self.left) if self.left > 0 else Closed(0)


    def make(kind):
        return {"request": Request, "closed": Closed}[kind](1)


    def rebind():  # a new class bound to the old name (a reload does this)
        global Request

        class Request(Event):
            pass

        Request.__qualname__ = "Request"
        return Request


    def local():
        class Local:  # no module holds it by name: the same class only within a test
            pass

        return Local()


    class Buffer:  # h11's ReceiveBuffer: grown in place
        def __init__(self):
            self.data = bytearray()

        def __iadd__(self, more):
            self.data += more
            return self


    class Counted(type):  # a metaclass of the product's own: its classes stay handles
        pass


    class Box(metaclass=Counted):
        pass
    """
)
CLASSES_TESTS = textwrap.dedent(
    """
    import copy
    import pickle

    import pytest

    import lib.events as events
    from lib.events import Box, Closed, Connection, Event, Request, make


    def drain(conn):  # h11's get_all_events: it ends only on type(event) is Closed
        got = []
        while True:
            event = conn.next_event()
            got.append(event)
            if type(event) is Closed:
                return got


    def test_type_is():
        got = drain(Connection())
        assert [type(e) for e in got] == [Request, Request, Closed]
        assert type(got[0]) is Request is events.Request and type(make("closed")) is Closed
        assert got[0].__class__ is Request and type(got[0]).__name__ == "Request"
        assert type(got[0]) is not Event and isinstance(got[0], Event)
        assert issubclass(Request, Event) and not issubclass(Event, Request)
        assert not isinstance(got[0], Closed) and not isinstance(3, Request)
        assert Request.__module__ == "lib.events" and Request.__qualname__ == "Request"
        assert Request.__mro__[1] is Event and Request.__bases__ == (Event,)
        assert "__init__" in Event.__dict__ and "__init__" not in Request.__dict__
        assert type(Request(5)) is Request and Request(5).n == 5 and repr(got[2]) == "Closed(0)"
        assert {Request: "r"}[type(got[0])] == "r" and isinstance(Request, type)
        assert repr(Request) == "<class 'lib.events.Request'>"
        assert pickle.loads(pickle.dumps(Request)) is Request
        assert type(copy.copy(got[0])) is Request and copy.deepcopy(got[1]).n == 1
        assert type(events.local()) is not type(events.local())  # a class per call there too
        assert type(Box()) is not Box and isinstance(Box(), Box)  # another metaclass: a handle


    def test_in_place():  # the product's own __iadd__, on the product's object
        buf = events.Buffer()
        same = buf
        buf += b"ab"
        buf += b"c"
        assert buf is same and bytes(buf.data) == b"abc"
        count = events.make("request")
        with pytest.raises(TypeError, match="unsupported operand"):
            count += 1  # neither __iadd__ nor __add__: the product's TypeError


    def test_rebound():  # two live classes under one name are two classes here too
        new = events.rebind()
        made = events.make("request")
        assert type(made) is new and type(made) is not Request and new is not Request
        assert isinstance(made, Event) and not isinstance(Request(1), new)


    def test_c_code_needs_the_object():  # fails in one process too: judged there, named
        assert bytes(memoryview(events.make("request"))) == b""


    def test_type_is_again():  # another test's process: the same classes, the same objects
        assert type(make("request")) is Request and type(drain(Connection())[-1]) is Closed


    class Mine(Event):  # a class statement on a plain product class: made in the product
        def double(self):
            return self.n * 2


    def test_subclassed():
        mine = Mine(4)
        assert type(mine) is Mine and mine.double() == 8 and isinstance(mine, Event)
        assert issubclass(Mine, Event) and Mine.__bases__ == (Event,)
    """
)


CALLS = textwrap.dedent(
    """
    class Recorder:  # logs every read of an m_ name, as the product sees them
        def __init__(self):
            object.__setattr__(self, "log", [])

        def __getattribute__(self, name):
            if name[:2] == "m_":
                object.__getattribute__(self, "log").append("read " + name)
            return object.__getattribute__(self, name)

        def m_outer(self, *args, **kwargs):
            self.log.append("call m_outer")
            return (args, kwargs)

        def m_inner(self):
            self.log.append("call m_inner")
            return 2

        @classmethod
        def m_make(cls, n):
            return [cls.__name__, n]

        @staticmethod
        def m_twice(items):
            items.append(len(items))
            return items


    def hand_back(value):
        return value
    """
)

CALLS_TESTS = textwrap.dedent(
    """
    import pytest

    import lib.calls as calls
    from lib.calls import Recorder


    def test_order():  # the read, then what the arguments do, then the call
        r = Recorder()
        assert r.m_outer(r.m_inner(), k=r.m_inner()) == ((2,), {"k": 2})
        assert r.log == ["read m_outer", "read m_inner", "call m_inner", "read m_inner",
                         "call m_inner", "call m_outer"]


    def test_missing_raises_before_the_arguments():
        r = Recorder()
        with pytest.raises(AttributeError, match="m_missing"):
            r.m_missing(r.m_inner())
        assert r.log == ["read m_missing"]


    def test_a_test_callable_the_product_holds():  # called here: the same objects
        r = Recorder()
        mine = []
        r.m_mine = lambda value: value
        assert r.m_mine(mine) is mine
        r.m_value = 3
        with pytest.raises(TypeError, match="'int' object is not callable"):
            r.m_value()


    def test_module_class_and_static():
        items = []
        assert calls.hand_back(items) is items
        assert Recorder.m_make(3) == ["Recorder", 3]
        assert Recorder.m_twice(items) is items and items == [0]  # changed in place here
        with pytest.raises(AttributeError):
            calls.missing(1)


    def test_read_not_called():
        r = Recorder()
        method = r.m_inner
        assert hasattr(r, "m_outer") and r.log == ["read m_inner", "read m_outer"]
        assert method() == 2 and getattr(r, "m_inner")() == 2
    """
)


FORKS = """\
import functools
import os

SEEN = []
# Registered through a C function (no probe sees the call): product code's fork hooks.
functools.partial(
    os.register_at_fork,
    before=lambda: SEEN.append("before"),
    after_in_parent=lambda: SEEN.append("parent"),
    after_in_child=lambda: SEEN.append("child"),
)()


def seen():
    return list(SEEN)


def fork_here():  # product code's own fork runs them, as anywhere
    pid = os.fork()
    if pid == 0:
        os._exit(0 if SEEN[-1:] == ["child"] else 1)
    _, status = os.waitpid(pid, 0)
    return os.WEXITSTATUS(status), list(SEEN)
"""
FORKS_TESTS = """\
from lib import forks


def test_first():  # each test's process was forked from the import's: no hook ran
    assert forks.seen() == []


def test_second():
    assert forks.seen() == []


def test_own_fork():
    assert forks.fork_here() == (0, ["before", "parent"])
"""


RENAMED = """\
from . import _version

# furl's __init__: every name of the version module copied over the package's own,
# __name__ = "renamed._version" among them
globals().update(dict((k, v) for k, v in _version.__dict__.items()))


def double(x):
    return 2 * x
"""
RENAMED_TESTS = """\
import renamed
from renamed.sub import triple


def test_package():
    assert renamed.double(2) == 4 and renamed.__version__ == "2.1"


def test_submodule():
    assert triple(2) == 6
"""


PRODUCT_ABC_TESTS = """\
import lib


class Counted(lib.Store):  # a subclass of a product ABC: made in the product
    def count(self):
        return len(self)


def test_product_abc():
    assert Counted(a=1, b=2).count() == 2 and isinstance(Counted(), lib.Store)
"""
ABC_TESTS = """\
from abc import ABCMeta, abstractmethod

import lib


class Container(metaclass=ABCMeta):
    @abstractmethod
    def original(self):
        pass


    def size(self):
        return len(self.original())


class ItemStore(lib.Store, Container):  # furl's itemomdict1D(omdict1D, itemcontainer)
    def original(self):
        return dict(self)


class Unfinished(lib.Store, Container):  # original() left abstract
    pass


def test_abc_mixin():
    assert ItemStore(a=1).original() == {"a": 1} and ItemStore(a=1, b=2).size() == 2
    assert isinstance(ItemStore(), lib.Store)
    try:
        Unfinished()
    except TypeError as e:
        assert "abstract" in str(e)
    else:
        raise AssertionError("an abstract method left")
"""
SUPER_MIXIN_TESTS = """\
import lib


class Sized:
    def size(self):
        return len(self)


class Told(Sized):
    def size(self):
        return super().size() + 100  # __class__ names the test's class here


class Both(lib.Store, Told):
    pass


def test_super_mixin():
    assert Both(a=1).size() == 101
"""


def faithful_tree(root: Path) -> Path:
    for sub in ("lib", "tests", "data"):
        (root / sub).mkdir(parents=True)
    for path in (root, root / "lib", root / "tests", root / "data"):
        path.chmod(0o755)
    (root / "lib" / "__init__.py").write_text(FAITHFUL)
    (root / "lib" / "retry.py").write_text("BACKOFF = 2\n")
    (root / "data" / "hello.txt").write_text("hello\n")
    (root / "tests" / "test_faithful.py").write_text(FAITHFUL_TESTS)
    (root / "tests" / "test_fields.py").write_text(FIELDS_TESTS)
    (root / "tests" / "test_class_fixture.py").write_text(CLASS_FIXTURE_TESTS)
    (root / "tests" / "test_subclassing.py").write_text(SUBCLASSING_TESTS)
    (root / "tests" / "test_super_at_the_top.py").write_text(SUPER_AT_THE_TOP_TESTS)
    (root / "tests" / "test_broken.py").write_text(BROKEN_TESTS)
    (root / "tests" / "test_clock.py").write_text(CLOCK_TESTS)
    (root / "lib" / "events.py").write_text(EVENTS)
    (root / "tests" / "test_classes.py").write_text(CLASSES_TESTS)
    (root / "lib" / "calls.py").write_text(CALLS)
    (root / "tests" / "test_calls.py").write_text(CALLS_TESTS)
    (root / "lib" / "forks.py").write_text(FORKS)
    (root / "tests" / "test_forks.py").write_text(FORKS_TESTS)
    (root / "renamed").mkdir()
    (root / "renamed" / "__init__.py").write_text(RENAMED)
    (root / "renamed" / "_version.py").write_text('__version__ = "2.1"\n')
    (root / "renamed" / "sub.py").write_text("def triple(x):\n    return 3 * x\n")
    (root / "tests" / "test_renamed.py").write_text(RENAMED_TESTS)
    (root / "tests" / "test_abc.py").write_text(ABC_TESTS)
    (root / "tests" / "test_product_abc.py").write_text(PRODUCT_ABC_TESTS)
    (root / "tests" / "test_super_mixin.py").write_text(SUPER_MIXIN_TESTS)
    return root


def run_faithful(
    root: Path, *names: str, module: str = "faithful", limits: Limits = LIMITS
) -> dict[str, tuple[str, str, str]]:
    targets = [PropertyTarget(f"prop.{n}", f"tests/test_{module}.py::test_{n}") for n in names]
    result = run_properties(
        root, targets, 11, SandboxConfig(), contract_paths=["tests"], limits=limits
    )
    assert result.complete and not result.forged and not result.missing, result.problems
    return {
        r.prop.removeprefix("prop."): (r.status, r.witness, r.isolation) for r in result.records
    }


def test_paths_identity_mutation_and_generics_cross_as_in_one_process(tmp_path: Path) -> None:
    # A Path crosses by value (os.fspath, open(), os.path.join work on it in the product;
    # the product's Path is a Path here); an object that makes a round trip is the same
    # object; a list, dict or set the product changes in place is changed here; a product
    # generic subscripted here (with its TypeVars or the test's) is a real typing alias.
    got = run_faithful(
        faithful_tree(tmp_path),
        "paths",
        "identity",
        "mutation",
        "generics",
        "type_hints",
        "tmp_path",
        "product_temp_file",
        "subclass_alias",
        "submodule_shadowed",
        "decorators",
        "comparisons",
        "exception_classes",
        "product_strategy",
        "standard_classes",
        "product_coroutine",
        "doctest_runner",
        "function_globals",
        "function_annotations",
        "module_namespace_copied",
        "collections",
        "zones",
        "typing_values",
        "library_exceptions",
        "container_abcs",
        "builtin_probes",
        "printed",
        "live_containers",
        "standard_modules",
        "traced",
        "exception_values",
        "descriptors",
        "context_managers",
        "shared_patch",
        "shared_mock",
        "shared_served",
        "class_alias",
        "type_names",
        "drained",
        "exception_written",
        "doc_written",
        "shared_class",
        "shared_fixture_first",
        "shared_fixture_second",
        "shared_env",
        "shared_memory",
        "methods_and_builtins",
        "namedtuples",
        "dataclasses",
        "writes_tree",
        "values_by_kind",
        "exception_chains",
        "pickle_and_copy",
    )
    assert got == {
        "paths": ("pass", "", "isolated"),
        "identity": ("pass", "", "isolated"),
        "mutation": ("pass", "", "isolated"),
        "generics": ("pass", "", "isolated"),
        "type_hints": ("pass", "", "isolated"),
        "submodule_shadowed": ("pass", "", "isolated"),
        # functools.wraps reads the test's function's names, docstring, attributes and
        # annotations (a class of the test's by its name), never its code or globals.
        "decorators": ("pass", "", "isolated"),
        "comparisons": ("pass", "", "isolated"),
        "exception_classes": ("pass", "", "isolated"),
        "standard_classes": ("pass", "", "isolated"),
        "doctest_runner": ("pass", "", "isolated"),
        "function_globals": ("pass", "", "isolated"),
        "function_annotations": ("pass", "", "isolated"),
        "module_namespace_copied": ("pass", "", "isolated"),
        "collections": ("pass", "", "isolated"),
        "zones": ("pass", "", "isolated"),
        "typing_values": ("pass", "", "isolated"),
        "library_exceptions": ("pass", "", "isolated"),
        "container_abcs": ("pass", "", "isolated"),
        "builtin_probes": ("pass", "", "isolated"),
        "printed": ("pass", "", "isolated"),
        "live_containers": ("pass", "", "isolated"),
        "standard_modules": ("pass", "", "isolated"),
        "traced": ("pass", "", "isolated"),
        "exception_values": ("pass", "", "isolated"),
        "descriptors": ("pass", "", "isolated"),
        "context_managers": ("pass", "", "isolated"),
        "methods_and_builtins": ("pass", "", "isolated"),
        "namedtuples": ("pass", "", "isolated"),
        "dataclasses": ("pass", "", "isolated"),
        "values_by_kind": ("pass", "", "isolated"),
        "exception_chains": ("pass", "", "isolated"),
        "pickle_and_copy": ("pass", "", "isolated"),
        "product_coroutine": (
            "pass",
            "",
            "in-process: a product object stood where the oracle's code needs its type: "
            "object Handle can't be used in 'await' expression",
        ),
        "product_strategy": (
            "pass",
            "",
            "in-process: a product object stood where the oracle's code needs its type: "
            "Expected a SearchStrategy but got n=integers(min_value=0, max_value=9) (type=Handle)",
        ),
        "subclass_alias": ("pass", "", "isolated"),
        "writes_tree": (
            "pass",
            "",
            "in-process: the property writes into the tree, read-only to the isolated "
            "oracle: written.txt",
        ),
        # A patch of a module the product process has its own copy of (funcy's retry
        # tests patch time.sleep, wcwidth's fixture secrets.token_hex, python-slugify's CLI
        # test print): made there too, and undone with the test's, as in one process.
        **{
            f"shared_{how}": ("pass", "", "isolated")
            for how in ("patch", "mock", "class", "fixture_first", "fixture_second", "env")
        },
        "class_alias": ("pass", "", "isolated"),
        "type_names": ("pass", "", "isolated"),
        "drained": ("pass", "", "isolated"),
        "exception_written": ("pass", "", "isolated"),
        "doc_written": ("pass", "", "isolated"),
        # A module the product server uses itself while a call runs: not patched there.
        "shared_served": (
            "pass",
            "",
            "in-process: the property patches os.getcwd, which the product process does not share",
        ),
        # What the product process cannot share: its allocations are not traced here.
        "shared_memory": (
            "pass",
            "",
            "in-process: the property traces memory allocations, which the product process "
            "does not share",
        ),
        # Each sandbox has a /tmp of its own: a path there names nothing in the other.
        "tmp_path": (
            "pass",
            "",
            "in-process: the property hands the product a path in its own temporary "
            "directory /tmp (each process has its own)",
        ),
        "product_temp_file": (
            "pass",
            "",
            "in-process: the product hands the property a path in its own temporary "
            "directory /tmp (each process has its own)",
        ),
    }


def test_a_product_enum_member_or_function_names_its_parametrized_case(tmp_path: Path) -> None:
    # pytest names a case by an enum member's str and a function's __name__; a handle was
    # named by its place ([shade0-how0]), so the contract's id (the one pytest gives in
    # one process) was not found isolated: NotRun on both sides.
    got = run_faithful(
        faithful_tree(tmp_path), "param_ids[Shade.DARK-halve]", "param_ids[Shade.LIGHT-1]"
    )
    assert got == {
        "param_ids[Shade.DARK-halve]": ("pass", "", "isolated"),
        "param_ids[Shade.LIGHT-1]": ("pass", "", "isolated"),
    }


def test_a_test_class_on_a_product_class_and_a_plain_class_of_its_own_is_made_there(
    tmp_path: Path,
) -> None:
    # The class that stands for a product class made by ABCMeta is an ABCMeta too: a
    # class statement on it and on the test's own ABC found no metaclass for both
    # (TypeError, the module did not import: furl's 77 tests NotRun with no reason). The
    # test's plain base is made in the product too (its methods the test's code, its
    # abstract methods abstract there); one whose methods use super() is refused, named.
    tree = faithful_tree(tmp_path)
    got = run_faithful(tree, "product_abc", module="product_abc")
    assert got == {"product_abc": ("pass", "", "isolated")}
    got = run_faithful(tree, "abc_mixin", module="abc")
    assert got == {"abc_mixin": ("pass", "", "isolated")}
    got = run_faithful(tree, "super_mixin", module="super_mixin")
    line = next(n for n, text in enumerate(SUPER_MIXIN_TESTS.splitlines(), 1) if "Both" in text)
    assert got == {
        "super_mixin": ("pass", "", "in-process: the test module tests/test_super_mixin.py "
            "does not import isolated: IsolationRefused: the property's class Both has a base "
            f"of its own, Told, whose methods use super() or __class__ "
            f"(tests/test_super_mixin.py:{line})"),
    }  # fmt: skip


def test_a_package_that_rebinds_its_own_name_imports_isolated(tmp_path: Path) -> None:
    # furl copies its version module's globals, __name__ among them, over its own: the
    # oracle imported the product's module by its __name__, which named the version module
    # again under the package it was importing (RecursionError, all 77 tests in-process).
    got = run_faithful(faithful_tree(tmp_path), "package", "submodule", module="renamed")
    assert got == {name: ("pass", "", "isolated") for name in ("package", "submodule")}


def test_an_isolated_failure_is_run_again_in_process_and_its_status_kept(tmp_path: Path) -> None:
    """``type(f) is type(lambda: None)`` of a product function fails isolated and passes in
    one process: the record keeps the isolated failure and says what in-process said
    (``recheck``; what contract check and task from-fix ask for, a score asks for the
    rechecks it needs itself, scorer/_recheck.py). A real failure fails both ways; a pass
    is not run again."""
    names = ("type_of_a_product_function", "really_fails", "identity")
    targets = [PropertyTarget(f"prop.{n}", f"tests/test_faithful.py::test_{n}") for n in names]
    result = run_properties(
        faithful_tree(tmp_path),
        targets,
        11,
        SandboxConfig(),
        contract_paths=["tests"],
        limits=LIMITS,
        recheck_failures=True,
    )
    assert result.complete and not result.forged and not result.missing, result.problems
    got = {r.prop: (r.status, r.isolation, r.recheck) for r in result.records}
    assert got == {
        "prop.type_of_a_product_function": ("fail", "isolated", "pass"),
        "prop.really_fails": ("fail", "isolated", "fail"),
        "prop.identity": ("pass", "isolated", ""),
    }


def test_a_refusal_at_one_test_modules_top_sends_only_that_module_in_process(
    tmp_path: Path,
) -> None:
    # One test module's top makes what cannot cross (a subclass of a product class whose
    # class method calls super()); its tests run in-process, every other module's still
    # isolated (all 476 of cachetools' fell back once for one module's top).
    targets = [
        PropertyTarget("prop.made", "tests/test_super_at_the_top.py::test_made"),
        PropertyTarget("prop.paths", "tests/test_faithful.py::test_paths"),
    ]
    result = run_properties(
        faithful_tree(tmp_path), targets, 11, SandboxConfig(), contract_paths=["tests"],
        limits=LIMITS,
    )  # fmt: skip
    assert result.complete and not result.forged and not result.missing, result.problems
    got = {r.prop: (r.status, r.witness, r.isolation) for r in result.records}
    assert got["prop.paths"] == ("pass", "", "isolated")
    assert got["prop.made"][:2] == ("pass", "")
    assert got["prop.made"][2].startswith(
        "in-process: the test module tests/test_super_at_the_top.py does not import isolated: "
        "IsolationRefused: the property's subclass Made of a product class uses super() "
        "or __class__ in a class method"
    )


def test_a_class_statement_on_a_product_class_makes_the_class_in_the_product(
    tmp_path: Path,
) -> None:
    """addict's, cachetools' and parsimonious' test modules subclass a product class at
    their top (268 tests of the conformance corpus fell back for it): the class is made in
    the product, its methods the test's code called back, so the product's own methods
    call the test's overrides, pickle finds the class, isinstance and issubclass hold, and a
    subclass of the subclass is one too; super() in its methods runs the base's method in
    the product (a class method that calls super() falls back, named).
    An instance of a product subclass of ``dict`` is a ``dict`` to ``isinstance`` (addict's
    ``assertDictEqual``), and the product's deepcopy of what holds a test's object copies
    that object in the oracle. A product descriptor in a test's class is named by it
    (``__set_name__``), and a private mark a product decorator sets on a test's method is
    seen by the product's metaclass."""
    names = (
        "mine", "again", "builtin_subclass", "names_and_marks", "a_test_objects_container",
        "super", "kept_classed_and_chained", "operators", "callback_writes",
        "class_handed_over",
    )  # fmt: skip
    got = run_faithful(faithful_tree(tmp_path), *names, module="subclassing")
    assert got == {name: ("pass", "", "isolated") for name in names}


def test_a_plain_product_class_is_the_type_of_its_instances(tmp_path: Path) -> None:
    """h11's tests end their event loops on ``type(event) is Closed``: with a handle for
    every product object that never held, and all 78 of h11's tests gave no record. A plain
    product class is a real class here, the type of its instances' handles, the same class
    in every test's process; its attributes, MRO, namespace, pickle, copy and subclassing are
    the product class's. A class made by a metaclass of the product's stays a handle. An
    in-place operator on a product object is the product's own (h11's ``buffer += data``
    fell back: a handle had no ``__iadd__``, and ``__add__`` is not the buffer's)."""
    got = run_faithful(
        faithful_tree(tmp_path), "type_is", "in_place", "rebound", "c_code_needs_the_object",
        "type_is_again", "subclassed", module="classes",
    )  # fmt: skip
    assert got == {
        "type_is": ("pass", "", "isolated"),
        "in_place": ("pass", "", "isolated"),
        "rebound": ("pass", "", "isolated"),
        # C code of the oracle's names the class where it needs the real object: our limit
        "c_code_needs_the_object": (
            "fail",
            "prop.c_code_needs_the_object|TypeError|tests/test_classes.py:59",
            "in-process: a product object stood where the oracle's code needs its type: "
            "memoryview: a bytes-like object is required, not 'Request'",
        ),
        "type_is_again": ("pass", "", "isolated"),
        "subclassed": ("pass", "", "isolated"),
    }


def test_a_method_call_is_one_request_in_the_order_of_one_process(tmp_path: Path) -> None:
    """``obj.m(args)`` is one request (read and call; priority's 100 ``insert_stream`` loops
    made two round trips a call), and the product still sees what one process does: the read,
    then what the arguments do, then the call; a missing name raises before the arguments
    reach the product; a test's own callable the product holds is called here."""
    names = (
        "order", "missing_raises_before_the_arguments", "a_test_callable_the_product_holds",
        "module_class_and_static", "read_not_called",
    )  # fmt: skip
    got = run_faithful(faithful_tree(tmp_path), *names, module="calls")
    assert got == {name: ("pass", "", "isolated") for name in names}


def test_a_mock_the_test_patches_in_keeps_its_record_out_of_product_reach(
    tmp_path: Path,
) -> None:
    """A test's patch of a shared module is made in the product process too, so product
    code holds the test's mock (``time.sleep``): a patch that cleans its record
    (``reset_mock()`` before the one call the test counts) or sets ``call_count`` would pass
    the test. The mock's own interface is an overreach: the call fails, named."""
    got = run_faithful(faithful_tree(tmp_path), "mock_forgotten", "mock_counted", "shared_mock")
    lines = FAITHFUL_TESTS.splitlines()
    forgotten = next(i for i, t in enumerate(lines) if "lib.naps_and_forgets(3)" in t) + 1
    counted = next(i for i, t in enumerate(lines) if "lib.naps_and_counts(3)" in t) + 1
    assert got == {
        "mock_forgotten": (
            "fail",
            f"prop.mock_forgotten|ProductOverreach|tests/test_faithful.py:{forgotten}",
            "isolated",
        ),
        "mock_counted": (
            "fail",
            f"prop.mock_counted|ProductOverreach|tests/test_faithful.py:{counted}",
            "isolated",
        ),
        "shared_mock": ("pass", "", "isolated"),
    }


def test_the_fork_that_starts_a_property_runs_no_hook_of_the_products(tmp_path: Path) -> None:
    """Each property's process is forked from the one that imported the product; a fork hook
    product code registered (``os.register_at_fork``, here through ``functools.partial``,
    which no probe sees) would run there and tell it so, where the agent's ``run_tests`` and
    production never fork. The server's fork runs none of them; product code's own forks
    run them all (attack cases ``probes_forked_*``)."""
    got = run_faithful(faithful_tree(tmp_path), "first", "second", "own_fork", module="forks")
    assert got == {name: ("pass", "", "isolated") for name in ("first", "second", "own_fork")}


def test_a_clock_the_test_froze_is_frozen_in_the_product_too(tmp_path: Path) -> None:
    """freezegun's ``freeze_time`` in a test: the product process freezes its clock too, at
    the same moment and offset, and thaws it with the test (humanize's 202 ``naturaltime``
    tests failed isolated: the product read the real clock); the fake datetimes cross as
    the values they are. A clock patched by hand is refused, named. With a test deadline
    (task from-fix's, the conformance bench's): freezegun rebinds every module attribute
    that is a real clock, and the oracle's deadlines must not read its fake (every call of
    itsdangerous' frozen tests was past its deadline, 2011 minus the real start)."""
    got = run_faithful(
        faithful_tree(tmp_path), "frozen", "thawed", "by_hand", module="clock",
        limits=LIMITS.model_copy(update={"test_timeout_s": 30}),
    )  # fmt: skip
    assert got == {
        "frozen": ("pass", "", "isolated"),
        "thawed": ("pass", "", "isolated"),
        "by_hand": (
            "pass",
            "",
            "in-process: the property patches the clock (time.time, datetime), which the "
            "product process does not share",
        ),
    }


def test_the_interpreters_own_containers_are_never_changed_by_the_product(
    tmp_path: Path,
) -> None:
    """A test that hands product code ``sys.path``: in one process the product's insert is
    the interpreter's. Isolated, no write-back and no container kept in step ever reaches
    the oracle's own (the patch would choose what the oracle imports next): a change in
    the call is refused, named, and the test runs in-process; a kept one stays the
    product's copy."""
    got = run_faithful(
        faithful_tree(tmp_path), "interpreter_own", "kept_interpreter_own", module="clock"
    )
    assert got == {
        "interpreter_own": (
            "pass", "", "in-process: the product changes the interpreter's own sys.path"
        ),
        "kept_interpreter_own": ("pass", "", "isolated"),
    }  # fmt: skip


def test_the_product_sets_nothing_pytest_runs_on_a_test_class(tmp_path: Path) -> None:
    """A plain class of the test's handed over may get a new plain attribute from product
    code (funcy's ``monkey(A)``), never one on a class pytest collects, never a name pytest
    runs (``test_*``, ``setup_*``, ``teardown_*``), never one the class has: the patch would
    put its own function where a later test method is looked up. Each an overreach."""
    names = ("class_overreach_tests", "class_overreach_runs", "class_overreach_replaces")
    got = run_faithful(faithful_tree(tmp_path), *names, module="subclassing")
    assert {n: (status, witness.split("|")[1]) for n, (status, witness, _) in got.items()} == {
        name: ("fail", "ProductOverreach") for name in names
    }


def test_a_patch_a_shared_fixture_makes_is_made_in_every_test_that_shares_it(
    tmp_path: Path,
) -> None:
    # A setUpClass that patches the product runs in the first test's product process only:
    # the patch is made again in each later test's, until the class's teardown sets the
    # attribute back (dpath's 14 TestSegments tests: they failed isolated in setup, then
    # fell back, now run isolated).
    targets = [
        PropertyTarget(f"prop.{n}", f"tests/test_class_fixture.py::TestWithOptions::test_{n}")
        for n in ("one", "two")
    ] + [PropertyTarget("prop.after", "tests/test_class_fixture.py::test_after")]
    result = run_properties(
        faithful_tree(tmp_path), targets, 11, SandboxConfig(), contract_paths=["tests"],
        limits=LIMITS,
    )  # fmt: skip
    assert result.complete and not result.forged and not result.missing, result.problems
    assert {r.prop: (r.status, r.witness, r.isolation) for r in result.records} == {
        "prop.one": ("pass", "", "isolated"),
        "prop.two": ("pass", "", "isolated"),
        "prop.after": ("pass", "", "isolated"),
    }


def test_a_refusal_in_a_shared_fixture_sends_every_test_using_it_in_process(
    tmp_path: Path,
) -> None:
    # A setUpClass that asks what cannot cross is refused once; pytest raises the cached
    # error again for each test of the class: each of them runs in-process, named (dpath's
    # 14 TestSegments tests failed isolated in setup while the first alone fell back).
    targets = [
        PropertyTarget(f"prop.{n}", f"tests/test_class_fixture.py::TestWithSignature::test_{n}")
        for n in ("one", "two")
    ]
    result = run_properties(
        faithful_tree(tmp_path), targets, 11, SandboxConfig(), contract_paths=["tests"],
        limits=LIMITS,
    )  # fmt: skip
    assert result.complete and not result.forged and not result.missing, result.problems
    why = "in-process: the property introspects product function lib.empty_allowed (__signature__)"
    assert {r.prop: (r.status, r.witness, r.isolation) for r in result.records} == {
        "prop.one": ("pass", "", why),
        "prop.two": ("pass", "", why),
    }


def test_a_mutated_argument_fails_the_guard_that_forbids_it(tmp_path: Path) -> None:
    got = run_faithful(faithful_tree(tmp_path), "does_not_mutate")
    line = next(n for n, text in enumerate(FAITHFUL_TESTS.splitlines(), 1) if "was changed" in text)
    assert got == {
        "does_not_mutate": (
            "fail",
            f"prop.does_not_mutate|AssertionError|tests/test_faithful.py:{line}",
            "isolated",
        )
    }


def test_a_test_module_the_proxy_cannot_import_falls_back_naming_why(tmp_path: Path) -> None:
    # dataclasses.fields(<a product class>) at a test module's top level: the handle has
    # no __dataclass_fields__ to give, and dataclasses turns that into a TypeError of its
    # own. That is the isolation's limit, not the product's failure: the module's tests run
    # in-process, saying why and where; a test module that fails to import on the
    # product's own merit (a name the product lacks) still fails, NotRun.
    root = faithful_tree(tmp_path)
    got = run_faithful(root, "fields", module="fields")
    assert got == {
        "fields": (
            "pass",
            "",
            "in-process: the test module tests/test_fields.py does not import isolated: "
            "TypeError: must be called with a dataclass type or instance "
            "(tests/test_fields.py:4)",
        )
    }
    got = run_faithful(root, "broken", module="broken")
    assert got == {
        "broken": ("fail", "prop.broken|NotRun|tests/test_broken.py::test_broken", "isolated")
    }


IN_PACKAGE_TESTS = {
    "pkg/__init__.py": "from .core import clamp\n",
    "pkg/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef top():\n    return 10\n",
    "pkg/tests/__init__.py": "LOW = 0\n",
    "pkg/tests/conftest.py": textwrap.dedent(
        """
        import pytest
        from pkg.core import clamp

        @pytest.fixture
        def clamp_fn():
            return clamp
        """
    ),
    "pkg/tests/helpers.py": textwrap.dedent(
        """
        from ..core import clamp

        def clamped_all(xs, lo, hi):
            return [clamp(x, lo, hi) for x in xs]
        """
    ),
    "pkg/tests/test_x.py": textwrap.dedent(
        """
        import sys
        import types

        from hypothesis import given, strategies as st

        import pkg
        from pkg import core
        from ..core import clamp
        from . import LOW, helpers
        from .helpers import clamped_all

        def test_where():
            assert type(pkg).__name__ == "ProxyModule" and type(core).__name__ == "ProxyModule"
            assert __name__ == "pkg.tests.test_x"
            assert type(sys.modules[__name__]) is types.ModuleType
            assert type(pkg.tests) is types.ModuleType and pkg.tests is sys.modules["pkg.tests"]
            assert type(helpers) is types.ModuleType and helpers.__file__.endswith("helpers.py")

        def test_upper(clamp_fn, top):
            assert clamped_all([top + 5, LOW - 1], LOW, top) == [top, LOW]
            assert clamp_fn(top + 1, LOW, top) == top

        @given(st.integers(), st.integers(), st.integers())
        def test_within(x, a, b):
            lo, hi = min(a, b), max(a, b)
            assert lo <= clamp(x, lo, hi) <= hi

        def test_importlib_mode():
            # pytest's importlib mode imports the parent package by its path: the product's
            # answer about its file (a lie here) must not have pytest run it in the oracle.
            from pathlib import Path
            from _pytest.pathlib import import_path

            path = Path("pkg2/tests/test_y.py").resolve()
            mod = import_path(path, mode="importlib", root=Path.cwd(),
                              consider_namespace_packages=False)
            assert mod.__name__ == "pkg2.tests.test_y" and mod.VALUE == 4
            assert type(sys.modules["pkg2"]).__name__ == "ProxyModule"
            assert sys.modules["pkg2"].__file__ == "/elsewhere/pkg2/__init__.py"
        """
    ),
    "pkg2/__init__.py": "__file__ = '/elsewhere/pkg2/__init__.py'\n\ndef four():\n    return 4\n",
    "pkg2/tests/__init__.py": "",
    "pkg2/tests/test_y.py": "from pkg2 import four\n\nVALUE = four()\n",
    "pkg/test_beside.py": textwrap.dedent(
        """
        from . import clamp

        def test_beside():
            assert clamp(7, 0, 5) == 5
        """
    ),
}
CLAMP = {
    "fixed": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
    "buggy": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi + 1))\n",
}


@pytest.mark.parametrize("product", ["fixed", "buggy"])
def test_tests_inside_the_product_package_run_isolated(tmp_path: Path, product: str) -> None:
    # pkg/tests/ (its __init__, conftest and helpers) and a target beside the product code
    # are the oracle's own code; pkg and pkg.core stay proxies: relative imports from the
    # tests reach the product, and the tests' own modules are never the product's.
    root = tmp_path / product
    for rel, text in {**IN_PACKAGE_TESTS, "pkg/core.py": CLAMP[product]}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for path in (root, *[p for p in root.rglob("*") if p.is_dir()]):
        path.chmod(0o755)
    names = ("where", "upper", "within", "importlib_mode")
    result = run_properties(
        root,
        [
            *[PropertyTarget(f"prop.{n}", f"pkg/tests/test_x.py::test_{n}") for n in names],
            PropertyTarget("prop.beside", "pkg/test_beside.py::test_beside"),
        ],
        11,
        SandboxConfig(),
        contract_paths=["pkg/tests/test_x.py", "pkg/test_beside.py"],
        limits=LIMITS,
    )
    assert result.complete and not result.missing and not result.forged, result.problems
    got = {r.prop: (r.status, r.witness, r.isolation) for r in result.records}
    if product == "fixed":
        assert got == {
            "prop.where": ("pass", "", "isolated"),
            "prop.upper": ("pass", "", "isolated"),
            "prop.within": ("pass", "", "isolated"),
            "prop.importlib_mode": ("pass", "", "isolated"),
            "prop.beside": ("pass", "", "isolated"),
        }
    else:
        assert got == {
            "prop.where": ("pass", "", "isolated"),
            "prop.upper": ("fail", "prop.upper|AssertionError|pkg/tests/test_x.py:21", "isolated"),
            "prop.within": (
                "fail",
                "prop.within|AssertionError|pkg/tests/test_x.py:27",
                "isolated",
            ),
            "prop.importlib_mode": ("pass", "", "isolated"),
            "prop.beside": ("fail", "prop.beside|AssertionError|pkg/test_beside.py:5", "isolated"),
        }


def test_a_typeerror_the_product_raised_never_selects_the_fallback(tree: Path) -> None:
    # The text names the proxy type, as the oracle's C code does when it meets a proxy; but
    # it crossed from the product (or was raised while handling one that did): it is the
    # product's answer, so the property fails isolated instead of running again in-process,
    # where product code could behave otherwise (docs/design/isolated-oracle.md).
    got = run(tree, "product_claims_a_proxy", "product_claims_a_proxy_rewrapped", "product_buffer")
    assert got["product_claims_a_proxy"] == (
        "fail",
        f"prop.product_claims_a_proxy|TypeError|tests/test_props.py:"
        f"{line_of('shop.claims_a_proxy(1)')}",
        "isolated",
    )
    assert got["product_claims_a_proxy_rewrapped"] == (
        "fail",
        f"prop.product_claims_a_proxy_rewrapped|TypeError|tests/test_props.py:"
        f"{line_of('raise TypeError(str(exc)) from None')}",
        "isolated",
    )
    assert got["product_buffer"][2].startswith("in-process: a product object stood")


def test_the_runs_processes_see_the_runs_entropy_never_the_contract_seed(
    tree: Path, tmp_path: Path
) -> None:
    # The oracle and the product process get the hash seed and random seed the scorer drew
    # (sandbox/_entropy.py); the contract's seed reaches the oracle only, as the
    # contract_seed fixture and the Hypothesis seed.
    entropy = RunEntropy(hash_seed=3_141_592_653, random_seed=2_718_281_828)
    code = "import sys; print(hash('zq'))"
    env = {"PYTHONHASHSEED": str(entropy.hash_seed), "PATH": os.environ.get("PATH", "")}
    zq = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    draw = repr(random.Random(entropy.random_seed).random())
    expected = f"{entropy.hash_seed},{zq},{draw},{entropy.random_seed}"
    config = SandboxConfig(env_allow=["EXPECTED_SEEDS"])
    os.environ["EXPECTED_SEEDS"] = expected
    try:
        result = run_properties(
            tree,
            [PropertyTarget("prop.seeds_seen", "tests/test_props.py::test_seeds_seen")],
            11,
            config,
            contract_paths=["tests/test_props.py"],
            limits=LIMITS,
            entropy=entropy,
        )
    finally:
        del os.environ["EXPECTED_SEEDS"]
    assert result.complete, result.problems
    assert [(r.status, r.witness, r.isolation) for r in result.records] == [
        ("pass", "", "isolated")
    ]
    assert result.entropy == entropy
