"""Sealed scripts run in a child of a pre-imported Python (`_zygote.py`) instead of a fresh one.

A process that evaluates more than once (a Worker's trials, a Reviewer's candidates, the
harness's final scoring, a test) starts one zygote and forks each evaluation from it: the
first costs what a cold start costs, each later one about 0.3 CPU-seconds instead of 4. The
child runs the same file with the same arguments, working directory, environment and stdin as
`run_tied` would give a fresh `python -E -s -B SCRIPT ARGS`; what differs is only that torch and
transformers are already imported, from the interpreter's own site-packages.

The zygote is started by one thread of the process kept for that (`_spawn`): a child's
PR_SET_PDEATHSIG fires when the *thread* that started it ends, so a zygote started by a door's
worker thread would die with that thread; the spawner thread lives as long as the process.

The cold path stays, and is taken when a zygote cannot be had: `RSI_MASTER_WARM_EVALUATOR=0`,
a platform without `os.fork` or `socket.send_fds`, another thread's evaluation in flight, a
zygote that failed to start or died, or a CUDA build of torch (a process that forks after CUDA
is initialised cannot use CUDA in the child; not measured on a GPU machine, so not taken there).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rsi_master._proc import die_with_parent, run_tied

__all__ = ["WARM_ENV", "Zygote", "run_module", "run_sealed"]

WARM_ENV = "RSI_MASTER_WARM_EVALUATOR"
_ZYGOTE = Path(__file__).with_name("_zygote.py")
_START_TIMEOUT_S = 120.0  # importing torch and transformers on a loaded machine
_ANSWER_S = 30.0  # how long the zygote may take to answer a fork or a kill
_MAX_INPUT = 32_768  # stdin is written before the child reads it: it must fit a pipe's buffer


class _Gone(Exception):
    """The zygote ended or answered nonsense."""


class Zygote:
    """One pre-imported Python, owned by the process that started it; one child at a time."""

    def __init__(self, env: dict[str, str]) -> None:
        parent = os.getpid()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-E", "-s", "-P", "-B", str(_ZYGOTE), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env=env,
                preexec_fn=lambda: die_with_parent(parent),
            )
        finally:
            theirs.close()
        self.sock = ours
        self.owner = parent
        self.lock = threading.Lock()
        self.cuda: str | None = None
        try:
            ready = self._recv(_START_TIMEOUT_S)
        except (_Gone, TimeoutError):
            self.close()
            raise
        if not ready.get("ready"):
            self.close()
            raise _Gone("the zygote did not start")
        self.cuda = ready.get("cuda")

    def _recv(self, timeout: float | None) -> dict[str, Any]:
        self.sock.settimeout(timeout)
        try:
            msg = self.sock.recv(1 << 16)
        except (ConnectionError, OSError) as exc:
            if isinstance(exc, TimeoutError):
                raise
            raise _Gone(str(exc)) from None
        if not msg:
            raise _Gone("the zygote ended")
        try:
            reply = json.loads(msg)
        except ValueError:
            raise _Gone("the zygote answered something other than JSON") from None
        if not isinstance(reply, dict):
            raise _Gone("the zygote answered something other than an object")
        return reply

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.sock.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def run(
        self, what: dict[str, Any], *, cwd: str, env: dict[str, str], input: str, timeout: float
    ) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) of `what` ({"script", "args"} or {"module", "path", "args"})
        run in a fresh child; TimeoutError after `timeout` seconds (the child killed); _Gone when
        the zygote fails before the child ran."""
        deadline = time.monotonic() + timeout
        stdin_r, stdin_w = os.pipe()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                header = json.dumps({**what, "cwd": cwd, "env": env}).encode()
                try:
                    socket.send_fds(self.sock, [header], [stdin_r, out.fileno(), err.fileno()])
                except OSError as exc:
                    raise _Gone(str(exc)) from None
                os.close(stdin_r)
                stdin_r = -1
                try:
                    os.write(stdin_w, input.encode("utf-8"))
                except OSError as exc:  # no reader left: the zygote dropped the request
                    self.close()
                    raise _Gone(str(exc)) from None
            finally:
                if stdin_r >= 0:
                    os.close(stdin_r)
                os.close(stdin_w)
            try:  # the fork is answered at once, whatever the deadline
                reply = self._recv(_ANSWER_S)
            except TimeoutError:
                self.close()  # and a child it may have forked with it
                raise _Gone("the zygote did not answer a request") from None
            if "pid" not in reply:
                raise _Gone(str(reply.get("error", "the zygote refused the request")))
            try:
                status = self._recv(max(0.001, deadline - time.monotonic()))
            except TimeoutError:
                try:
                    self.sock.send(json.dumps({"kill": True}).encode())
                    self._recv(_ANSWER_S)
                except (OSError, _Gone):
                    self.close()  # the child dies with it
                raise
            except _Gone:
                # The zygote died under a running child, which died with it (PR_SET_PDEATHSIG), or
                # answered nonsense: it is closed, and the child with it.
                self.close()
                status = {"status": -signal.SIGKILL}
            out.seek(0)
            err.seek(0)
            return int(status["status"]), out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")


_zygote: Zygote | None = None
_failed_in: int | None = None  # a pid whose zygote would not start: it does not try again
_start_lock = threading.Lock()


def _usable(env: dict[str, str]) -> Zygote | None:
    """This process's zygote, started if need be; None where the cold path must be taken."""
    global _zygote, _failed_in
    if os.environ.get(WARM_ENV, "1") == "0" or not hasattr(socket, "send_fds") or not hasattr(os, "fork"):
        return None
    with _start_lock:
        z = _zygote
        if z is not None and (z.owner != os.getpid() or not z.alive()):
            if z.owner == os.getpid():
                z.close()
            z = _zygote = None  # a forked copy's zygote is its parent's
        if z is None:
            if _failed_in == os.getpid():
                return None
            try:
                z = _spawn(env)
            except (_Gone, TimeoutError, OSError):
                _failed_in = os.getpid()
                return None
            if z.cuda:
                z.close()
                _failed_in = os.getpid()
                return None
            _zygote = z
    return z


_spawner: tuple[int, queue.SimpleQueue] | None = None  # (owner pid, requests to its thread)


def _spawn(env: dict[str, str]) -> Zygote:
    """A new Zygote, started by this process's spawner thread (started here on first use; a
    forked copy of the process has no thread behind its parent's queue, so it starts its own)."""
    global _spawner
    if _spawner is None or _spawner[0] != os.getpid():
        requests: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=_spawner_loop, args=(requests,), name="warm-evaluator-spawner", daemon=True).start()
        _spawner = (os.getpid(), requests)
    answer: queue.SimpleQueue = queue.SimpleQueue()
    _spawner[1].put((env, answer))
    result = answer.get()
    if isinstance(result, BaseException):
        raise result
    return result


def _spawner_loop(requests: queue.SimpleQueue) -> None:
    while True:
        env, answer = requests.get()
        try:
            answer.put(Zygote(env))
        except BaseException as exc:  # handed to the thread that asked
            answer.put(exc)


def _close_at_exit() -> None:
    z = _zygote
    if z is not None and z.owner == os.getpid():
        z.close()


atexit.register(_close_at_exit)  # once: it closes whichever zygote this process holds at exit


def _give_up(z: Zygote) -> None:
    """A zygote that failed a request is not asked again; this process evaluates cold."""
    global _zygote, _failed_in
    with _start_lock:
        if _zygote is z:
            _zygote = None
        _failed_in = os.getpid()
    z.close()


def _run(
    cmd: list[str], what: dict[str, Any], *, cwd: Path | None, env: dict[str, str], input: str, timeout: float
) -> subprocess.CompletedProcess:
    z = _usable(env) if len(input.encode("utf-8")) <= _MAX_INPUT else None
    if z is not None and z.lock.acquire(blocking=False):
        try:
            code, out, err = z.run(what, cwd=str(cwd or os.getcwd()), env=env, input=input, timeout=timeout)
            return subprocess.CompletedProcess(cmd, code, out, err)
        except TimeoutError:
            raise subprocess.TimeoutExpired(cmd, timeout) from None
        except _Gone:
            _give_up(z)  # nothing ran: the cold path below runs it
        finally:
            z.lock.release()
    return run_tied(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, input=input)


def run_sealed(
    script: Path, args: Sequence[str], *, cwd: Path, env: dict[str, str], input: str, timeout: float
) -> subprocess.CompletedProcess:
    """`python -E -s -B SCRIPT ARGS` with this stdin, as `run_tied` runs it, but forked from
    this process's zygote where there is one (the module docstring says when there is not).
    Raises `subprocess.TimeoutExpired` after `timeout` seconds, as `subprocess.run` does."""
    cmd = [sys.executable, "-E", "-s", "-B", str(script), *args]
    what = {"script": str(script), "args": list(args)}
    return _run(cmd, what, cwd=cwd, env=env, input=input, timeout=timeout)


def run_module(module: str, args: Sequence[str], *, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`python -m MODULE ARGS` of the harness's own code, with this process's `sys.path` (where
    a fresh interpreter would read it from `PYTHONPATH`), forked from the zygote where there is
    one, as `run_sealed` is."""
    cmd = [sys.executable, "-m", module, *args]
    what = {"module": module, "path": list(sys.path), "args": list(args)}
    return _run(cmd, what, cwd=None, env=env, input="", timeout=timeout)
