"""Per-call cost of the unit-test scorer (also GRPO's reward): the bubblewrap sandbox against the
unsandboxed fallback and, with --before REV, the scorer as it was at REV (read from git).

    .venv/bin/python benchmarks/bench_sandbox.py [--n 30] [--before 4e40259]

Prints the median and 90th percentile wall time of one scored answer per configuration, and
the one-off cost of probing the sandbox. Run on demand: timings on a shared machine are not
test assertions.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path

from rsi_master.tasks._dir import _bwrap, _sandbox
from rsi_master.tasks._dir._sandbox import CallCase

ANSWER = "def f(x):\n    return sorted(x)[len(x) // 2]\n"
ASSERTS = "assert f([3, 1, 2]) == 2\nassert f([5]) == 5\nassert f([9, 7, 8, 1, 2]) == 7\n"
CASES = [CallCase("f", ([3, 1, 2],), {}, 2), CallCase("f", ([5],), {}, 5), CallCase("f", ([9, 7, 8, 1, 2],), {}, 7)]


def _before(rev: str) -> Callable[..., object]:
    """`run_unit_tests` of revision `rev`, loaded from git into a throwaway module."""
    root = Path(__file__).resolve().parents[1]
    tmp = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))

    def show(path: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), "show", f"{rev}:{path}"], capture_output=True, text=True, check=True
        ).stdout

    (tmp / "_sandbox_child.py").write_text(show("src/rsi_master/tasks/_dir/_sandbox_child.py"))
    source = show("src/rsi_master/tasks/_dir/_sandbox.py").replace(
        "from .._protocol import Score", "from rsi_master.tasks._protocol import Score"
    )
    module = types.ModuleType("before_sandbox")
    module.__file__ = str(tmp / "_sandbox.py")
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module.run_unit_tests  # type: ignore[no-any-return]


def _time(label: str, n: int, run: Callable[[], object]) -> None:
    run()  # warm: the first call pays for the probe and imports
    times = []
    for _ in range(n):
        t = time.perf_counter()
        score = run()
        times.append(time.perf_counter() - t)
    assert getattr(score, "score", None) == 1.0, score
    q = statistics.quantiles(times, n=10)
    print(f"{label}: median {statistics.median(times) * 1000:.1f} ms, p90 {q[-1] * 1000:.1f} ms (n={n})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=30)
    p.add_argument("--before", metavar="REV", help="also time the scorer of this git revision")
    args = p.parse_args()
    t = time.perf_counter()
    iso = _bwrap.isolation()
    print(f"isolation: {iso.statement} (probed once per process in {(time.perf_counter() - t) * 1000:.0f} ms)")
    if iso.sandboxed:
        _time("sandboxed, assert tests", args.n, lambda: _sandbox.run_unit_tests(ANSWER, ASSERTS, 3.0, 512))
        _time("sandboxed, call cases", args.n, lambda: _sandbox.run_unit_tests(ANSWER, CASES, 3.0, 512))
    fallback = _bwrap.unsandboxed("benchmark")
    _sandbox.isolation = lambda: fallback  # type: ignore[assignment]
    _time("unsandboxed fallback, assert tests", args.n, lambda: _sandbox.run_unit_tests(ANSWER, ASSERTS, 3.0, 512))
    if args.before:
        old = _before(args.before)
        _time(f"before ({args.before}), assert tests", args.n, lambda: old(ANSWER, ASSERTS, 3.0, 512))
    print("---")
    print(f"python: {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
