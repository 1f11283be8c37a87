"""A throwaway PostgreSQL cluster for tests and benchmarks: Debian's PostgreSQL binaries, initdb
in a temporary directory, a unix socket there and no TCP listener, torn down on exit.

initdb and the server refuse to run as root, so as root they run as the `postgres` user
(Debian's package makes it). The cluster has an admin role (`postgres`, a superuser: the
operator who installs the ledger schema and, in the tests, the attacker with full database
rights) and `rsi_writer`, which may only create runs and append to them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

WRITER = "rsi_writer"


@dataclass(frozen=True)
class Cluster:
    socket_dir: str
    admin_url: str
    writer_url: str
    bin_dir: str


def bin_dir() -> str | None:
    """Where initdb and pg_ctl are (PG_BIN, else the newest Debian install, else PATH)."""
    if os.environ.get("PG_BIN"):
        return os.environ["PG_BIN"]
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return str(Path(found[-1]).parent)
    initdb = shutil.which("initdb")
    return str(Path(initdb).parent) if initdb else None


def _as_owner(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    bins = bin_dir()
    if bins is None:
        raise FileNotFoundError("no PostgreSQL binaries (initdb) found: apt-get install -y postgresql")
    base = tempfile.mkdtemp(prefix="rsi-pg-")
    os.chmod(base, 0o755)
    data = os.path.join(base, "data")
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    run = {"check": True, "env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE}
    try:
        subprocess.run(_as_owner([f"{bins}/initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8"]), **run)
        opts = f"-k {base} -c listen_addresses='' -c fsync=off -c max_connections=100"
        subprocess.run(_as_owner([f"{bins}/pg_ctl", "-D", data, "-o", opts, "-l", f"{base}/log", "-w", "start"]), **run)
        admin = f"postgresql://postgres@/postgres?host={base}"
        writer = f"postgresql://{WRITER}@/postgres?host={base}"
        subprocess.run(
            [f"{bins}/psql", "-q", "-v", "ON_ERROR_STOP=1", admin, "-c", f"CREATE ROLE {WRITER} LOGIN"], **run
        )
        yield Cluster(base, admin, writer, bins)
    finally:
        if os.path.exists(os.path.join(data, "postmaster.pid")):
            subprocess.run(
                _as_owner([f"{bins}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"]),
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        shutil.rmtree(base, ignore_errors=True)
