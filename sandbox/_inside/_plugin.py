"""Inside the oracle: the pytest plugin that records one outcome per scheduled property.

Part of the program concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import contextlib
import os
import random
from typing import TYPE_CHECKING

import _pytest.mark.structures
import pytest

if TYPE_CHECKING:
    from hypothesis import settings

    from ._boot import (
        AGENT_TEXT_CHARS,
        FORCED_PROFILE,
        MODE,
        PYTEST_WORLD,
        RANDOM_SEED,
        SEED,
        SENTINEL,
        TARGETS,
        TREE,
    )
    from ._failures import fit_report, summarise_failure
    from ._guard import (
        _MISSING,
        _assertion_id,
        _emit,
        _fingerprint,
        _machinery_shadowed,
        _refuse_foreign_code,
        _relpath,
        _tampered,
        _traceback_id,
    )
    from ._proxy import (
        COLLECTING,
        FROM_PRODUCT,
        ISOLATION,
        IsolationRefused,
        ProductFailure,
        _monotonic,
        _refuse,
        names_a_proxy_type,
        next_property,
        ours,
        parametrize_id,
    )


class Reporter:
    """Collects one outcome per scheduled node id; never trusts the exit code."""

    def __init__(self, canaries=()):
        self.watched = None  # taken once the reporter's own module is complete
        self.tampered = []
        self.fingerprints = {}  # prop -> the Hypothesis settings its test ran with
        self.by_node = {node: prop for prop, node in TARGETS}
        # Hidden canaries live outside the tree; matched by file and function name.
        self.canaries = [(prop, path, name) for prop, path, name in canaries]
        self.by_location = {(path, name): prop for prop, path, name in self.canaries}
        self.outcomes = {}  # scorer: prop -> (status, witness, duration); agent: node id -> ...
        self.started = {}
        self.spent = {}  # scorer: prop -> {node id: seconds since it started}
        self.raised = {}  # prop -> witness of what the test function itself raised
        self.seen_tampered = set()
        self.module_globals = {}  # property module name -> (module, {global: value})
        self.summaries = {}  # agent: (node id, when) -> the failure's summary (_failures)
        self.causes = {}  # scorer: prop -> why it failed for a reason of the run's (_cause)
        self.refused_scopes = {}  # scorer: a class's or module's node id -> a refusal in setup
        self.collect_causes = {}  # scorer: collector node id -> why it did not collect

    def pytest_addoption(self, parser):
        # pytest's unittest support asks for --pdb and --trace on every TestCase item
        # (_pytest.unittest, _pytest.debugging.maybe_wrap_pytest_function_for_tracing);
        # the debugging plugin declares them, and the scorer blocks that plugin, so without
        # these every unittest-style property failed on both trees. Declared off.
        if MODE == "scorer":
            parser.addoption("--pdb", dest="usepdb", action="store_true", default=False)
            parser.addoption("--trace", dest="trace", action="store_true", default=False)

    def _prop_of(self, item):
        """The property a collected item checks: its node id, a parametrized case of it,
        or a canary (by file and function)."""
        nodeid = item.nodeid
        prop = self.by_node.get(nodeid)
        if prop is None and "[" in nodeid:
            prop = self.by_node.get(nodeid.split("[", 1)[0])
        if prop is None and self.by_location:
            prop = self.by_location.get((str(getattr(item, "path", "")), item.name))
        return prop

    def pytest_collection_modifyitems(self, session, config, items):
        if MODE != "scorer":
            return
        # Select here, not with node ids on the command line: one unknown id
        # there would abort the whole session; here it just never runs.
        keep = [item for item in items if self._prop_of(item) is not None]
        dropped = [item for item in items if self._prop_of(item) is None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep

    @pytest.fixture
    def contract_seed(self):
        return SEED

    def pytest_make_parametrize_id(self, config, val, argname):
        # A product enum member or function as a parametrize value: named by its value,
        # as pytest names the product's own object in one process (the contract's id).
        return parametrize_id(val) if MODE == "scorer" else None

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):
        _derive_profile(self)
        if MODE == "scorer":
            # pytest.mark keeps the Config for marker checks; from a module global product
            # code would reach every object of the session, this runner's included.
            _pytest.mark.structures.MARK_GEN._config = None

    def pytest_collection_finish(self, session):
        # Product code has been imported by now (test modules import it).
        self._note_tampered("after collection")
        _refuse_foreign_code(self, session)
        if MODE == "scorer":
            for item in session.items:
                module = getattr(item, "module", None)
                if module is not None and module.__name__ not in self.module_globals:
                    self.module_globals[module.__name__] = (module, dict(vars(module)))

    def _note_tampered(self, when):
        """Watched objects replaced, and property-module globals rebound, since the start."""
        found = list(_tampered(self.watched))
        for name, (module, before) in self.module_globals.items():
            now = vars(module)
            found += [
                f"global {key} of the property module {name}"
                for key, value in before.items()
                if now.get(key, _MISSING) is not value
            ]
        for name in found:
            if name not in self.seen_tampered:
                self.seen_tampered.add(name)
                self.tampered.append(f"{name} ({when})")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        prop = self._prop_of(item)
        if prop is None or MODE != "scorer":
            return
        # @settings(...) may sit outside @given (on the test) or inside (on the inner
        # test); either was built from the default profile of the moment it ran.
        test = getattr(item, "obj", None)
        inner = getattr(getattr(test, "hypothesis", None), "inner_test", None)
        chosen = (
            getattr(test, "_hypothesis_internal_use_settings", None)
            or getattr(inner, "_hypothesis_internal_use_settings", None)
            or settings.default
        )
        self.fingerprints[prop] = _fingerprint(chosen)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        # Re-applied before every test: product code imported at collection
        # cannot leave a weaker profile or a fixed random state behind.
        settings.load_profile("patchwarden")
        random.seed(RANDOM_SEED)
        if MODE == "scorer":
            # Isolated runs: refusals and product failures belong to the running property;
            # the product process re-seeds its own random state like this one.
            ISOLATION["prop"] = self._prop_of(item)
            ISOLATION["test_started"] = _monotonic()
            link = ISOLATION["link"]
            if link is not None and link.dead is not None and ISOLATION["prop"] is not None:
                ISOLATION["orphaned"].setdefault(ISOLATION["prop"], link.dead[1])
            # Every property, the first too: the product process starts each one from the
            # state its import left (a process of its own, docs/design/isolated-oracle.md).
            if link is not None and link.dead is None:
                with contextlib.suppress(ProductFailure, IsolationRefused):
                    next_property(link)
        self.started[item.nodeid] = _monotonic()
        if MODE == "scorer":
            # Checked before every test too: a replacement made while one test ran and
            # undone before the session ends still shows.
            self._note_tampered(f"before {item.nodeid}")

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        # A fixture several tests share (a class's or module's, setUpClass) runs in the
        # first one's product process only: what it changes in a product module would be
        # lost for the others (sandbox/_inside/_proxy.py ProxyModule.__setattr__).
        before = ISOLATION["shared_setup"]
        if fixturedef.scope != "function" and before is None:
            ISOLATION["shared_setup"] = fixturedef.scope
        try:
            return (yield)
        finally:
            ISOLATION["shared_setup"] = before

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        # What the test function itself did, seen as it happens: an exception raised here
        # is a fail whatever report objects say about it afterwards.
        try:
            return (yield)
        except BaseException as exc:
            prop = self._prop_of(pyfuncitem) if MODE == "scorer" else None
            if prop is not None and prop not in self.raised:
                test_file = os.path.abspath(str(pyfuncitem.path))
                where = _traceback_id(exc.__traceback__, test_file)
                self.raised[prop] = f"{prop}|{type(exc).__name__}|{where}"
            raise

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if MODE == "agent":
            if report.failed:
                # Built here, where the exception and its frames still are.
                exc = call.excinfo.value if call.excinfo is not None else None
                # A missing fixture is pytest's complaint, no frame of the tree's: its
                # report (the fixtures there are) says more.
                if exc is not None and not isinstance(exc, pytest.FixtureLookupError):
                    self.summaries[(report.nodeid, report.when)] = _summary(exc, report)
            return report
        prop = self._prop_of(item)
        if prop is None:
            return report
        test_file = os.path.abspath(str(item.path))
        previous = self.outcomes.get(prop)
        if previous and previous[0] == "fail":
            return report  # the first failure (setup, call, teardown) is the witness
        if report.skipped and hasattr(report, "wasxfail"):
            witness = f"{prop}|XFailed|{_relpath(test_file)}"
            self._record(item, prop, "fail", witness)
        elif report.skipped:
            self._record(item, prop, "fail", f"{prop}|Skipped|{report.when}")
        elif report.failed:
            _refuse_proxy_type_errors(call.excinfo)
            if report.when == "setup":
                self._share_setup_refusal(item, prop)
            if report.when == "setup" and call.excinfo is not None:
                # Not the product's answer: the test never started (a fixture not found).
                self.causes.setdefault(prop, f"its setup failed: {_cause(call.excinfo.value)}")
            if call.excinfo is not None:
                exc_type = call.excinfo.type.__name__
                where = _assertion_id(call.excinfo, test_file)
            else:
                exc_type, where = "Failed", report.when
            if hasattr(report, "wasxfail"):
                exc_type = "XPassedStrict"
            prefix = "" if report.when == "call" else f"{report.when}:"
            self._record(item, prop, "fail", f"{prop}|{exc_type}|{prefix}{where}")
        elif report.passed and hasattr(report, "wasxfail"):
            self._record(item, prop, "fail", f"{prop}|XPassed|{_relpath(test_file)}")
        elif report.passed and report.when == "call":
            self._record(item, prop, "pass", "")
        return report

    def _share_setup_refusal(self, item, prop):
        """A refusal in a fixture several tests share (a ``setUpClass`` that patches the
        product, dpath's): pytest runs it once and fails the setup of every later test of the
        class or module with the cached error, or with its own complaint about the first
        one's teardown. Each of them runs in-process too, for the same reason."""
        scopes = [n.nodeid for n in item.listchain() if isinstance(n, pytest.Class | pytest.Module)]
        why = ISOLATION["refused"].get(prop)
        if why is not None:
            for scope in scopes:
                self.refused_scopes.setdefault(scope, why)
            return
        inherited = next(
            (self.refused_scopes[s] for s in reversed(scopes) if s in self.refused_scopes), None
        )
        if inherited is not None:
            ISOLATION["refused"].setdefault(prop, inherited)

    def _record(self, item, prop, status, witness):
        failed = ISOLATION["failed"].get(prop)
        if status == "pass" and failed is not None:
            # The product process failed under this property and the property went on to
            # pass (it caught what was raised): a product failure is never a pass.
            status, witness = "fail", f"{prop}|{failed[0]}|product"
        if status == "pass" and prop in self.raised:
            # The report says passed, but the test function raised: something between
            # the test and its report changed the outcome.
            self.tampered.append(f"the report of {prop} said passed after the test raised")
            status, witness = "fail", self.raised[prop]
        # A property's time: each of its items' (the cases of a parametrized test) from
        # its start to its last report (a test's subtests report more than once each).
        spent = self.spent.setdefault(prop, {})
        spent[item.nodeid] = _monotonic() - self.started.get(item.nodeid, _monotonic())
        duration = round(sum(spent.values()), 6)
        previous = self.outcomes.get(prop)
        if previous is not None and previous[0] == "fail":
            status, witness = previous[0], previous[1]
        self.outcomes[prop] = (status, witness, duration)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid, location):
        ISOLATION["prop"] = None
        ISOLATION["test_started"] = None
        if MODE == "agent" and nodeid in self.outcomes:
            self._emit_agent(nodeid)

    def pytest_runtest_logreport(self, report):
        if MODE != "agent":
            return
        if report.when == "call" or report.outcome != "passed":
            outcome = report.outcome
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            elif report.when != "call" and report.failed:
                outcome = "error"
            summary = self.summaries.pop((report.nodeid, report.when), "")
            previous = self.outcomes.get(report.nodeid)
            if previous is None or previous[0] == "passed":
                text = _report_text(report) if report.failed else ""
                record = (outcome, text, summary or text, round(report.duration, 6))
                self.outcomes[report.nodeid] = record

    def pytest_exception_interact(self, node, call, report):
        # For a collector pytest calls this hook, with the exception, before it reports;
        # a failed test's summary was made with its report.
        if MODE == "scorer" and report.when == "collect" and call.excinfo is not None:
            self._refuse_import_limit(node, report.nodeid, call.excinfo.value)
            exc = _collection_exception(call.excinfo.value) or call.excinfo.value
            self.collect_causes.setdefault(report.nodeid, f"it did not collect: {_cause(exc)}")
        if MODE == "agent" and report.when == "collect" and call.excinfo is not None:
            exc = _collection_exception(call.excinfo.value)
            if exc is not None:
                self.summaries[(report.nodeid, "collect")] = _summary(exc, report)

    def _refuse_import_limit(self, node, nodeid, exc):
        """A test module (or class) that did not collect because of the isolation, not of
        the product (a refusal, or an error the proxy machinery raised while the module's
        top level ran: ``Base[KT, VT]`` on a proxy): its properties run again in-process,
        the reason naming the exception and where, instead of failing as ``NotRun``. The
        product's own errors (an ImportError of its, an exception it raised) stay failures."""
        if ISOLATION["link"] is None:
            return
        cause = exc.__cause__ if isinstance(exc, pytest.Collector.CollectError) else exc
        if cause is None or not ours(cause):
            return
        where = _traceback_id(cause.__traceback__, os.path.abspath(str(node.path)))
        try:
            text = str(cause)[:160]
        except Exception:
            text = "?"
        why = (
            f"the test module {nodeid} does not import isolated: "
            f"{type(cause).__name__}: {text} ({where})"
        )
        for node_id, prop in self.by_node.items():
            if node_id == nodeid or node_id.startswith(nodeid + "::"):
                ISOLATION["refused"].setdefault(prop, why)
        if isinstance(cause, IsolationRefused) and ISOLATION["refused"].get(COLLECTING) == str(
            cause
        ):
            # The refusal was this module's: its properties run in-process (above), every
            # other module's still run isolated (cachetools' `class X(Cache)` at one test
            # module's top sent all 476 tests in-process).
            del ISOLATION["refused"][COLLECTING]

    def pytest_collectreport(self, report):
        if MODE != "agent" or not report.failed:
            return
        summary = self.summaries.pop((report.nodeid, "collect"), "")
        text = _report_text(report)
        _emit({"collection": report.nodeid, "text": text, "summary": summary or text})

    def _emit_agent(self, nodeid):
        outcome, text, summary, duration = self.outcomes.pop(nodeid)
        record = {"test": nodeid, "outcome": outcome, "text": text, "summary": summary}
        _emit({**record, "duration_s": duration})

    def pytest_sessionfinish(self, session, exitstatus):
        if MODE != "agent":
            return  # the scorer's rows are built after the session (scorer_payload)
        for node in list(self.outcomes):
            self._emit_agent(node)
        _emit({SENTINEL: True, "seed": SEED, "exitstatus": int(exitstatus), "shadowed": []})

    def scorer_payload(self, exitstatus):
        """Every scheduled property's row in contract order, the canaries after them, and
        what was tampered with: what the signer authenticates. Built once, after the
        session: a process that dies, is killed or leaves early has no rows at all."""
        schedule = [(prop, node) for node, prop in self.by_node.items()]
        schedule += [(prop, f"{path}::{name}") for prop, path, name in self.canaries]
        rows = []
        for prop, node in schedule:
            # Scheduled but never reported (not collected, or the session stopped first)
            # is a fail, never a pass.
            status, witness, duration = self.outcomes.get(
                prop, ("fail", f"{prop}|NotRun|{node}", 0.0)
            )
            cause = self.causes.get(prop) or next(
                (
                    why
                    for collector, why in self.collect_causes.items()
                    if status == "fail" and _within(node, collector)
                ),
                "",
            )
            rows.append(
                {
                    "prop": prop,
                    "seed": SEED,
                    "status": status,
                    "witness": witness,
                    "duration_s": duration,
                    "settings": self.fingerprints.get(prop, ""),
                    "isolation": _isolation_of(prop),
                    "cause": cause,
                }
            )
        self._note_tampered("at the end")
        shadowed = _machinery_shadowed() + self.tampered
        return {"rows": rows, "end": {"exitstatus": int(exitstatus), "shadowed": shadowed}}


def _derive_profile(reporter):
    """The project's Hypothesis profile (``--hypothesis-profile`` in its addopts; Hypothesis'
    plugin has loaded it by now, registered by its conftest) becomes the parent of the
    runner's own: its settings are taken (max_examples, health checks, verbosity...) except
    what the runner forces (FORCED_PROFILE; in scorer runs the explain phase, which traces).
    The runner's profile is re-loaded before every test, so this is where the project's
    settings come in."""
    name = PYTEST_WORLD.get("profile")
    if not name:
        return
    import hypothesis

    real = hypothesis.settings
    try:
        parent = real.get_profile(name)
    except Exception:
        return  # Hypothesis' plugin has already stopped the session on an unknown profile
    forced = dict(FORCED_PROFILE)
    if MODE == "scorer":
        forced["phases"] = tuple(p for p in parent.phases if p != hypothesis.Phase.explain)
    real.register_profile("patchwarden", parent=parent, **forced)
    real.load_profile("patchwarden")
    if reporter.watched is not None:
        # The runner's own re-registration, before collection: the profile it watches.
        reporter.watched["hypothesis profile"] = real._profiles.get("patchwarden")


def _report_text(report):
    """pytest's report of a failure, in the agent's bound (``fit_report``)."""
    return fit_report(report.longrepr, report.longreprtext, TREE, AGENT_TEXT_CHARS)


def _summary(exc, report):
    """The failure's summary (``summarise_failure``). The exception is the tree's code's: one
    whose notes or message cannot be read leaves pytest's report, saying why."""
    try:
        return summarise_failure(exc, TREE, AGENT_TEXT_CHARS)
    except Exception as error:
        why = f"[no summary: {type(error).__name__} while reading the exception]"
        room = AGENT_TEXT_CHARS - len(why) - 1
        return f"{why}\n{fit_report(report.longrepr, report.longreprtext, TREE, room)}"


def _collection_exception(exc):
    """The exception a test module failed to import with: pytest wraps an ImportError or a
    SyntaxError in a CollectError whose cause it is. None for pytest's own complaints (its
    message says it all)."""
    if not isinstance(exc, pytest.Collector.CollectError):
        return exc
    cause = exc.__cause__
    if isinstance(cause, SyntaxError | ImportError) and not type(cause).__module__.startswith(
        "_pytest"
    ):
        return cause
    return None


def _within(node, collector):
    """A test node id is ``collector``'s or one of its children's (a module, a class in it,
    a package directory)."""
    return node == collector or node.startswith((collector + "::", collector + "/"))


def _cause(exc):
    """An exception that stopped a test before it ran, as diagnostics (never a decision):
    its type, its message's first line and the file:line in the tree it came from
    (``ImportError: cannot import name 'x' from 'pkg' (pkg/tests/test_x.py:3)``)."""
    if isinstance(exc, pytest.FixtureLookupError):
        text = f"fixture {exc.argname!r} not found"
    else:
        try:
            text = str(exc).strip()
        except Exception:
            text = ""
    text = (text.splitlines() or [""])[0][:200]
    where = "?"
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f"{_relpath(exc.filename)}:{exc.lineno}"
    elif isinstance(exc, pytest.FixtureLookupError) and exc.request is not None:
        function = getattr(exc.request, "function", None)
        code = getattr(function, "__code__", None)
        if code is not None:
            where = f"{_relpath(code.co_filename)}:{code.co_firstlineno}"
    else:
        where = _traceback_id(exc.__traceback__, "")
    return f"{type(exc).__name__}{': ' + text if text else ''} ({where})"


def _refuse_proxy_type_errors(excinfo):
    """The property failed because a proxy is not the product's real object to C code of
    the oracle's (``datetime(..., tzinfo=<a product tzinfo>)``: "not type 'Handle'"): that is
    the isolation's limit, not the product's answer. The property runs again in-process, and
    the verdict says why (docs/design/isolated-oracle.md, "Fallback and visibility").

    Only the oracle's own TypeError counts: one decoded from a product reply, or raised
    while handling one (its cause or context), is the product's answer whatever its text
    says; otherwise product code could choose to be run in-process. The test machinery's own
    checks count too: Hypothesis's ``InvalidArgument`` "Expected a SearchStrategy but got
    ... (type=Handle)" when a test draws from a strategy the product built (hyperlink's)."""
    if excinfo is None or ISOLATION["link"] is None:
        return
    value = excinfo.value
    if isinstance(value, OSError) and value.errno == 30 and not _from_product(value):
        # EROFS: the test writes a file into the tree (simpleeval's test_load_file), which
        # the oracle has read-only; the in-process run's tree is a writable copy.
        where = str(value.filename or "")[:160]
        _refuse(f"the property writes into the tree, read-only to the isolated oracle: {where}")
        return
    machinery = str(excinfo.type.__module__).split(".")[0] in ("hypothesis", "_pytest", "pytest")
    if excinfo.type is not TypeError and not machinery:
        return
    if _from_product(excinfo.value):
        return
    text = str(excinfo.value)
    if names_a_proxy_type(text) or "(type=Handle)" in text:
        _refuse(f"a product object stood where the oracle's code needs its type: {text[:160]}")


def _from_product(exc):
    """Whether ``exc`` or an exception in its chain was decoded from a product reply."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if getattr(exc, "__dict__", {}).get(FROM_PRODUCT) is True:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _isolation_of(prop):
    """``isolated``, ``refused: <the first call that could not cross>``, ``orphaned: <how
    the product process had died before the property started>`` or ``in-process``."""
    if ISOLATION["link"] is None:
        return "in-process"
    refused = ISOLATION["refused"]
    why = refused.get(prop) or refused.get(COLLECTING)
    if why:
        return f"refused: {why}"
    orphaned = ISOLATION["orphaned"].get(prop)
    return f"orphaned: {orphaned}" if orphaned else "isolated"
