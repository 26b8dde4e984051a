"""Input fuzzing at full budget: every parser and every MCP tool, malformed inputs by the
thousand, and not one traceback.

    python bench/fuzz.py [-n 600]

Runs tests/test_fuzz.py in this process with PATCHWARDEN_FUZZ_EXAMPLES=N (CI runs it with
the test suite's default, 60). Prints the inputs each target was fed, the tools' results
and tool errors, the total (at least 10,000 with the default N) and the time taken; exits
non-zero if any input ended in anything but an accepted input, a one-line error or a tool
error.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=600, help="inputs per target (default 600)")
    examples = parser.parse_args().n
    os.environ["PATCHWARDEN_FUZZ_EXAMPLES"] = str(examples)
    sys.path.insert(0, str(ROOT))  # the suite imports its helpers as tests.*
    import pytest

    started = time.perf_counter()
    # At this budget a target takes minutes (deep YAML nesting costs PyYAML a second each):
    # the suite's per-test timeout is for CI's budget.
    args = ["-q", "-p", "no:cacheprovider", "-o", "timeout=0"]
    code = pytest.main([*args, str(ROOT / "tests" / "test_fuzz.py")])
    elapsed = time.perf_counter() - started
    module = sys.modules.get("test_fuzz")
    if module is None:
        sys.exit("tests/test_fuzz.py was not loaded")
    inputs, outcomes = module.INPUTS, module.TOOL_OUTCOMES
    print()
    for target, count in sorted(inputs.items()):
        extra = ""
        if target.startswith("tool "):
            name = target.removeprefix("tool ")
            extra = (
                f"  ({outcomes[name, 'result']} results, "
                f"{outcomes[name, 'tool error']} tool errors)"
            )
        print(f"{target:>24}: {count:6d}{extra}")
    total = sum(inputs.values())
    verdict = "0 tracebacks" if code == 0 else "FAILED (see above)"
    print(
        f"{'total':>24}: {total:6d} inputs in {elapsed:.0f} s ({total / elapsed:.0f}/s); {verdict}"
    )
    sys.exit(int(code))


if __name__ == "__main__":
    main()
