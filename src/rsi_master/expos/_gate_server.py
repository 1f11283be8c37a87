"""The gate's evaluator process: `python -E -s -B -m rsi_master.expos._gate_server`.

Its first input line holds the seal key and the run's task (`{"seal_key": WIRE, "task": {"builtin":
NAME} | {"dir": PATH, "digest": DIGEST}}`); it draws the protected items from them, answers
`{"ready": true}`, then one answer per question line (`GateProcess` asks): a dataset's
contamination report, rows generated clear of the items, traces, the pinned splits' digests. It
answers with verdicts, rows that pass and digests, never an item, and exits when its input closes.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

from ..errors import RsiMasterError
from ..tasks import SealKey, get_task, load_task_dir
from ._errors import ToolFailed, ToolInvalid
from ._gate import LocalGate


def _task(ref: dict[str, Any], seal_key: SealKey) -> Any:
    if "builtin" in ref:
        return get_task(str(ref["builtin"]), seal_key=seal_key)
    # A task directory's items are its files' own (the run's sealed copy, checked against the contract).
    return load_task_dir(str(ref["dir"]), expected_digest=str(ref["digest"]))


def _answer(gate: LocalGate, q: dict[str, Any]) -> Any:
    op = q.get("op")
    if op == "check":
        return gate.check(base64.b64decode(q["data"]))
    if op == "generate":
        spec, left_out, data = gate.generate(str(q["family"]), dict(q["params"]), int(q["seed"]), int(q["n"]))
        return {"spec": spec, "left_out": left_out, "data": base64.b64encode(data).decode("ascii")}
    if op == "traces":
        return [[sub.value, text] for sub, text in gate.traces(str(q["digest"]), base64.b64decode(q["data"]))]
    if op == "pool":
        items, raw = gate.pool()
        return {"items": [[p.id, p.question, p.prompt, p.reference] for p in items], "raw": raw}
    if op == "pinned":
        return {
            split: [d, ids] for split, (d, ids) in gate.pinned({str(k): int(v) for k, v in q["splits"].items()}).items()
        }
    raise ValueError(f"unknown question {op!r}")


def _send(out: Any, reply: dict[str, Any]) -> None:
    out.write(json.dumps(reply, default=str).encode() + b"\n")
    out.flush()


def main() -> int:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # Nothing but answers on standard output: a library that prints writes to standard error.
    sys.stdout = sys.stderr
    try:
        first = json.loads(stdin.readline() or b"{}")
        seal_key = SealKey.from_wire(first["seal_key"])
        task = _task(first["task"], seal_key)
    except (KeyError, TypeError, ValueError, RsiMasterError) as exc:
        _send(stdout, {"error": {"kind": "start", "message": f"{type(exc).__name__}: {exc}"}})
        return 2
    gate = LocalGate(lambda: task)
    _send(stdout, {"ready": True})
    for line in stdin:
        try:
            reply: dict[str, Any] = {"result": _answer(gate, json.loads(line))}
        except ToolInvalid as exc:
            reply = {"error": {"kind": "invalid", "message": str(exc)}}
        except ToolFailed as exc:
            reply = {"error": {"kind": "failed", "message": str(exc)}}
        except Exception as exc:  # any other failure is this question's, said in one line
            reply = {"error": {"kind": "other", "message": f"{type(exc).__name__}: {exc}"}}
        _send(stdout, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
