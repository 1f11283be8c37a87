"""One driver per run: a second driver (a `resume` while the run is still driven, from another
terminal, or a bench restarted while its old campaign processes live on) is refused before it
records anything, and a killed driver's lock goes with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from rsi_master.cli._main import main
from rsi_master.errors import RsiMasterError
from rsi_master.expos import ExpOS
from rsi_master.orchestra._driver import one_driver
from rsi_master.rundir import DRIVER_LOCK

from .helpers import new_run

HOLD = """import sys, time
from rsi_master.orchestra._driver import one_driver
with one_driver(sys.argv[1]):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_second_driver_is_refused_until_the_first_is_gone(tmp_path, capsys):
    with new_run(tmp_path) as x:
        size = x.run.ledger.size()
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert main(["resume", str(run)]) == 2
        err = capsys.readouterr().err
        assert f"is being driven by another process (pid {holder.pid})" in err and err.count("\n") == 1, err
        with ExpOS.open(run, writable=False) as x:
            assert x.run.ledger.size() == size  # nothing recorded: no session, no interrupted jobs
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    # The kernel released the killed holder's lock: the next driver takes it, and names itself.
    with one_driver(run):
        assert (run / DRIVER_LOCK).read_text().strip() == str(os.getpid())


def test_the_audit_takes_the_drivers_lock_file_and_nothing_else_by_its_name(tmp_path):
    from rsi_master.expos import audit

    with new_run(tmp_path):
        pass
    run = tmp_path / "run"
    with one_driver(run):
        pass
    with ExpOS.open(run, writable=False) as x:
        assert audit(x).run_dir_issues == []
    (run / DRIVER_LOCK).unlink()
    (run / DRIVER_LOCK).symlink_to(run / "ledger.pub")
    with ExpOS.open(run, writable=False) as x:
        assert audit(x).run_dir_issues == [f"run directory: {DRIVER_LOCK} was added outside the tools"]


def test_a_link_in_the_locks_place_is_refused_not_followed(tmp_path):
    with new_run(tmp_path):
        pass
    run, target = tmp_path / "run", tmp_path / "elsewhere"
    target.write_text("keep me\n")
    (run / DRIVER_LOCK).symlink_to(target)
    with pytest.raises(RsiMasterError, match="cannot take the run's driver lock"), one_driver(run):
        pass
    assert target.read_text() == "keep me\n"
