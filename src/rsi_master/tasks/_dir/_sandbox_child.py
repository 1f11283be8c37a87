"""Loads one answer and serves calls to it (a script: `python -I -S -B _sandbox_child.py`).

It runs inside the sandbox, as the first code of a fresh interpreter. Protocol on its standard
input and output, one JSON object a line: first {"program", "uid", "gid", "limits", "guard"}
from the harness; then, after dropping to `uid` (when started as root) and limiting itself, it
runs the program and answers {"names": {name: "callable" | {"value": v}}} (or {"error": ...});
then, for each {"call", "args", "kwargs"}, {"ok": value} or {"error": [type name, message]}.
Values are plain data: JSON with tuples, sets, frozensets, dicts and bytes tagged
({"t": [...]}, {"s": [...]}, {"f": [...]}, {"d": [[k, v], ...]}, {"b": "hex"}); an object of
any other type (an int subclass included) is refused here and again by the harness's decoder.
Nothing here is trusted by the harness: the answer controls this process once it runs, so a
reply is only the answer's claim of a value, and the harness compares values itself. The
answer's own prints go to standard error, never onto the protocol. Standard library only.
"""

import contextlib
import json
import os
import resource
import sys
from typing import Any

_DEPTH = 64


def _enc(v, depth=0):
    if depth > _DEPTH:
        raise ValueError("nested too deeply")
    t = type(v)
    if v is None or t is bool or t is int or t is float or t is str:
        return v
    if t is list:
        return [_enc(x, depth + 1) for x in v]
    if t is tuple:
        return {"t": [_enc(x, depth + 1) for x in v]}
    if t is set or t is frozenset:
        return {"s" if t is set else "f": [_enc(x, depth + 1) for x in v]}
    if t is dict:
        return {"d": [[_enc(k, depth + 1), _enc(x, depth + 1)] for k, x in v.items()]}
    if t is bytes:
        return {"b": v.hex()}
    raise TypeError(f"a {t.__name__} is not plain data")


def _dec(v):
    if isinstance(v, list):
        return [_dec(x) for x in v]
    if not isinstance(v, dict):
        return v
    ((tag, body),) = v.items()
    if tag == "t":
        return tuple(_dec(x) for x in body)
    if tag in ("s", "f"):
        return (set if tag == "s" else frozenset)(_dec(x) for x in body)
    if tag == "d":
        return {_dec(k): _dec(x) for k, x in body}
    return bytes.fromhex(body)


_GUARDED_PREFIXES = ("socket.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "ctypes.", "_ctypes.")
_GUARDED = frozenset({"os.fork", "os.forkpty", "os.system", "os.kill", "os.killpg", "pty.spawn"})


def _guard(event, args):
    """Only where no sandbox could start: a hurdle, not a boundary (an in-process hook is not one)."""
    if event in _GUARDED or event.startswith(_GUARDED_PREFIXES):
        raise PermissionError(f"sandbox: {event} is not allowed")


def _drop(uid, gid):
    if os.getuid() == 0 and uid is not None:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if 0 in os.getresuid() or 0 in os.getresgid():
            raise SystemExit("sandbox: could not drop root")


def _limit(limits):
    for name, value in limits.items():
        with contextlib.suppress(ValueError, OSError):  # a hard limit already lower than ours stays
            resource.setrlimit(getattr(resource, name), (value, value))


def _send(out, message):
    try:
        line = json.dumps(message, allow_nan=True)
    except (TypeError, ValueError) as exc:
        line = json.dumps({"error": ["TypeError", str(exc)[:200]]})
    out.write(line.encode() + b"\n")
    out.flush()


def _error(exc):
    return {"error": [type(exc).__name__, str(exc)[:300]]}


def _names(namespace):
    names: dict[str, object] = {}
    for name, value in list(namespace.items()):
        if name.startswith("__") or type(value).__name__ == "module":
            continue
        if callable(value):
            names[name] = "callable"
            continue
        with contextlib.suppress(Exception):
            names[name] = {"value": _enc(value)}
    return names


def main():
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    # The answer reads nothing and its prints never reach the protocol.
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    job = json.loads(requests.readline())
    _drop(job.get("uid"), job.get("gid"))
    _limit(job["limits"])
    if job.get("guard"):
        sys.addaudithook(_guard)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    program = job.pop("program")
    del job
    try:
        exec(compile(program, "<answer>", "exec"), namespace)
    except BaseException as exc:  # the answer's failure is reported, never this script's
        _send(replies, _error(exc))
        return
    _send(replies, {"names": _names(namespace)})
    for line in requests:
        try:
            request = json.loads(line)
            function = namespace[request["call"]]
            result = function(*_dec(request["args"]), **_dec(request["kwargs"]))
            reply = {"ok": _enc(result)}
        except BaseException as exc:
            reply = _error(exc)
        sys.stdout.flush()
        _send(replies, reply)


main()
sys.stdout.flush()
os._exit(0)
