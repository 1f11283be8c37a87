"""A node's stop signal that lands inside an import: held until the import has finished, then
raised as `BudgetEnd`, so a library that wraps import errors (as transformers' lazy modules do)
never turns the budget's end into a training failure, and the module is not left half-imported."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

# A slot process: a "library" whose lazy import wraps any error (transformers' `_LazyModule` does
# `except Exception as e: raise RuntimeError(...) from e`), importing a module that takes a while.
NODE = """
import importlib, sys, time
sys.path.insert(0, {lib!r})
{install}
def lazy(name):
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise RuntimeError(f"Failed to import {{name}} because of the following error: {{exc!r}}") from exc
try:
    print("ready", flush=True)
    lazy("slowmod")
    while True:
        time.sleep(0.01)  # training steps after the import: where the stop is due
except BaseException as exc:
    print(type(exc).__name__, "slowmod" in sys.modules, flush=True)
"""

INSTALL = {
    "held": "import signal\nfrom rsi_master.orchestra._stop import stop_on\nstop_on(signal.SIGTERM)",
    # The handler nodes had before: raise at once, wherever the main thread is.
    "at once": (
        "import signal\nfrom rsi_master.orchestra import BudgetEnd\n"
        "def _stop(s, f):\n    raise BudgetEnd('stop')\nsignal.signal(signal.SIGTERM, _stop)"
    ),
}


def _stopped_inside_import(tmp_path: Path, install: str) -> list[str]:
    lib = tmp_path / "lib"
    lib.mkdir(exist_ok=True)
    marker = tmp_path / "importing"
    (lib / "slowmod.py").write_text(
        textwrap.dedent(f"""
        import pathlib, time
        pathlib.Path({str(marker)!r}).touch()
        for _ in range(100):
            time.sleep(0.01)  # a module body of about a second (torch's is several)
        """)
    )
    code = NODE.format(lib=str(lib), install=install)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert time.monotonic() < deadline, "the import never started"
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)  # the budget's end, in the middle of the module's body
        out, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    return out.split()


def test_a_stop_inside_an_import_is_raised_after_it_as_budget_end(tmp_path):
    assert _stopped_inside_import(tmp_path, INSTALL["held"]) == ["BudgetEnd", "True"]


def test_without_holding_it_the_same_stop_reads_as_an_import_failure(tmp_path):
    # What the test above guards against: the stop wrapped by the library, the module gone.
    assert _stopped_inside_import(tmp_path, INSTALL["at once"]) == ["RuntimeError", "False"]


def test_a_second_signal_while_held_ends_the_process(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "slowmod.py").write_text("import time\nprint('importing', flush=True)\ntime.sleep(60)\n")
    code = NODE.format(lib=str(lib), install=INSTALL["held"])
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert proc.stdout.readline().strip() == "importing"
        proc.send_signal(signal.SIGTERM)  # held: the import goes on
        time.sleep(0.3)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)  # the scheduler's second: the default action
        assert proc.wait(10) == -signal.SIGTERM
    finally:
        proc.kill()
        proc.stdout.close()
