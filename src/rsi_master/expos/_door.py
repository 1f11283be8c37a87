"""The door: ExpOS served over a Unix socket by a harness-owned process.

An agent process holds a capability and the socket's path, nothing else: the run
directory, the key directory (signing key, capability secret, witnesses, seal secrets) and
the sealed evaluator stay with the process that serves the door, which runs every tool
(training and evaluation included) with the harness's privileges. A request is one JSON
line `{"capability": TOKEN, "tool": NAME, "args": {...}}`; the reply is one JSON line,
`{"ok": true, "result": {...}}` or `{"ok": false, "error": "refused|invalid|failed",
"message": ..., "exit_code": N}`.

Authorisation is by capability, not by who can reach the socket: the socket is
world-connectable (0666) inside a directory only the harness can write, so an agent cannot
put a fake door in its place. Since anyone may connect, a refusal the door cannot pin on a
capability (no valid one), or one of a capability over its write quota, is counted per peer
uid and written as one `door.refusals` event per window (`_writes`), never one per call.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import socketserver
import stat
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import RsiMasterError
from ._errors import ToolError, ToolFailed, ToolInvalid, ToolRefused
from ._external import external_call
from ._session import ExpOS
from ._writes import DOOR_ACTOR, REFUSAL_INTERVAL_S, QuotaExceeded, RefusalMeter

__all__ = ["Door", "DoorUnreachable", "default_socket_path", "door_alive", "door_call"]

# One request line: a tool's input is small (data rows go by generator, not inline).
MAX_REQUEST = 4 * 1024 * 1024
# Tool calls that train run for minutes; a pool lets several agents work at once, each
# worker thread keeping its own ExpOS session (SQLite connections belong to their thread).
DOOR_THREADS = 8


class DoorUnreachable(RsiMasterError):
    """No door answers at the socket path (not started, ended, or no permission)."""


_ERRORS: dict[str, type[ToolError]] = {"refused": ToolRefused, "invalid": ToolInvalid, "failed": ToolFailed}


def default_socket_path(run_id: str) -> Path:
    """Where a run's door listens unless told otherwise: a directory the agents cannot write."""
    if os.geteuid() == 0:
        return Path("/run/rsi-master") / f"{run_id}.sock"
    base = os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/rsi-master-{os.geteuid()}"
    return Path(base) / "rsi-master" / f"{run_id}.sock"


def door_alive(path: Path) -> bool:
    """Whether a door answers at `path` (a socket that accepts a connection)."""
    if not (path.exists() and stat.S_ISSOCK(path.lstat().st_mode)):
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def _prepare_dir(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    st = path.parent.stat()
    if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise RsiMasterError(
            f"{path.parent}: the door's directory must belong to the harness's user and be "
            "writable by it alone (else an agent could put its own socket there)"
        )
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise RsiMasterError(f"{path} exists and is not a socket; refusing to replace it")
        if door_alive(path):
            raise RsiMasterError(f"{path}: a door is already serving there")
        path.unlink()  # a stale socket of a door that died


class _Server(socketserver.UnixStreamServer):
    daemon_threads = True


class Door:
    """Serve one run's ExpOS over a Unix socket. `start()` serves from a thread; `serve()` blocks."""

    def __init__(
        self,
        run_dir: str | Path,
        *,
        socket_path: str | Path | None = None,
        key_dir: str | Path | None = None,
        threads: int = DOOR_THREADS,
        refusal_interval_s: float = REFUSAL_INTERVAL_S,
    ) -> None:

        self.run_dir = Path(run_dir)
        self.key_dir = key_dir
        probe = ExpOS.open(self.run_dir, key_dir=key_dir)  # fails early, clearly, without the key
        self.run_id = probe.run.run_id
        probe.close()
        self.path = Path(socket_path) if socket_path is not None else default_socket_path(self.run_id)
        _prepare_dir(self.path)
        self._local = threading.local()
        self.refusals = RefusalMeter(refusal_interval_s)
        self._flushing = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="expos-door")
        door = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                line = self.rfile.readline(MAX_REQUEST + 1)
                reply = door._pool.submit(door._answer, line, _peer_uid(self.request)).result()
                self.wfile.write(json.dumps(reply, sort_keys=True).encode("utf-8") + b"\n")

        class Threaded(socketserver.ThreadingMixIn, _Server):
            def service_actions(self) -> None:
                # The server loop's tick: windows of refusals that have run their interval are
                # written by a pool thread (which holds a session), even when no call comes.
                if not door._closed and door.refusals.pending():
                    door._pool.submit(door._flush_refusals)

        self._server = Threaded(str(self.path), Handler)
        os.chmod(self.path, 0o666)
        self._thread: threading.Thread | None = None
        self._closed = False

    def _session(self) -> Any:

        expos = getattr(self._local, "expos", None)
        if expos is None:
            # Agents' calls run here: the protected items stay in the gate's evaluator process.
            expos = ExpOS.open(self.run_dir, key_dir=self.key_dir, gate_process=True)
            self._local.expos = expos
        return expos

    def _flush_refusals(self, everything: bool = False) -> None:
        """Write each window of refusals that has run its interval (every one with `everything`)
        as one `door.refusals` event; after the run's final record nothing is written."""
        with self._flushing:
            windows = self.refusals.due(everything=everything)
            if not windows:
                return
            expos = self._session()
            if expos.final_seq() is not None:
                return
            for w in windows:
                expos.record(DOOR_ACTOR, w.payload(self.refusals.interval_s))

    def _answer(self, line: bytes, peer_uid: int | None = None) -> dict[str, Any]:

        if len(line) > MAX_REQUEST:
            return _error("invalid", f"request over {MAX_REQUEST} bytes")
        try:
            req = json.loads(line)
        except ValueError:
            return _error("invalid", "request is not one JSON line")
        if (
            not isinstance(req, dict)
            or not isinstance(req.get("tool"), str)
            or not isinstance(req.get("args", {}), dict)
        ):
            return _error("invalid", 'request must be {"capability": str, "tool": str, "args": {...}}')
        try:
            expos = self._session()
            try:
                caller = expos.authenticate(str(req.get("capability") or ""), record=False)
            except ToolRefused as exc:
                self.refusals.note("unauthenticated", peer_uid, str(exc))
                raise
            try:
                result = external_call(expos, caller, req["tool"], req.get("args") or {})
            except QuotaExceeded:
                self.refusals.note(
                    "over_quota", peer_uid, "capability at its write quota", (caller.id, caller.cap or "")
                )
                raise
        except ToolError as exc:
            return _error(next((k for k, c in _ERRORS.items() if isinstance(exc, c)), "failed"), str(exc))
        except RsiMasterError as exc:
            return _error("failed", str(exc))
        except Exception as exc:  # a harness fault: one line for the agent, the door stays up
            return _error("failed", f"internal error in {req['tool']}: {type(exc).__name__}: {exc}".splitlines()[0])
        return {"ok": True, "result": result.model_dump(mode="json")}

    def serve(self) -> None:
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._close_sessions()

    def start(self) -> Door:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="expos-door", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()
        self.path.unlink(missing_ok=True)
        self._close_sessions()

    def _close_sessions(self) -> None:
        # Each session belongs to the pool thread that opened it (SQLite connections are
        # bound to their thread): one task per pool thread, held at a barrier so that no
        # thread takes two, closes that thread's own session.
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):  # a failed write must not keep the door's sessions open
            self._pool.submit(self._flush_refusals, True).result(timeout=30)
        threads = self._pool._max_workers
        barrier = threading.Barrier(threads)

        def close_own() -> None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=30)
            expos = getattr(self._local, "expos", None)
            if expos is not None:
                self._local.expos = None
                expos.close()

        for f in [self._pool.submit(close_own) for _ in range(threads)]:
            f.result()
        self._pool.shutdown(wait=True)

    def __enter__(self) -> Door:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _peer_uid(conn: socket.socket) -> int | None:
    """The connecting process's uid, as the kernel vouches for it (None where it cannot say)."""
    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    except (OSError, AttributeError):
        return None
    return uid


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": kind, "message": message, "exit_code": _ERRORS[kind].exit_code}


def door_call(
    socket_path: str | Path,
    capability: str,
    tool: str,
    args: dict[str, Any] | None = None,
    *,
    timeout: float | None = None,
) -> dict[str, Any]:
    """One call through a door: the result as a dict, or the ToolError the door answered."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(str(socket_path))
        except OSError as exc:
            raise DoorUnreachable(f"cannot reach the ExpOS door at {socket_path}: {exc.strerror or exc}") from None
        sock.sendall(json.dumps({"capability": capability, "tool": tool, "args": args or {}}).encode() + b"\n")
        with sock.makefile("rb") as fh:
            line = fh.readline()
    finally:
        sock.close()
    try:
        reply = json.loads(line)
    except ValueError:
        raise RsiMasterError(f"the door at {socket_path} answered no reply (closed early)") from None
    if reply.get("ok"):
        return reply["result"]
    raise _ERRORS.get(reply.get("error"), ToolFailed)(str(reply.get("message")))
