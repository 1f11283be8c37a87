"""One OS identity per external agent: a uid of its own, held while the agent lives.

As root, each agent started by `rsi-master agent` runs under a uid drawn from a reserved
range that has no passwd entry on the host, so no two agents (of one run or of several)
share a uid: one agent cannot read another's `/proc` entries, files or capability, and a
per-uid limit (`RLIMIT_NPROC`) is a per-agent limit. Nothing is created on the host: the
uid is held by an exclusive lock on a file under `/run/rsi-master/agents` for the agent's
lifetime and is free again when the lock is released. An agent can write nothing that
outlives it (its only writable places are tmpfs mounts of its own mount namespace), so a
freed uid owns nothing when it is reused; a uid still running a process is skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import random
from dataclasses import dataclass
from pathlib import Path

from ..errors import RsiMasterError

__all__ = ["AGENT_UID_BASE", "AGENT_UID_COUNT", "AgentIdentity", "AgentLimits", "allocate_identity", "parse_size"]

# Below 2**31 (some tools store uids as signed ints), above every range Debian and systemd allocate.
AGENT_UID_BASE = 2_147_000_000
AGENT_UID_COUNT = 10_000
LOCK_DIR = Path("/run/rsi-master/agents")

_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, what: str) -> int:
    """Bytes from `512M`, `2G`, `1048576`; a one-line error naming the option otherwise."""
    t = str(text).strip().lower().removesuffix("b").removesuffix("i")
    try:
        value = int(float(t[:-1]) * _UNITS[t[-1]]) if t and t[-1] in _UNITS else int(t)
    except ValueError:
        raise RsiMasterError(f"{what} {text!r}: give bytes or a number with K, M, G or T (e.g. 2G)") from None
    if value <= 0:
        raise RsiMasterError(f"{what} {text!r}: must be positive")
    return value


@dataclass(frozen=True)
class AgentLimits:
    """What one agent may use; every process of the agent inherits these."""

    procs: int = 256  # RLIMIT_NPROC: processes and threads of the agent's uid
    memory: int = 8 << 30  # RLIMIT_DATA per process: heap and private writable mappings
    disk: int = 2 << 30  # size of the tmpfs home and of /tmp each; RLIMIT_FSIZE too

    def __post_init__(self) -> None:
        if self.procs < 8:
            raise RsiMasterError(f"agent: --max-procs {self.procs}: at least 8 (a shell and a client need a few)")
        if self.memory < 64 << 20 or self.disk < 1 << 20:
            raise RsiMasterError("agent: --memory needs at least 64M and --disk at least 1M")


@dataclass(frozen=True)
class AgentIdentity:
    """A uid (and the gid of the same number) held for one agent; `release()` frees it."""

    uid: int
    gid: int
    lock_fd: int

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.lock_fd)


def _uids_in_use() -> set[int]:
    """Real uids of the processes now running (a uid still in use is never handed out)."""
    found: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", encoding="ascii", errors="replace") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        found.add(int(line.split()[1]))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return found


def _has_passwd_entry(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def allocate_identity(lock_dir: Path = LOCK_DIR) -> AgentIdentity:
    """A uid of the reserved range that no other agent holds and no process runs as."""
    if os.geteuid() != 0:
        raise RsiMasterError("agent: a uid per agent needs root")
    lock_dir.mkdir(parents=True, exist_ok=True, mode=0o755)
    os.chmod(lock_dir, 0o755)
    busy = _uids_in_use()
    start = random.randrange(AGENT_UID_COUNT)
    for i in range(AGENT_UID_COUNT):
        uid = AGENT_UID_BASE + (start + i) % AGENT_UID_COUNT
        if uid in busy or _has_passwd_entry(uid):
            continue
        fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return AgentIdentity(uid=uid, gid=uid, lock_fd=fd)
    raise RsiMasterError(f"agent: all {AGENT_UID_COUNT} agent uids are in use")
