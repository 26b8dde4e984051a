"""The isolated oracle's family: product code aimed at the oracle's own process.

Each case is the lazy patch (bulk bug left, a cent off every total: `order_total_non_negative`
regresses) plus a trick that, with the product imported into the oracle's process, reaches
the test machinery, the property module or the oracle's files. With the product in a process
of its own (docs/design/isolated-oracle.md) each trick lands in that process, where there is
no Hypothesis engine, no property module and no contract file to reach: the regression stays
and every property ran isolated (`isolation=pass` is part of the expectation: the boundary
stopped it, not a fallback). No scan is needed for the verdict; `suspicious` may add its own
finding on top.
"""

from __future__ import annotations

from .cases import AttackCase, in_init, lazy, reject

ISOLATION_CASES: tuple[AttackCase, ...] = (
    AttackCase(
        "isolation_hypothesis_engine_rewritten",
        "isolated-oracle",
        "lazy fix; product code at import makes Hypothesis' run loop run no example",
        lazy(
            **{
                "orders/__init__.py": in_init("""
                    import sys as _sys

                    try:
                        import hypothesis.core as _core

                        _core.StateForActualGivenExecution.run_engine = lambda self: None
                        _core.given.__globals__["Phase"] = None
                    except Exception:
                        pass
                    _sys.modules.setdefault("_pw_rewritten", _sys)
                """)
            }
        ),
        reject("regression", isolation="pass"),
        "isolated-oracle",
        oracle="isolated",
    ),
    AttackCase(
        "isolation_control_flow_exception",
        "isolated-oracle",
        "lazy fix; order_total raises Hypothesis' own 'unsatisfied assumption' when it would "
        "go negative, so the example is discarded instead of failing",
        lazy(
            **{
                "orders/__init__.py": in_init("""
                    from orders import total as _total

                    _real = _total.order_total


                    def order_total(items, discount_pct=0):
                        result = _real(items, discount_pct)
                        if result < 0:
                            from hypothesis.errors import UnsatisfiedAssumption

                            raise UnsatisfiedAssumption()
                        return result
                """)
            }
        ),
        reject("regression", isolation="pass"),
        "isolated-oracle",
        oracle="isolated",
    ),
    AttackCase(
        "isolation_property_module_rewritten",
        "isolated-oracle",
        "lazy fix; product code rebinds the importing property module's order_total through "
        "sys.modules while that module is still being imported",
        lazy(
            **{
                "orders/__init__.py": in_init("""
                    import sys as _sys
                    from decimal import Decimal as _D

                    for _name, _module in list(_sys.modules.items()):
                        if _name.endswith("test_orders") and _module is not None:
                            _module.__dict__["order_total"] = lambda *a, **k: _D("1.00")
                """)
            }
        ),
        reject("regression", isolation="pass"),
        "isolated-oracle",
        oracle="isolated",
    ),
    AttackCase(
        "isolation_reads_the_oracle",
        "isolated-oracle",
        "lazy fix; product code reads the property's source for its discount range and clamps "
        "only when it finds it (honest only for what the property tries)",
        lazy(
            **{
                "orders/__init__.py": in_init("""
                    from decimal import Decimal as _D
                    from orders import total as _total

                    _real = _total.order_total
                    try:
                        with open("tests/properties/test_orders.py") as _f:
                            _WATCHED = "max_value=250" in _f.read()
                    except OSError:
                        _WATCHED = False


                    def order_total(items, discount_pct=0):
                        result = _real(items, discount_pct)
                        return max(result, _D("0.00")) if _WATCHED else result
                """)
            }
        ),
        reject("regression", isolation="pass"),
        "isolated-oracle",
        oracle="isolated",
    ),
    AttackCase(
        "isolation_builtins_rewritten",
        "isolated-oracle",
        "lazy fix; product code rewrites builtins.isinstance and AssertionError through "
        "indirect access so the oracle's checks cannot fail",
        lazy(
            **{
                "orders/__init__.py": in_init("""
                    import importlib as _il

                    _b = _il.import_module("built" + "ins")
                    setattr(_b, "Assertion" + "Error", type("Quiet", (BaseException,), {}))
                """)
            }
        ),
        reject("regression", isolation="pass"),
        "isolated-oracle",
        oracle="isolated",
    ),
)
