"""The bench's campaign processes die with it: killed mid-run, it leaves no process writing its
campaigns, which a restarted bench would otherwise resume beside them."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.ray_cluster import descendants


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_killed_bench_leaves_no_campaign_process(tmp_path):
    cmd = [sys.executable, "-m", "rsi_master.cli", "bench", "--backend", "sim", "--configs", "rsi-master,no-reviewer"]
    cmd += ["--world-seeds", "7:1", "--seeds", "1", "--budget", "10h", "--jobs", "2", "--no-plot"]
    bench = subprocess.Popen(
        [*cmd, "--out", str(tmp_path / "out")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while (tmp_path / "out" / "campaigns").is_dir() is False or not any((tmp_path / "out" / "campaigns").iterdir()):
            assert time.monotonic() < deadline and bench.poll() is None, "no campaign started"
            time.sleep(0.1)
        workers = [p for p in descendants(bench.pid) if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert workers  # campaigns run in processes of their own
    finally:
        bench.send_signal(signal.SIGKILL)  # no cleanup of its own: the kernel must end them
        bench.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in workers):
        assert time.monotonic() < deadline, [p for p in workers if _alive(p)]
        time.sleep(0.1)
