"""Bounded ledger growth through the door, attacked from other processes: unauthenticated
calls summarised per peer and window, length bounds on every free-text input, and the
per-capability write quota, each seen by the audit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rsi_master.events import TEXT_MAX, typed
from rsi_master.events._payloads import DoorRefusals
from rsi_master.expos import Caller, Door, ExpOS, ToolInvalid
from rsi_master.expos._audit import audit
from rsi_master.expos._catalogue import load
from rsi_master.expos._contract import Budget
from rsi_master.expos._registry import TOOLS

MAIN = Caller("main", "main")

# The attacker: a process that connects to the door's socket and sends one request per token,
# as fast as it can, each on its own connection (as `expos` does).
ATTACK = r"""
import json, socket, sys
job = json.loads(sys.stdin.read())
path, tokens, tool, args = job["path"], job["tokens"], job["tool"], job["args"]
kinds = {}
for token in tokens:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(json.dumps({"capability": token, "tool": tool, "args": args}).encode() + b"\n")
    reply = json.loads(s.makefile("rb").readline())
    s.close()
    key = "ok" if reply["ok"] else reply["error"] + ": " + reply["message"][:200]
    kinds[key] = kinds.get(key, 0) + 1
print(json.dumps(kinds))
"""


def attack(sock: Path, tokens: list[str], tool: str = "quota.show", args: dict | None = None) -> dict[str, int]:
    res = subprocess.run(
        [sys.executable, "-c", ATTACK],
        input=json.dumps({"path": str(sock), "tokens": tokens, "tool": tool, "args": args or {}}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _bad_tokens(good: str, other_run: str, expired: str, n: int) -> list[str]:
    head, body, mac = good.split(".")
    forged = f"{head}.{body}.{'A' * len(mac)}"
    kinds = ["garbage", forged, expired, other_run, "", "rsicap1.!!.??"]
    return [kinds[i % len(kinds)] for i in range(n)]


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A run with a worker `w1`, its capability, an expired one, and a capability of another run."""
    with ExpOS.create(tmp_path / "other", "arithmetic", eval_limit=5) as o:
        other = o.issue("worker", "w1")
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=5, budget=Budget(write_quota_bytes=6000)) as x:
        x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "t"})
        good = x.issue("worker", "w1")
        expired = x.issue("worker", "w1", ttl_s=0.01)
    time.sleep(0.05)
    return tmp_path / "run", good, expired, other


def _refusals(run_dir: Path) -> list[DoorRefusals]:
    with ExpOS.open(run_dir, writable=False) as x:
        return [typed(e, DoorRefusals).payload for e in x.own_events("door.refusals")]


def test_300_unauthenticated_calls_leave_one_counted_event_per_peer_and_window(run, tmp_path):
    run_dir, good, expired, other = run
    with ExpOS.open(run_dir, writable=False) as x:
        before = x.run.ledger.size()
    door = Door(run_dir, socket_path=tmp_path / "d" / "d.sock").start()
    try:
        replies = attack(door.path, _bad_tokens(good, other, expired, 300))
        assert sum(replies.values()) == 300 and "ok" not in replies
        assert all(k.startswith("refused") for k in replies)
        assert attack(door.path, [good]) == {"ok": 1}  # the peer's valid capability is not throttled
    finally:
        door.close()
    with ExpOS.open(run_dir, writable=False) as x:
        added = [e.kind for e in x.events() if e.seq >= before]
        assert not x.events("guard.blocked")  # no event per refused call
    assert sorted(added) == ["door.refusals", "tool.call"]  # one window, one honest call
    (w,) = _refusals(run_dir)
    assert (w.refusal, w.peer_uid, w.count) == ("unauthenticated", os.getuid(), 300)
    assert sum(w.reasons.values()) == 300 and len(w.reasons) <= 9
    assert any("expired" in r for r in w.reasons) and any("run" in r for r in w.reasons)
    with ExpOS.open(run_dir, writable=False) as x:
        assert audit(x).writes.refused_unauthenticated == 300


def test_refusal_windows_are_written_while_the_door_runs_and_stay_bounded(run, tmp_path):
    run_dir, good, expired, other = run
    door = Door(run_dir, socket_path=tmp_path / "d" / "d.sock", refusal_interval_s=0.5).start()
    try:
        t0 = time.monotonic()
        sent = 0
        while time.monotonic() - t0 < 1.6:
            sent += sum(attack(door.path, _bad_tokens(good, other, expired, 20)).values())
        elapsed = time.monotonic() - t0
        deadline = time.monotonic() + 5
        while not _refusals(run_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _refusals(run_dir), "a window that ran its interval is written without waiting for close"
    finally:
        door.close()
    windows = _refusals(run_dir)
    assert sum(w.count for w in windows) == sent
    assert len(windows) <= elapsed / 0.5 + 2  # one per window, whatever the call rate


def test_an_oversized_rationale_is_refused_with_a_clear_error_and_grows_nothing(run, tmp_path):
    run_dir, *_ = run
    with ExpOS.open(run_dir) as x:
        main = x.issue("main", "main")
        size = x.run.ledger.size()
    door = Door(run_dir, socket_path=tmp_path / "d" / "d.sock").start()
    try:
        big = {"action": "stop", "rationale": "x" * (3 * 1024 * 1024)}
        huge = attack(door.path, [main] * 3, "decision.record", big)
        ok = attack(door.path, [main], "decision.record", {"action": "stop", "rationale": "y" * TEXT_MAX})
    finally:
        door.close()
    ((msg, n),) = huge.items()
    assert (
        n == 3
        and msg == "invalid: invalid input for decision.record: rationale: String should have at most 4096 characters"
    )
    assert ok == {"ok": 1}
    with ExpOS.open(run_dir, writable=False) as x:
        grown = x.run.ledger.bytes_by_capability(since=size)
    assert sum(grown.values()) < 3 * 1000 + TEXT_MAX + 1000  # three short refusals and one 4 kB decision


def test_a_capability_at_its_write_quota_is_refused_counted_and_audited(run, tmp_path):
    run_dir, good, *_ = run
    door = Door(run_dir, socket_path=tmp_path / "d" / "d.sock").start()
    try:
        replies = attack(door.path, [good] * 120, "quota.show")
    finally:
        door.close()
    assert 0 < replies["ok"] < 120
    (refused,) = (k for k in replies if k != "ok")
    assert refused.startswith("refused: capability ") and "quota is 6000" in refused
    with ExpOS.open(run_dir, writable=False) as x:
        used = x.run.ledger.bytes_by_capability()
        report = audit(x)
    (cap,) = used
    assert 6000 <= used[cap] < 6000 + 1000  # one call's events past the quota, no more
    (w,) = _refusals(run_dir)
    assert (w.refusal, w.node, w.cap, w.count) == ("over_quota", "w1", cap, 120 - replies["ok"])
    writes = report.writes
    assert writes.quota_bytes == 6000 and writes.refused_over_quota == w.count
    assert [(c.cap, c.over_quota) for c in writes.by_capability] == [(cap, True)]


def _unbounded(schema: dict, defs: dict, path: str, seen: frozenset[str] = frozenset()) -> list[str]:
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return [] if name in seen else _unbounded(defs[name], defs, path, seen | {name})
    out = [p for k in ("anyOf", "oneOf", "allOf") for s in schema.get(k, []) for p in _unbounded(s, defs, path, seen)]
    kind = schema.get("type")
    if kind == "string" and not ({"maxLength", "pattern", "enum", "const"} & schema.keys()):
        out.append(path)
    if kind == "array":
        out += _unbounded(schema.get("items", {}), defs, path + "[]", seen)
        if "maxItems" not in schema:
            out.append(path + " (items)")
    if kind == "object":
        for p, s in schema.get("properties", {}).items():
            out += _unbounded(s, defs, f"{path}.{p}", seen)
        extra = schema.get("additionalProperties", True)
        if extra is not False and "maxBytes" not in schema:
            out.append(path + " (object)")
    return out


def test_every_text_field_of_every_tool_input_has_a_bound():
    load()
    found = []
    for name, tool in sorted(TOOLS.items()):
        schema = tool.input.model_json_schema()
        found += _unbounded(schema, schema.get("$defs", {}), name)
    # Rows are dataset content: stored as an artifact (the ledger records its digest), bounded
    # by the contract's rows per dataset and the door's request cap.
    assert found == ["data.register.rows[] (object)", "data.register.rows (items)"]


def test_free_form_objects_and_lists_are_bounded(tmp_path):
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=5) as x:
        with pytest.raises(ToolInvalid, match=r"detail: Value error, object of \d+ bytes as JSON; at most 16384"):
            x.call(MAIN, "decision.record", {"action": "stop", "rationale": "r", "detail": {"k": "v" * 20_000}})
        with pytest.raises(ToolInvalid, match="scope: List should have at most 256 items"):
            x.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": ["w"] * 300})
