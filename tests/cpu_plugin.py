"""Where the test suite's CPU goes: a pytest plugin, loaded on demand.

    .venv/bin/python -m pytest -q -n auto --dist loadfile -p tests.cpu_plugin --cpu-report DIR
    .venv/bin/python -m tests.cpu_plugin DIR        # the files and tests that spend the most

Per test (setup, call and teardown together) it records the test process's user and system
seconds and those of the children it waited for (`getrusage`; a process nobody waits for is not
counted), one JSON line per test in DIR/<worker>.jsonl. CPU seconds, unlike wall seconds, do not
depend much on what else runs on the machine, so the ranking holds on a busy one."""

from __future__ import annotations

import json
import os
import resource
import sys
from collections import defaultdict
from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption("--cpu-report", metavar="DIR", help="write each test's CPU seconds to DIR (tests.cpu_plugin)")


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    out = item.config.getoption("--cpu-report")
    if not out:
        yield
        return
    own0, kids0 = _cpu()
    yield
    own1, kids1 = _cpu()
    Path(out).mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(Path(out) / f"{worker}.jsonl", "a") as f:
        f.write(
            json.dumps({"test": item.nodeid, "own": round(own1 - own0, 3), "children": round(kids1 - kids0, 3)}) + "\n"
        )


def summary(directory: Path, top: int = 25) -> str:
    rows = [json.loads(line) for p in sorted(directory.glob("*.jsonl")) for line in p.read_text().splitlines()]
    if not rows:
        raise SystemExit(f"tests.cpu_plugin: no *.jsonl records in {directory}")
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        f = by_file[r["test"].split("::", 1)[0]]
        f[0] += r["own"]
        f[1] += r["children"]
        f[2] += 1
    total = sum(r["own"] + r["children"] for r in rows)
    lines = [f"{len(rows)} tests, {total:.0f} CPU-s (test processes and the children they waited for)", ""]
    lines.append(f"{'CPU-s':>7} {'own':>7} {'children':>8} {'tests':>5}  file")
    for name, (own, kids, n) in sorted(by_file.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:top]:
        lines.append(f"{own + kids:7.1f} {own:7.1f} {kids:8.1f} {n:5d}  {name}")
    lines += ["", f"{'CPU-s':>7}  test"]
    for r in sorted(rows, key=lambda r: -(r["own"] + r["children"]))[:top]:
        lines.append(f"{r['own'] + r['children']:7.1f}  {r['test']}")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m tests.cpu_plugin DIR")
    print(summary(Path(sys.argv[1])))
