"""Scoring a Python answer against its tests, with the verdict decided outside the answer's reach.

The answer runs in its own process (`_sandbox_child.py`), in the sandbox `_bwrap.isolation()`
gives (a uid of its own, fresh namespaces, a read-only minimal filesystem), with CPU time,
memory, processes and file size limited; the whole sandbox is killed when the call ends or its
wall clock runs out, so nothing it started survives. The answer only ever answers calls: the
harness sends plain-data arguments, gets plain-data results (JSON with tagged tuples, sets,
dicts and bytes; any other object is refused), and judges them itself:

- call cases (`{"call", "args", "kwargs", "expected", "tolerance"}`): the harness compares each
  result with `expected` as JSON values; the expected value never enters the sandbox.
- assert-style tests (Python text): run in the harness's process with each of the answer's
  top-level names bound to a proxy that calls into the sandbox, so every `==` and `assert` is the
  harness's own over built-in values. What remains possible is stated in docs/your-model.md.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import select
import signal
import subprocess
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import TracebackType

from .._protocol import Score
from ._bwrap import Isolation, isolation
from ._plain import Plain, PlainError, decode, encode, json_equal, to_json

__all__ = ["CallCase", "network_isolation", "run_unit_tests"]

_CHILD = Path(__file__).with_name("_sandbox_child.py")
_OUTPUT_TAIL = 2048
_MAX_REPLY = 4 << 20
_MAX_PROCESSES = 8  # a fork bomb stops here; an answer needs one
_FLOW = (StopIteration, StopAsyncIteration)


@dataclass(frozen=True)
class CallCase:
    """One test as data: `call(*args, **kwargs)` must return `expected` (as JSON values)."""

    call: str
    args: tuple[object, ...]
    kwargs: Mapping[str, object]
    expected: object
    tolerance: float = 0.0


class SandboxBroken(BaseException):
    """The answer's process died, timed out or broke the protocol: the tests cannot go on (a
    BaseException, so a test's `except Exception` does not swallow it)."""


class AnswerError(Exception):
    """An exception of the answer's whose type is not a built-in exception."""


def network_isolation() -> tuple[str, ...]:
    """The command prefix that isolates an answer, () where none could start."""
    return isolation().prefix


def _builtin_error(name: str, message: str) -> Exception:
    kind = getattr(builtins, name, None)
    # Not StopIteration: raised inside a test's loop machinery it would end the loop early.
    if isinstance(kind, type) and issubclass(kind, Exception) and not issubclass(kind, _FLOW):
        with contextlib.suppress(Exception):
            return kind(message)
    return AnswerError(f"{name}: {message}")


@cache
def _runner() -> str:
    return _CHILD.read_text()


class _Answer:
    """One answer's process, from start to kill; `call` is one round trip."""

    def __init__(self, program: str, timeout_s: float, memory_mb: int, iso: Isolation) -> None:
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self.broken = ""
        self._buf = b""
        self._tmp = tempfile.TemporaryDirectory(prefix="rsi-sandbox-")
        work = Path(self._tmp.name)
        self._err = (work / "err").open("w+b")
        limits = {
            "RLIMIT_CPU": int(timeout_s) + 1,
            "RLIMIT_AS": memory_mb << 20,
            "RLIMIT_FSIZE": 1 << 20,
            "RLIMIT_CORE": 0,
            "RLIMIT_NPROC": _MAX_PROCESSES if iso.sandboxed else 0,
        }
        self.proc = subprocess.Popen(
            # The runner's source on the command line: no host path of ours is bound into the sandbox.
            [*iso.prefix, iso.python, "-I", "-S", "-B", "-c", _runner()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            cwd=work,
            env={"LC_ALL": "C"},
            start_new_session=True,  # its own process group, killed as a whole
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin, self.proc.stdout
        os.set_blocking(self._in.fileno(), False)
        job = {"program": program, "uid": iso.uid, "gid": iso.gid, "limits": limits, "guard": not iso.sandboxed}
        self._write(json.dumps(job).encode() + b"\n")

    def _write(self, data: bytes) -> None:
        """Within the deadline: an answer that stops reading cannot hold the harness on a full pipe."""
        fd = self._in.fileno()
        view = memoryview(data)
        while view:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                self._fail(f"killed after {self.timeout_s:g}s (wall clock)")
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except OSError:
                self._fail("the answer's process closed its input")

    def _fail(self, why: str) -> None:
        self.broken = self.broken or why
        raise SandboxBroken(self.broken)

    def _reply(self) -> dict[str, object]:
        fd = self._out.fileno()
        while b"\n" not in self._buf:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self._fail(f"killed after {self.timeout_s:g}s (wall clock)")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self._fail("the answer's process ended")
            self._buf += chunk
            if len(self._buf) > _MAX_REPLY:
                self._fail("a reply over 4 MB")
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):
            reply = None
        if not isinstance(reply, dict) or len(reply) != 1:
            self._fail("a malformed reply")
        return reply

    def names(self) -> dict[str, object]:
        reply = self._reply()
        if "error" in reply:
            raise _raise(reply["error"])
        names = reply.get("names")
        if not isinstance(names, dict):
            self._fail("a malformed reply")
        return names  # type: ignore[return-value]

    def call(self, name: str, args: Sequence[object], kwargs: Mapping[str, object]) -> Plain:
        if self.broken:
            raise SandboxBroken(self.broken)
        try:
            request = {"call": name, "args": encode(list(args)), "kwargs": encode(dict(kwargs))}
        except PlainError as exc:
            raise TypeError(f"a test passed {exc} to {name}") from None
        self._write(json.dumps(request).encode() + b"\n")
        reply = self._reply()
        if "error" in reply:
            raise _raise(reply["error"])
        if "ok" not in reply:
            self._fail("a malformed reply")
        try:
            return decode(reply["ok"])
        except PlainError as exc:
            raise TypeError(f"{name} returned {exc}") from None

    def output_tail(self) -> str:
        self._err.seek(max(0, self._err.seek(0, os.SEEK_END) - _OUTPUT_TAIL))
        return self._err.read().decode("utf-8", "replace")

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # bwrap's death takes the whole PID namespace
        self.proc.wait()
        for f in (self._in, self._out, self._err):
            with contextlib.suppress(OSError):
                f.close()
        self._tmp.cleanup()

    def __enter__(self) -> _Answer:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _raise(error: object) -> Exception:
    if isinstance(error, list) and len(error) == 2 and all(isinstance(e, str) for e in error):
        return _builtin_error(error[0][:60], error[1][:300])
    return AnswerError("a malformed error")


class _Remote:
    """One of the answer's functions as the tests see it: a call into the sandbox."""

    def __init__(self, answer: _Answer, name: str) -> None:
        self._answer, self._name = answer, name

    def __call__(self, *args: object, **kwargs: object) -> Plain:
        return self._answer.call(self._name, args, kwargs)

    def __repr__(self) -> str:
        return f"<answer function {self._name}>"


def _test_line(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<tests>"]
    if not frames or frames[-1].lineno is None:
        return ""
    # The line number only: a test's text holds expected values, which are protected items.
    return f" at line {frames[-1].lineno}"


def _run_asserts(answer: _Answer, tests: str) -> Score:
    namespace: dict[str, object] = {"__name__": "__tests__", "__builtins__": builtins}
    for name, kind in answer.names().items():
        if name.startswith("__") or hasattr(builtins, name):
            continue  # the tests' `len`, `sorted` or `isinstance` stay the harness's own
        if kind == "callable":
            namespace[name] = _Remote(answer, name)
        elif isinstance(kind, dict) and "value" in kind:
            with contextlib.suppress(PlainError):
                namespace[name] = decode(kind["value"])
    try:
        exec(compile(tests, "<tests>", "exec"), namespace)  # the task's tests: trusted as the task is
    except AssertionError as exc:
        return Score(0.0, f"unit tests failed: AssertionError{_test_line(exc)}")
    except Exception as exc:
        return Score(0.0, f"unit tests failed: {type(exc).__name__}: {str(exc)[:120]}{_test_line(exc)}")
    if answer.broken:  # a test that swallowed the failure does not make it a pass
        raise SandboxBroken(answer.broken)
    return Score(1.0, "tests passed")


def _run_cases(answer: _Answer, cases: Sequence[CallCase]) -> Score:
    answer.names()
    for i, case in enumerate(cases):
        try:
            got = to_json(answer.call(case.call, case.args, case.kwargs))
        except PlainError as exc:
            return Score(0.0, f"case {i}: {case.call} returned {exc}")
        except Exception as exc:
            return Score(0.0, f"case {i}: {case.call} raised {type(exc).__name__}: {str(exc)[:120]}")
        if not json_equal(got, case.expected, case.tolerance):  # type: ignore[arg-type]
            # What the answer returned, never what was expected (a protected item).
            return Score(0.0, f"case {i}: {case.call} returned {json.dumps(got)[:80]}")
    return Score(1.0, f"{len(cases)} cases passed")


def run_unit_tests(program: str, tests: str | Sequence[CallCase], timeout_s: float, memory_mb: int) -> Score:
    """1.0 when every test passes against `program`; 0.0 with the reason otherwise. The reason
    starts with `trust_boundary:` when no sandbox could start on this machine."""
    iso = isolation()
    with _Answer(program, timeout_s, memory_mb, iso) as answer:
        try:
            score = _run_asserts(answer, tests) if isinstance(tests, str) else _run_cases(answer, tests)
        except SandboxBroken as exc:
            last = next((x for x in reversed(answer.output_tail().splitlines()) if x.strip()), "")
            score = Score(0.0, f"unit tests: {exc}" + (f" ({last[:160]})" if last else ""))
        except Exception as exc:  # the answer failed to load: its own error
            score = Score(0.0, f"unit tests: the answer raised {type(exc).__name__}: {str(exc)[:160]}")
    return score if iso.sandboxed else Score(score.score, f"{iso.statement}; {score.reason}")
