"""The gate: everything a run's tools and audit ask of its protected items, behind one interface.

The contamination checks compare rows with the protected items, the generators keep clear of them,
the audit traces a restated item, and `verify` checks that the run's seal still draws the items the
contract pinned. None of them needs the items themselves, only an answer: a verdict, the rows that
fail, rows generated clear of them, traces, digests. `ProtectedGate` asks those questions.

- `LocalGate` answers them in this process, from the protected task (drawn with the seal key). The
  harness's own process uses it (it froze the run, it scores and audits for the operator), and so
  does a simulated run, whose world is its evaluator.
- `GateProcess` answers them from an evaluator process of its own (`_gate_server`), started from
  this process with the seal key on its standard input: a Worker's or Reviewer's process (a slot
  process, a Ray task) of a real run asks it, so that the protected items are drawn in evaluator
  processes only (the sealed evaluator and the gate), never where an agent's tools run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import RsiMasterError
from ._contamination_gate import check_bytes, check_rows, failing_rows
from ._errors import ToolFailed, ToolInvalid

if TYPE_CHECKING:
    from ..tasks import PoolItem, Task
    from ._contract import TaskContract
    from ._taxonomy import Subcategory

__all__ = [
    "MAX_TOP_UPS",
    "GateError",
    "GateProcess",
    "LocalGate",
    "Pinned",
    "ProtectedGate",
    "make_gate",
    "seal_problems",
]

# How many times a generated dataset is topped up after leaving out rows the gate fails.
MAX_TOP_UPS = 4
# A split's pinned items as the seal draws them: (digest of the items, their sample ids).
Pinned = dict[str, tuple[str, list[str]]]


class GateError(RsiMasterError):
    """The gate process could not answer (it did not start, or it died)."""


class ProtectedGate(Protocol):
    """What a run asks of its protected items (each answer, never an item)."""

    def check(self, data: bytes, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The contamination report of a dataset's JSONL bytes (`_contamination_gate.check_rows`)."""
        ...

    def generate(self, family: str, params: dict[str, Any], seed: int, n: int) -> tuple[dict[str, Any], int, bytes]:
        """`n` rows of a generator family, clear of the protected items: (spec, rows left out, JSONL bytes)."""
        ...

    def traces(self, digest: str, data: bytes) -> list[tuple[Subcategory, str]]:
        """What the task's own checks of a dataset's rows find beyond the gate (`row_traces`)."""
        ...

    def pinned(self, splits: dict[str, int]) -> Pinned:
        """Each split's items as the seal draws them: their digest and first `n` sample ids."""
        ...

    def pool(self) -> tuple[list[PoolItem], dict[str, dict[str, Any]]]:
        """A task directory's train pool without the items that repeat a protected one, and those
        items' fields as the train split wrote them."""
        ...

    def close(self) -> None: ...


class LocalGate:
    """The gate in this process, over the protected task `task_of` returns (drawn on first use)."""

    def __init__(self, task_of: Callable[[], Task]) -> None:
        self._task_of = task_of

    def check(self, data: bytes, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return check_bytes(self._task_of(), data, rows, check=check_rows)

    def generate(self, family: str, params: dict[str, Any], seed: int, n: int) -> tuple[dict[str, Any], int, bytes]:
        """Run the generator on the run's sealed task (which never emits a sealed item itself) and
        leave out the rows the gate still fails, topping up from the same seeded stream.

        A generator can draw a row that only resembles a protected item (a templated question
        opening like a sealed one, with other numbers), which the gate's near-duplicate rule fails.
        The rows are the harness's generator's, not the agent's: leaving them out is not a refusal
        of the agent, and the dataset registered passes the gate like any other. Deterministic: the
        same seed and knobs give the same rows left out and the same data. A generator's own check
        of its knobs is ToolInvalid; a generator that keeps drawing failing rows is ToolFailed."""
        from ..runtime import InvalidParameterError, generate_rows, jsonl_bytes, parse_jsonl

        task = self._task_of()
        extra = 0
        try:
            for _ in range(MAX_TOP_UPS):
                generated, spec = generate_rows(task, family, params, seed, n + extra)
                data = jsonl_bytes(generated)
                rows = parse_jsonl(data, "dataset")
                if not extra and check_bytes(task, data, rows)["verdict"] != "failed":
                    return spec, 0, data  # the common case: the generator's rows as it drew them
                bad = failing_rows(task, rows)
                if not bad and not extra:
                    return spec, 0, data
                keep = [r for i, r in enumerate(rows) if i not in bad][:n]
                if len(keep) == n:
                    return spec, len(bad), jsonl_bytes(keep)
                extra = 2 * extra + 2 * len(bad) + 8
        except (InvalidParameterError, ValueError) as exc:  # a generator's own check on its knobs
            raise ToolInvalid(f"invalid generator parameters: {exc}") from None
        raise ToolFailed(
            f"generator {family} keeps drawing rows that overlap protected items; try another seed or other knobs"
        )

    def traces(self, digest: str, data: bytes) -> list[tuple[Subcategory, str]]:
        from ._audit_checks import row_traces

        return row_traces(self._task_of(), digest, data)

    def pinned(self, splits: dict[str, int]) -> Pinned:
        from ..tasks import items_digest

        task = self._task_of()
        return {
            split: (
                items_digest(task, split),
                [item.sample_id for item in task.eval_items(split)][:n],  # type: ignore[arg-type]  # the contract's splits are the task's
            )
            for split, n in splits.items()
        }

    def pool(self) -> tuple[list[PoolItem], dict[str, dict[str, Any]]]:
        from ..tasks import raw_fields

        task: Any = self._task_of()  # a task directory's
        return list(task.train_pool()), raw_fields(task)

    def close(self) -> None:
        pass


class GateProcess:
    """The gate in an evaluator process of its own (`python -m rsi_master.expos._gate_server`),
    started on first use with the seal key and the task's reference on its standard input, then
    asked one question per line. One per session; `close` ends it (so does this process's end:
    the server exits when its input closes)."""

    def __init__(self, seal_wire: Callable[[], dict[str, Any]], task_ref: dict[str, Any]) -> None:
        self._seal_wire = seal_wire
        self._task_ref = task_ref
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._reports: dict[str, Any] = {}

    def _ask(self, request: dict[str, Any]) -> Any:
        with self._lock:
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(json.dumps(request).encode() + b"\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
            except OSError as exc:
                line, why = b"", f"{type(exc).__name__}: {exc}"
            else:
                why = f"exit status {proc.poll()}"
            if not line:
                self._stop()
                raise GateError(f"the run's gate process ended without an answer ({why})")
        reply = json.loads(line)
        error = reply.get("error")
        if error is not None:
            kind, message = error.get("kind"), str(error.get("message"))
            if kind == "invalid":
                raise ToolInvalid(message)
            if kind == "failed":
                raise ToolFailed(message)
            raise GateError(f"the run's gate could not answer: {message}")
        return reply["result"]

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        first = json.dumps({"seal_key": self._seal_wire(), "task": self._task_ref}).encode() + b"\n"
        proc = subprocess.Popen(
            [sys.executable, "-E", "-s", "-B", "-m", "rsi_master.expos._gate_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(first)
            proc.stdin.flush()
            ready = json.loads(proc.stdout.readline() or b"{}")
        except (OSError, ValueError) as exc:
            proc.kill()
            proc.wait()
            raise GateError(f"the run's gate process did not start: {type(exc).__name__}: {exc}") from None
        if "error" in ready or not ready.get("ready"):
            proc.kill()
            proc.wait()
            raise GateError(
                f"the run's gate process did not start: {ready.get('error', {}).get('message', 'no answer')}"
            )
        self._proc = proc
        return proc

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def check(self, data: bytes, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        # The report depends on the bytes alone: ask once per digest (an audit re-checks every dataset).
        key = hashlib.sha256(data).hexdigest()
        hit = self._reports.get(key)
        if hit is None:
            hit = self._ask({"op": "check", "data": _b64(data)})
            self._reports[key] = hit
        return json.loads(json.dumps(hit))  # a copy: the caller may edit its report

    def generate(self, family: str, params: dict[str, Any], seed: int, n: int) -> tuple[dict[str, Any], int, bytes]:
        got = self._ask({"op": "generate", "family": family, "params": params, "seed": seed, "n": n})
        return got["spec"], int(got["left_out"]), base64.b64decode(got["data"])

    def traces(self, digest: str, data: bytes) -> list[tuple[Subcategory, str]]:
        from ._taxonomy import Subcategory

        got = self._ask({"op": "traces", "digest": digest, "data": _b64(data)})
        return [(Subcategory(sub), str(text)) for sub, text in got]

    def pinned(self, splits: dict[str, int]) -> Pinned:
        got = self._ask({"op": "pinned", "splits": splits})
        return {split: (str(d), [str(i) for i in ids]) for split, (d, ids) in got.items()}

    def pool(self) -> tuple[list[PoolItem], dict[str, dict[str, Any]]]:
        from ..tasks import PoolItem

        got = self._ask({"op": "pool"})
        return [PoolItem(str(i), dict(q), str(p), r) for i, q, p, r in got["items"]], dict(got["raw"])

    def close(self) -> None:
        with self._lock:
            self._stop()


def make_gate(
    contract: TaskContract,
    protected_task: Callable[[], Task],
    seal_wire: Callable[[], dict[str, Any]],
    sealed_task_dir: Callable[[], Path],
    *,
    in_process: bool,
) -> ProtectedGate:
    """The run's gate for this process: in it (`in_process`, the harness's own; or a simulated
    run, whose world is its evaluator), else an evaluator process of its own."""
    if in_process or contract.simulation is not None:
        return LocalGate(protected_task)
    source = contract.task_source
    ref = {"builtin": contract.task} if source is None else {"dir": str(sealed_task_dir()), "digest": source.digest}
    return GateProcess(seal_wire, ref)


def seal_problems(contract: TaskContract, gate: ProtectedGate) -> list[str]:
    """What is wrong with a run's seal, for verify and audit ([] when nothing): the key must load
    (secret present, matching the commitment) and draw exactly the items whose digests and sample
    ids the contract pinned at freeze. The gate draws them; this process compares digests."""
    from ..runtime import SealSecretError
    from ..tasks import SPLITS

    spec = contract.evaluator
    try:
        drawn = gate.pinned({split: len(spec.sample_ids[split]) for split in SPLITS})
    except (SealSecretError, GateError) as exc:
        return [str(exc)]
    return [
        f"the {split} items drawn with the run's seal key differ from the contract's"
        for split in SPLITS
        if drawn[split] != (spec.items_sha256.get(split), list(spec.sample_ids[split]))
    ]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
