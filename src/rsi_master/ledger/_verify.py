"""Independent re-computation of everything a ledger claims.

Reads the database with plain SQL rather than through `Ledger`, so a bug in the writer
cannot hide itself from the verifier.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import sys

from pydantic import ValidationError

from ._checkpoint import Checkpoint, SignedCheckpoint, event_leaf
from ._event import GENESIS_HASH, SealedBody
from ._keys import load_public_key
from ._memo import LedgerMemo, Refs
from ._merkle import Frontier, consistency_proof, verify_consistency
from ._merkle import root as merkle_root
from ._pg import PgConnection
from ._report import LedgerReport
from ._schema import SCHEMA_VERSION, schema_for
from ._signed import check_seal, check_witness, checkpoint_problems

__all__ = ["verify_ledger"]


@functools.lru_cache(maxsize=4)
def _expected_schema(version: str) -> frozenset[tuple[str, str, str]]:
    mem = sqlite3.connect(":memory:")
    for stmt in schema_for(version):
        mem.execute(stmt)
    rows = mem.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
    mem.close()
    return frozenset(rows)


_COLUMNS = "SELECT seq, prev_hash, hash, kind, actor_role, actor_id, ts FROM events"
_ROWS = "SELECT seq, prev_hash, hash, kind, actor_role, actor_id, ts, body FROM events"


def verify_ledger(
    conn: sqlite3.Connection | PgConnection,
    public_pem: bytes,
    run_id: str,
    witness: SignedCheckpoint | None = None,
    *,
    memo: LedgerMemo | None = None,
) -> LedgerReport:
    """Check everything the ledger claims, from one read snapshot of the database. With `memo`
    (what an earlier call in this process established; updated in place), rows and checkpoints
    byte-identical to ones already checked are not parsed or signature-checked again (`_memo`)."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        return _verify(conn, public_pem, run_id, witness, memo)
    finally:
        if own:
            conn.execute("COMMIT")


def _verify(
    conn: sqlite3.Connection | PgConnection,
    public_pem: bytes,
    run_id: str,
    witness: SignedCheckpoint | None,
    memo: LedgerMemo | None,
) -> LedgerReport:
    report = LedgerReport()
    public = load_public_key(public_pem)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        schema = str(row[0]) if row else SCHEMA_VERSION
    except sqlite3.DatabaseError:
        schema = SCHEMA_VERSION
    if schema not in ("1", "2"):
        report.add("ledger", f"schema version {schema!r} is not one this verifier knows; checked as {SCHEMA_VERSION}")
        schema = SCHEMA_VERSION
    version = report.version = int(schema)
    key = (public_pem, run_id, version)
    old = memo if memo is not None and memo.key == key else LedgerMemo()

    if isinstance(conn, PgConnection):
        schema_found = list(conn.schema_problems())
        for where, what in schema_found:
            report.add(where, what)
        intact = not schema_found
    else:
        actual = set(conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall())
        expected = _expected_schema(schema)
        for typ, name, _ in sorted(expected - actual):
            report.add(f"schema {typ} {name}", "missing or altered (append-only protection removed?)")
        for typ, name, _ in sorted(actual - expected):
            report.add(f"schema {typ} {name}", "not part of the ledger schema")
        intact = actual == expected

    # -- the hash chain ------------------------------------------------------------------
    checkpoint_rows = conn.execute(
        "SELECT tree_size, root, body, signature FROM checkpoints ORDER BY tree_size"
    ).fetchall()
    wanted_sizes = {r[0] for r in checkpoint_rows}
    seal_row = None
    if version >= 2:
        try:
            seal_row = conn.execute("SELECT tree_size, body, signature FROM seal").fetchone()
        except sqlite3.DatabaseError:
            seal_row = None
        if seal_row is not None:
            wanted_sizes.add(seal_row[0])
    if witness is not None:
        wanted_sizes.add(witness.checkpoint.tree_size)
    # With the schema intact, seq is an integer key: `seq < n` and `seq >= n` split the rows.
    new, derived_refs, prefix = _walk_events(conn, report, old, version, wanted_sizes, intact)
    leaves, frontier, roots = new.leaves, new.frontier, new.roots

    stored_refs = set(conn.execute("SELECT seq, digest, role, name FROM artifact_refs").fetchall())
    for seq, digest, _, _ in sorted(stored_refs - derived_refs):
        report.add(f"artifact index (event {seq})", f"row for {digest[:12]} not backed by the event body")
    for seq, digest, _, _ in sorted(derived_refs - stored_refs):
        report.add(f"artifact index (event {seq})", f"reference to {digest[:12]} missing from the index")

    # -- checkpoints ---------------------------------------------------------------------
    # Subtree hashes over the unchanged prefix are the memo's.
    cache = {span: h for span, h in old.subtrees.items() if span[1] <= prefix}
    checked: dict[tuple[object, ...], Checkpoint] = {}
    consistent: set[tuple[int, str, int, str]] = set()
    previous: Checkpoint | None = None
    for size, root_col, body, signature in checkpoint_rows:
        where = f"checkpoint {size}"
        report.checkpoints += 1
        if isinstance(size, int):
            report.last_checkpoint = max(report.last_checkpoint, size)
        row = (size, root_col, body, signature)
        known = old.checkpoints.get(row)
        if known is not None:
            cp = checked[row] = known  # the same bytes passed the checks below under this key before
        else:
            try:
                cp = Checkpoint.model_validate_json(body)
            except (ValueError, ValidationError):
                report.add(where, "body is not a valid checkpoint")
                continue
            own = checkpoint_problems(cp, size, root_col, body, signature, public, run_id, version)
            for what in own:
                report.add(where, what)
            if not own:
                checked[row] = cp
        if cp.tree_size > report.events:
            report.add(where, f"covers {cp.tree_size} events but the ledger has {report.events} (truncated)")
        elif roots.get(cp.tree_size) != cp.root:
            report.add(where, "Merkle root differs from the events stored (history rewritten)")
        elif previous is not None:
            pair = (previous.tree_size, previous.root, cp.tree_size, cp.root)
            # Both roots reached here equal the stored leaves' (checked just above for cp), so
            # a pair proven before is proven over the same leaves.
            if pair in old.consistent:
                consistent.add(pair)
            else:
                proof = consistency_proof(leaves, previous.tree_size, cp.tree_size, cache)
                if verify_consistency(
                    previous.tree_size, cp.tree_size, bytes.fromhex(previous.root), bytes.fromhex(cp.root), proof
                ):
                    consistent.add(pair)
                else:
                    report.add(where, f"not consistent with checkpoint {previous.tree_size}")
        previous = cp

    if not checkpoint_rows:
        report.add("ledger", "no signed checkpoint: nothing in it was signed by the run's key")

    # -- the seal: the signed head of the whole ledger, replaced by every write -------------
    if version >= 2:
        check_seal(report, seal_row, public, run_id, version, roots)

    # -- an exported checkpoint kept outside the run directory -----------------------------
    if witness is not None:
        check_witness(report, witness, public, run_id, version, roots, leaves, frontier, cache)
    if memo is not None:
        memo.key, memo.rows, memo.clean, memo.leaves, memo.frontier = key, new.rows, new.clean, leaves, frontier
        memo.ok, memo.ok_refs, memo.ok_referenced = new.ok, new.ok_refs, new.ok_referenced
        memo.roots = {size: r for size, r in old.roots.items() if size <= prefix} | roots
        memo.checkpoints, memo.consistent, memo.subtrees = checked, consistent, cache
    return report


def _walk_events(
    conn: sqlite3.Connection | PgConnection,
    report: LedgerReport,
    old: LedgerMemo,
    version: int,
    wanted_sizes: set[object],
    schema_intact: bool,
) -> tuple[LedgerMemo, set[tuple[int, str, str, str]], int]:
    """Check every event row: its body against its hash and columns, the chain, the seq
    order. Returns what it established (leaves, tree, roots at `wanted_sizes`; the memo's
    fields), the artifact references the bodies make, and how many leading event hashes
    equal `old`'s (whose subtree hashes stay valid)."""
    new = LedgerMemo()
    leaves, seen, clean, roots = new.leaves, new.rows, new.clean, new.roots
    derived_refs: set[tuple[int, str, str, str]] = set()
    prev = GENESIS_HASH
    start = 0
    if schema_intact and old.ok:
        # The memo's problem-free leading rows, unchanged? Compared in bulk: their columns as
        # stored, then every body's SHA-256 against those columns (the same hash as checked
        # before: the same bytes). Any difference sends every row through the full check.
        k = old.ok
        cols = conn.execute(f"{_COLUMNS} WHERE seq < ? ORDER BY seq", (k,)).fetchall()
        if cols == old.rows[:k]:
            sha = hashlib.sha256
            bodies = conn.execute("SELECT body FROM events WHERE seq < ? ORDER BY seq", (k,))
            hashes = [sha(b if isinstance(b, bytes) else str(b).encode()).hexdigest() for (b,) in bodies]
            if hashes == [c[2] for c in cols]:
                start = k
                leaves.extend(old.leaves[:k])
                seen.extend(old.rows[:k])  # equal to `cols`, and lighter (strings shared)
                clean.extend(old.clean[:k])
                derived_refs |= old.ok_refs
                report.referenced.update(old.ok_referenced)
                prev = cols[-1][2]
    known_rows, known_clean, known_leaves = old.rows, old.clean, old.leaves
    known = len(known_rows)
    # Leading rows whose hashes equal the memo's: their leaves and tree are the memo's.
    prefix = start
    frontier: Frontier | None = None
    ok = start
    expected_seq = start
    rows = (
        conn.execute(f"{_ROWS} WHERE seq >= ? ORDER BY seq", (start,))
        if start
        else conn.execute(f"{_ROWS} ORDER BY seq")
    )
    for row in rows:
        seq, prev_hash, hash_, kind, role, actor_id, ts, body = row
        # Kept by the memo: repeated strings shared (equal values, same types).
        columns = (
            seq,
            prev if type(prev) is str and prev_hash == prev else prev_hash,
            hash_,
            sys.intern(kind) if type(kind) is str else kind,
            sys.intern(role) if type(role) is str else role,
            sys.intern(actor_id) if type(actor_id) is str else actor_id,
            ts,
        )
        i = len(leaves)
        fine = seq == expected_seq
        if not fine:
            report.add(f"event {expected_seq}", f"missing (next stored event is {seq})")
            expected_seq = seq
        if not isinstance(body, bytes):
            body = str(body).encode()
        hashed = hashlib.sha256(body).hexdigest() == hash_
        if not hashed:
            report.add(f"event {seq}", "hash does not match the event body (body or hash edited)")
        refs: Refs | None = None
        if hashed and i < known and known_rows[i] == columns and known_clean[i] is not None:
            # The same body (it hashes to the remembered hash) under the same columns: checked clean before.
            refs = known_clean[i]
            clean.append(refs)
        else:
            where = f"event {seq}"
            try:
                # Parsed and validated by pydantic-core in one pass (the hot loop of verify).
                event = SealedBody.model_validate_json(body)
            except (ValueError, ValidationError):
                report.add(where, "body is not a valid event")
                event = None
            matched = False
            if event is not None:
                mismatched = [
                    name
                    for name, got, want in (
                        ("seq", event.seq, seq),
                        ("prev_hash", event.prev_hash, prev_hash),
                        ("kind", event.kind, kind),
                        ("actor role", event.actor.role, role),
                        ("actor id", event.actor.id, actor_id),
                        ("ts", event.ts, ts),
                    )
                    if got != want
                ]
                if mismatched:
                    report.add(where, f"indexed columns differ from the signed body: {', '.join(mismatched)}")
                refs = tuple((ref.digest, ref.role, ref.name) for ref in event.artifacts)
                matched = not mismatched
            clean.append(refs if hashed and matched else None)
        if prev_hash != prev:
            report.add(f"event {seq}", "previous hash does not match the event before it (chain broken)")
            fine = False
        if ok == i and fine and clean[i] is not None:
            ok += 1
        elif ok == i:  # the first row with a problem ends the problem-free run
            new.ok_refs, new.ok_referenced = set(derived_refs), dict(report.referenced)
        for digest, ref_role, name in refs or ():
            derived_refs.add((seq, digest, ref_role, name))
            report.referenced.setdefault(digest, seq)
        prev = hash_
        if frontier is None and hashed and i == prefix and i < known and known_rows[i][2] == hash_:
            prefix += 1
            leaf = known_leaves[i]
        else:
            if frontier is None:
                frontier = old.frontier_at(prefix, leaves)
            try:
                leaf = event_leaf(bytes.fromhex(hash_), version)
            except (ValueError, TypeError):
                leaf = hashlib.sha256(str(hash_).encode()).digest()
            frontier.append(leaf)
            if frontier.size in wanted_sizes:
                roots[frontier.size] = frontier.root().hex()
        leaves.append(leaf)
        seen.append(columns)
        expected_seq += 1
    if ok == len(leaves):
        new.ok_refs, new.ok_referenced = derived_refs, dict(report.referenced)
    new.ok = ok
    new.frontier = frontier if frontier is not None else old.frontier_at(prefix, leaves)
    for size in wanted_sizes:
        if isinstance(size, int) and 0 <= size <= prefix:
            roots[size] = old.roots.get(size) or merkle_root(leaves[:size]).hex()
    report.events = len(leaves)
    report.head = prev
    report.root = new.frontier.root().hex()
    return new, derived_refs, prefix
