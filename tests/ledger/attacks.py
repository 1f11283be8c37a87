"""Attacks on a run's ledger, each made the way an agent with a shell would: from another
process, with file access to the run directory and no access to the operator key
directory (the subprocess gets an empty key directory of its own)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

# Drops the append-only triggers, runs `edit(conn)`, puts the triggers back verbatim:
# the schema then equals the expected one, so only the signatures can tell.
_PRELUDE = textwrap.dedent("""
    import json, sqlite3, sys
    from rsi_master.ledger._event import EventDraft, parse_body, seal

    def with_triggers_down(conn, edit):
        saved = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
        for name, _ in saved:
            conn.execute(f"DROP TRIGGER {name}")
        edit(conn)
        for _, sql in saved:
            conn.execute(sql)

    def resealed(row_body, seq, prev, payload=None):
        body = parse_body(row_body)
        draft = EventDraft.model_validate({k: body[k] for k in ("kind", "actor", "payload", "artifacts")}
                                          | ({"payload": payload} if payload is not None else {}))
        return seal(draft, seq=seq, ts=body["ts"], prev_hash=prev)

    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
""")

FORGE_TAIL = _PRELUDE + textwrap.dedent("""
    # Append events with a correctly recomputed chain: the triggers let them in.
    n = int(sys.argv[2])
    for _ in range(n):
        seq, prev = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        draft = EventDraft.model_validate({"kind": "eval.record", "actor": {"role": "harness", "id": "orchestra"},
                                           "payload": {"score": 1.0, "forged": True}})
        event, body = seal(draft, seq=seq + 1, ts="2030-01-01T00:00:00.000000Z", prev_hash=prev)
        conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (seq + 1, prev, event.hash, event.kind, "harness", "orchestra", event.ts, body))
""")

REWRITE = _PRELUDE + textwrap.dedent("""
    # Change one event's payload and recompute the hash chain from it to the end.
    target = int(sys.argv[2])
    rows = conn.execute("SELECT seq, prev_hash, body FROM events WHERE seq >= ? ORDER BY seq", (target,)).fetchall()
    def edit(conn):
        prev = rows[0][1]
        for seq, _, body in rows:
            event, raw = resealed(body, seq, prev, {"rewritten": True} if seq == target else None)
            conn.execute("UPDATE events SET prev_hash = ?, hash = ?, body = ? WHERE seq = ?",
                         ("x" * 64 + str(seq), event.hash, raw, seq))  # UNIQUE prev_hash: two passes
            prev = event.hash
        prev = rows[0][1]
        for seq, _, _ in rows:
            h = conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()[0]
            conn.execute("UPDATE events SET prev_hash = ? WHERE seq = ?", (prev, seq))
            prev = h
    with_triggers_down(conn, edit)
""")

DROP_SIGNATURES = _PRELUDE + textwrap.dedent("""
    # Remove every signed checkpoint and the seal.
    def edit(conn):
        conn.execute("DELETE FROM checkpoints")
        conn.execute("DELETE FROM seal")
    with_triggers_down(conn, edit)
""")

DROP_LAST = _PRELUDE + textwrap.dedent("""
    # Delete the last event: a rollback under a live writer (the seal cannot be re-signed).
    def edit(conn):
        conn.execute("DELETE FROM events WHERE seq = (SELECT max(seq) FROM events)")
    with_triggers_down(conn, edit)
""")

SET_META = _PRELUDE + textwrap.dedent("""
    # Set meta[key] = value, e.g. the run id, or the schema version (a downgrade).
    def edit(conn):
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (sys.argv[3], sys.argv[2]))
    with_triggers_down(conn, edit)
""")

COPY = "import shutil, sys\nshutil.copy(sys.argv[1], sys.argv[2])\n"

# The agent's own run, with its own key, then its ledger and key moved over the real ones.
REPLACE_WITH_OWN_KEY = textwrap.dedent("""
    import os, shutil, sys
    from pathlib import Path
    from rsi_master.rundir import RunDir
    target, run_id, scratch = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    with RunDir.create(scratch / "fake", key_dir=scratch / "agent-keys", run_id=run_id) as run:
        for i in range(3):
            run.record({"kind": "eval.record", "actor": {"role": "harness", "id": "orchestra"},
                        "payload": {"score": 1.0, "i": i}})
    for name in ("ledger.db-wal", "ledger.db-shm"):
        (target / name).unlink(missing_ok=True)
    for name in ("ledger.db", "ledger.pub"):
        os.replace(scratch / "fake" / name, target / name)
""")


def as_agent(script: str, *args: object, scratch: Path) -> None:
    """Run `script` in another process, with an empty key directory of its own."""
    keys = scratch / "agent-keys"
    keys.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(keys)}
    out = subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]


def drop_wal(run_dir: Path) -> None:
    for name in ("ledger.db-wal", "ledger.db-shm"):
        (run_dir / name).unlink(missing_ok=True)


# Overwrite a file in place (same inode) with another file's bytes, or with its own bytes with one
# hex digit of the signature changed (same size), then set its times back: only the content differs.
EDIT_IN_PLACE = textwrap.dedent("""
    import os, sys
    path, source = sys.argv[1], sys.argv[2]
    st = os.stat(path)
    data = open(path, "rb").read()
    if source == "flip-signature":
        i = data.index(b'"signature": "') + len(b'"signature": "')
        data = data[:i] + (b"0" if data[i:i + 1] != b"0" else b"1") + data[i + 1:]
    else:
        data = open(source, "rb").read()
    with open(path, "r+b") as fh:
        fh.write(data)
        fh.truncate()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
""")
