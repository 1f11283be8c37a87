"""No event payload is read as a dict outside the schema package (rsi_master.events).

Readers go through `typed(event)` and read attributes; the ledger (the envelope below the
schema) is the one other place a payload is a dict, and it never reads a field of one."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "rsi_master"
ALLOWED = (SRC / "events", SRC / "ledger")

# Each pattern is one way of reading a payload as a dict (or of passing one on to be read so).
PATTERNS = {
    "subscripted payload": re.compile(r"\.payload\s*\["),
    "payload.get": re.compile(r"\bpayload\.get\("),
    "subscripted payload variable": re.compile(r"\bpayload\s*\[\s*[\"']"),
    "payload key": re.compile(r"\[\s*[\"']payload[\"']\s*\]|\.get\(\s*[\"']payload[\"']"),
    "payload copied to a dict": re.compile(r"\bdict\(\s*[\w.\[\]]+\.payload\s*\)|\*\*\s*[\w.\[\]]+\.payload\b"),
    "raw payload bound to a name": re.compile(r"=\s*[\w.\[\]]+\.payload\s*(#.*)?$"),
    "payload typed as a dict": re.compile(r"\bpayload\s*:\s*dict\b"),
}


def dict_payload_reads(root: Path, allowed: tuple[Path, ...] = ()) -> list[str]:
    """`path:line: what: code` for every line under `root` that reads a payload as a dict."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        if any(path.is_relative_to(a) for a in allowed):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
            for what, pattern in PATTERNS.items():
                if pattern.search(code):
                    hits.append(f"{path.relative_to(root)}:{n}: {what}: {line.strip()}")
    return hits


def test_no_payload_is_read_as_a_dict_outside_the_schema_package():
    hits = dict_payload_reads(SRC, ALLOWED)
    assert not hits, "payloads read as dicts (use rsi_master.events.typed):\n" + "\n".join(hits)


def test_the_check_finds_each_kind_of_planted_read(tmp_path):
    planted = {
        "a.py": 'score = event.payload["score"]\n',
        "b.py": "split = e.payload.get('split')\n",
        "c.py": "p = e.payload\n",
        "d.py": "rows = [r['payload'] for r in rows]\n",
        "e.py": "out = {**ev.payload, 'seq': ev.seq}\n",
        "f.py": "class S:\n    payload: dict[str, Any]\n",
        "g.py": "payload = {}\nx = payload['k']\n",
        "h.py": "cfg = dict(starts[0].payload)\n",
    }
    for name, code in planted.items():
        (tmp_path / name).write_text(code)
    (tmp_path / "ok.py").write_text("p = typed(e).payload.score\nlog(json.dumps(e.payload))  # whole, for people\n")
    hits = dict_payload_reads(tmp_path)
    assert sorted({h.split(":", 1)[0] for h in hits}) == sorted(planted)
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "x.py").write_text('v = e.payload["k"]\n')
    assert len(dict_payload_reads(tmp_path, (tmp_path / "events",))) == len(hits)
