"""The trust boundary on one Linux machine: what an agent process can and cannot reach.

As root, the harness keeps the run directory and the key directory to itself (owner root,
mode 0700) and starts each external agent as a separate unprivileged OS user
(`rsi-agent`, created on first use) with no supplementary groups, `no_new_privs` set and a
minimal environment: the door's socket path and the agent's capability. The agent can
run any code as that user; it cannot open the ledger, the artifact store, the signing key,
the capability secret, the witnesses or the seal secrets, so it can act on the run only
through the door, as the capability's role and node.

Without root there is no second user: the agent runs as the harness's own user and could
read all of it. That mode is stated, never silent (`boundary` says what holds).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import RsiMasterError
from ..ledger import KeyDir

__all__ = ["AgentProcess", "boundary_statement", "lock_down"]

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_PDEATHSIG = 1


def boundary_statement(user: str = "rsi-agent") -> str:
    """One line for run summaries: which trust boundary holds for agents of this process."""
    if os.geteuid() == 0:
        return (
            f"os-user: run and key directories belong to root (0700); external agents started with "
            f"`rsi-master agent` run as OS user {user} and reach the run only through the door with a capability"
        )
    return (
        f"same-user (uid {os.geteuid()}): no second OS user without root; an agent with a shell started "
        "as this user could read the key directory, so guarantees against it rest on detection "
        "(verify with a checkpoint exported elsewhere, audit)"
    )


def lock_down(*paths: Path) -> None:
    """Make each path the harness's alone (as root: owner root, mode 0700; files keep their modes
    but sit behind the directory)."""
    if os.geteuid() != 0:
        return
    for p in paths:
        if p.exists():
            os.chown(p, 0, 0)
            os.chmod(p, 0o700)


def _ensure_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    home = Path("/var/lib") / name
    res = subprocess.run(
        [useradd, "--system", "--user-group", "--home-dir", str(home), "--create-home", "--shell", "/bin/sh", name],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        raise RsiMasterError(f"cannot create the agent user {name!r}: {res.stderr.strip() or res.returncode}")
    return pwd.getpwnam(name)


def _preexec(parent: int):
    """What the child does before exec, prepared here: the child of a forked, threaded parent
    must not import or load libraries."""
    import ctypes
    import signal

    prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl

    def child() -> None:
        prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # no setuid binary gives the agent more than it has
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)

    return child


def _blocked_dir(path: Path, user: pwd.struct_passwd) -> Path | None:
    """The first directory on `path` that `user` (no supplementary groups) cannot traverse."""
    import stat

    for d in [*reversed(path.parents)]:
        st = d.stat()
        bit = stat.S_IXUSR if st.st_uid == user.pw_uid else stat.S_IXGRP if st.st_gid == user.pw_gid else stat.S_IXOTH
        if not st.st_mode & bit:
            return d
    return None


class AgentProcess:
    """Start an agent's command behind the boundary with a capability and a door."""

    def __init__(
        self,
        run_dir: str | Path,
        run_id: str,
        capability: str,
        *,
        key_dir: str | Path | None = None,
        user: str = "rsi-agent",
        socket_path: str | Path | None = None,
    ) -> None:
        from ._door import default_socket_path

        self.run_dir = Path(run_dir).resolve()
        self.capability = capability
        self.key_dir = KeyDir(key_dir)
        self.socket_path = Path(socket_path) if socket_path is not None else default_socket_path(run_id)
        self.root = os.geteuid() == 0
        self.user = _ensure_user(user) if self.root else None
        self.boundary = boundary_statement(user)
        if self.user is not None:
            # The agent's tools (`expos`, the MCP client) run on this Python: say clearly if the
            # agent user cannot reach it, instead of a failed exec inside the agent.
            blocked = _blocked_dir(Path(os.path.realpath(sys.executable)), self.user)
            if blocked is not None:
                raise RsiMasterError(
                    f"agent: user {user} cannot reach this Python ({os.path.realpath(sys.executable)}): "
                    f"{blocked} is closed to it; install Python where other users can run it, or "
                    f"open that directory for traversal (chmod o+x {blocked})"
                )

    def env(self, door: Path) -> dict[str, str]:
        bindir = str(Path(sys.executable).parent)
        home = self.user.pw_dir if self.user else os.environ.get("HOME", "/tmp")
        out = {
            "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "LANG": "C.UTF-8",
            "EXPOS_DOOR": str(door),
            "EXPOS_CAPABILITY": self.capability,
        }
        for keep in ("TERM", "PYTHONPATH", "OMP_NUM_THREADS"):
            if keep in os.environ:
                out[keep] = os.environ[keep]
        return out

    def run(self, cmd: list[str]) -> int:
        from ._door import Door, door_alive

        if self.root:
            lock_down(self.run_dir, self.key_dir.path)
        # Several agents share one door: start it unless one serves the run there already.
        door = (
            None
            if door_alive(self.socket_path)
            else Door(self.run_dir, socket_path=self.socket_path, key_dir=self.key_dir.path).start()
        )
        try:
            kwargs: dict = {}
            if self.user is not None:
                kwargs = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
                os.makedirs(self.user.pw_dir, exist_ok=True)
            try:
                proc = subprocess.Popen(
                    cmd,
                    env=self.env(self.socket_path),
                    cwd=self.user.pw_dir if self.user else None,
                    preexec_fn=_preexec(os.getpid()),
                    **kwargs,
                )
            except OSError as exc:
                raise RsiMasterError(f"agent: cannot start {cmd[0]!r}: {exc.strerror or exc}") from None
            try:
                return proc.wait()
            except KeyboardInterrupt:
                proc.terminate()
                return proc.wait()
        finally:
            if door is not None:
                door.close()
