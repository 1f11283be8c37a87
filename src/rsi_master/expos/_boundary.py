"""The trust boundary on one Linux machine: what an agent process can and cannot reach.

As root, the harness keeps the run directory and the key directory to itself (owner root,
mode 0700) and starts each external agent under a uid of its own (`_identity`), with no
supplementary groups and `no_new_privs`, inside namespaces of its own (`_jail`): its
processes live and die together, it sees no other process, it writes only to its own
size-limited tmpfs mounts. Its capability is a 0400 file owned by its uid, never an
environment variable or an argument, so no other agent can read it from `/proc`. The
agent can run any code as that uid; it cannot open the ledger, the artifact store, the
signing key, the capability secret, the witnesses or the seal secrets, so it can act on the
run only through the door, as the capability's role and node.

Without root there is no second uid: the agent runs in the same namespaces but as the
harness's own user, which could read all of it. That mode is stated, never silent.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import RsiMasterError
from ..ledger import KeyDir
from ._door import Door, default_socket_path, door_alive
from ._identity import AGENT_UID_BASE, AGENT_UID_COUNT, AgentIdentity, AgentLimits, allocate_identity
from ._jail import AGENT_HOME, CAPABILITY_FILE, JailSpec, blocked_dir, client_paths, jail_argv, userns_works
from ._session import ExpOS

__all__ = ["AgentProcess", "boundary_statement", "lock_down"]

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_PDEATHSIG = 1
_DOOR_POLL_S = 2.0  # how often the harness checks that the agent's run and door are still there


def boundary_statement() -> str:
    """One line for run summaries: which trust boundary holds for agents of this process."""
    if os.geteuid() == 0:
        return (
            "os-user: run and key directories belong to root (0700); each external agent started with "
            f"`rsi-master agent` runs under a uid of its own ({AGENT_UID_BASE}+, no passwd entry) in its own "
            "PID and mount namespaces, holds its capability in a 0400 file, and reaches the run only through the door"
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


def _preexec(parent: int):
    """What the child does before exec, prepared here: the child of a forked, threaded parent
    must not import or load libraries."""
    import ctypes

    prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl

    def child() -> None:
        prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # no setuid binary gives the agent more than it has
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)

    return child


def check_task_dir(task_dir: Path) -> None:
    """Refuse while the run's task directory (its protected splits) is open to agents' uids:
    the run reads only its sealed copy, so the operator can close the directory at no cost."""
    if not task_dir.exists():
        return
    probe = AGENT_UID_BASE + AGENT_UID_COUNT  # any agent uid: none owns it, none is in its group
    if blocked_dir(task_dir, probe, probe) is None:
        raise RsiMasterError(
            f"agent: the run's task directory {task_dir} is readable by agents (its splits hold protected "
            f"items); close it first, e.g. chmod o-rwx {task_dir} (the run uses only its sealed copy)"
        )


def _exposed(paths: list[str] | tuple[str, ...], private: tuple[Path | None, ...]) -> list[Path]:
    out = []
    for text in paths:
        path = Path(text).expanduser().resolve()
        if not path.exists():
            raise RsiMasterError(f"agent: --expose {text}: no such path")
        for p in private:
            if p is not None and (path == p or p in path.parents or path in p.parents):
                raise RsiMasterError(f"agent: --expose {text}: overlaps {p}, which agents must not see")
        out.append(path)
    return out


class AgentProcess:
    """Start an agent's command behind the boundary with a capability and a door."""

    def __init__(
        self,
        run_dir: str | Path,
        run_id: str,
        capability: str,
        *,
        key_dir: str | Path | None = None,
        socket_path: str | Path | None = None,
        limits: AgentLimits | None = None,
        expose: list[str] | tuple[str, ...] = (),
    ) -> None:

        self.run_dir = Path(run_dir).resolve()
        self.capability = capability
        self.key_dir = KeyDir(key_dir)
        self.socket_path = Path(socket_path) if socket_path is not None else default_socket_path(run_id)
        self.limits = limits or AgentLimits()
        self.root = os.geteuid() == 0
        self.boundary = boundary_statement()
        record = self.key_dir.record(run_id)
        task_dir = Path(record.task_dir) if record is not None and record.task_dir else None
        if self.root and task_dir is not None:
            check_task_dir(task_dir)
        self.expose = tuple(_exposed(expose, (self.run_dir, self.key_dir.path.resolve(), task_dir)))

    def env(self, door: Path) -> dict[str, str]:
        bindir = str(Path(sys.executable).parent)
        out = {
            "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": AGENT_HOME,
            "USER": "agent",
            "LOGNAME": "agent",
            "LANG": "C.UTF-8",
            "EXPOS_DOOR": str(door),
            "EXPOS_CAPABILITY_FILE": CAPABILITY_FILE,
        }
        for keep in ("TERM", "PYTHONPATH", "OMP_NUM_THREADS"):
            if keep in os.environ:
                out[keep] = os.environ[keep]
        return out

    def _spec(self, identity: AgentIdentity | None) -> JailSpec:
        return JailSpec(
            identity=identity,
            limits=self.limits,
            door_dir=self.socket_path.parent.resolve(),
            hidden=(self.run_dir, self.key_dir.path.resolve()),
            clients=tuple(sorted({*client_paths(), *self.expose})),
        )

    def run(self, cmd: list[str]) -> int:

        if self.root:
            lock_down(self.run_dir, self.key_dir.path)
        # Several agents share one door: start it unless one serves the run there already.
        door = (
            None
            if door_alive(self.socket_path)
            else Door(self.run_dir, socket_path=self.socket_path, key_dir=self.key_dir.path).start()
        )
        if not self.root and not userns_works():
            try:
                return self._run_plain(cmd, watch_door=door is None)
            finally:
                if door is not None:
                    door.close()
        identity = allocate_identity() if self.root else None
        try:
            argv, fds = jail_argv(self._spec(identity), cmd, self.capability)
            try:
                proc = subprocess.Popen(
                    argv, env=self.env(self.socket_path), pass_fds=fds, preexec_fn=_preexec(os.getpid())
                )
            except OSError as exc:
                raise RsiMasterError(f"agent: cannot start the agent's namespace: {exc.strerror or exc}") from None
            finally:
                for fd in fds:
                    os.close(fd)
            return self._wait(proc, watch_door=door is None)
        finally:
            if identity is not None:
                identity.release()
            if door is not None:
                door.close()

    def _run_plain(self, cmd: list[str], *, watch_door: bool) -> int:
        """Without root and without user namespaces: this uid, a session of its own ended after
        the command (a `setsid` descendant escapes it), the capability in a private 0400 file."""
        print(
            "rsi-master agent: no user namespaces here: the agent runs in a plain session, "
            "which a setsid descendant can leave",
            file=sys.stderr,
            flush=True,
        )
        private = Path(tempfile.mkdtemp(prefix="rsi-agent-"))
        try:
            capfile = private / "capability"
            fd = os.open(capfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, "w") as fh:
                fh.write(self.capability + "\n")
            env = {**self.env(self.socket_path), "HOME": os.environ.get("HOME", str(private))}
            env["EXPOS_CAPABILITY_FILE"] = str(capfile)
            try:
                proc = subprocess.Popen(cmd, env=env, start_new_session=True, preexec_fn=_preexec(os.getpid()))
            except OSError as exc:
                raise RsiMasterError(f"agent: cannot start {cmd[0]!r}: {exc.strerror or exc}") from None
            try:
                return self._wait(proc, watch_door=watch_door)
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
        finally:
            shutil.rmtree(private, ignore_errors=True)

    def _wait(self, proc: subprocess.Popen[bytes], *, watch_door: bool) -> int:
        """The agent's exit status; the agent ends early when the run ends (its final record)
        or when the run's door, served by another process, goes."""

        run = ExpOS.open(self.run_dir, key_dir=self.key_dir.path, writable=False)
        try:
            while True:
                try:
                    return proc.wait(timeout=_DOOR_POLL_S)
                except subprocess.TimeoutExpired:
                    why = (
                        "the run has ended"
                        if run.final_seq() is not None
                        else "the run's door is gone"
                        if watch_door and not door_alive(self.socket_path)
                        else None
                    )
                    if why is not None:
                        print(f"rsi-master agent: {why}; ending the agent", file=sys.stderr)
                        proc.kill()  # the namespace's init goes, and with it every process of the agent
                        return proc.wait()
        except KeyboardInterrupt:
            proc.kill()
            return proc.wait()
        finally:
            run.close()
