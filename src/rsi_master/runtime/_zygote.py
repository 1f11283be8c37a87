"""The warm evaluator's server: a Python that has imported torch and transformers once and runs
each sealed script in a child forked from itself (`_warm.py` is the client).

A cold sealed evaluation spends about 4 CPU-seconds importing torch and transformers (and the
modules transformers imports while a tokenizer and a model load) before it reads a request; a
child forked from here starts with them imported. This file imports nothing of `rsi_master`:
it runs as `python -E -s -P -B _zygote.py FD` (no PYTHON* variables, no user site-packages, no
script directory or working directory on `sys.path`), so what a child finds imported is the
interpreter's own site-packages and nothing an agent could place.

Protocol, over the SOCK_SEQPACKET socket FD (one message per send, one request at a time):
- zygote -> client: {"ready": true, "cuda": torch.version.cuda} once the imports are done;
- client -> zygote: {"script", "args", "cwd", "env"} (or {"module", "path", ...} for the
  harness's own `python -m MODULE` with its `sys.path`) with three descriptors (the child's stdin,
  stdout and stderr): the zygote forks, answers {"pid": N}, then {"status": CODE} when the
  child ends (a negative code: killed by that signal);
- client -> zygote: {"kill": true} while a child runs: the zygote kills it (it is not reaped
  before the zygote has answered, so the pid cannot name another process);
- the client's end closing: the zygote kills a running child and exits.

What a child is given comes through the descriptors: the client writes the child's stdin
(the seal key) into a pipe only the child reads, so no secret passes through the zygote. The
child closes the control socket before it runs anything, and dies with the zygote
(PR_SET_PDEATHSIG), which dies with its client.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import runpy
import select
import signal
import socket
import sys
import traceback
from typing import Any

# Imported before the first fork; a name that fails to import stays lazy (the child imports it).
PRELOAD = (
    "torch",
    "transformers",
    "transformers.modeling_utils",
    "transformers.masking_utils",
    "transformers.generation.utils",
    "transformers.tokenization_utils_tokenizers",
    "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto",
    "transformers.models.llama.modeling_llama",
    "transformers.models.qwen2.modeling_qwen2",
    "transformers.models.gpt2.modeling_gpt2",
)
_PR_SET_PDEATHSIG = 1


def _preload() -> str | None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # optional: the child imports what it needs itself
            continue
    torch = sys.modules.get("torch")
    return getattr(getattr(torch, "version", None), "cuda", None)


def _die_with(parent: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _child(parent: int, request: dict[str, Any], fds: list[int]) -> None:
    """Runs the script as `python SCRIPT ARGS` would, then exits; never returns."""
    code = 1
    try:
        _die_with(parent)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        torch = sys.modules.get("torch")
        threads = request["env"].get("OMP_NUM_THREADS", "")
        if torch is not None and threads.isdigit() and int(threads) > 0:
            torch.set_num_threads(int(threads))  # as a cold interpreter would read it at start
        module = request.get("module")
        try:
            if module:  # `python -m MODULE ARGS` with the caller's own path (harness code, not sealed)
                sys.argv = [module, *request["args"]]
                sys.path[:] = request["path"]
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                script = request["script"]
                sys.argv = [script, *request["args"]]
                sys.path.insert(0, os.path.dirname(script))  # what `python SCRIPT` puts first
                runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream: nothing left to flush
                stream.flush()
        os._exit(code)


def _wait(sock: socket.socket, pid: int) -> bool:
    """Until the child ends (or is killed on request); False when the client has gone."""
    alive = True
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if alive:
                sock.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
            return alive
        readable, _, _ = select.select([sock], [], [], 0.05)
        if readable:
            msg = sock.recv(1 << 16)
            if not msg or json.loads(msg).get("kill"):
                os.kill(pid, signal.SIGKILL)  # not reaped yet: the pid is still this child
                alive = alive and bool(msg)


def serve(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    cuda = _preload()
    sock.send(json.dumps({"ready": True, "cuda": cuda}).encode())
    me = os.getpid()
    while True:
        msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 3)
        if not msg:
            return
        request = json.loads(msg)
        if len(fds) != 3:
            for f in fds:
                os.close(f)
            sock.send(json.dumps({"error": "a request carries three descriptors"}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            sock.close()  # before anything of the request runs
            _child(me, request, fds)
        for f in fds:
            os.close(f)
        sock.send(json.dumps({"pid": pid}).encode())
        if not _wait(sock, pid):
            return


if __name__ == "__main__":
    serve(int(sys.argv[1]))
