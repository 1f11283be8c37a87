"""Independent re-computation of everything a ledger claims.

Reads the database with plain SQL rather than through `Ledger`, so a bug in the writer
cannot hide itself from the verifier.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from dataclasses import dataclass, field

from pydantic import ValidationError

from ._checkpoint import Checkpoint, SignedCheckpoint, event_leaf
from ._event import GENESIS_HASH, SealedBody
from ._keys import load_public_key, verify_signature
from ._merkle import Frontier, consistency_proof, verify_consistency
from ._schema import SCHEMA_VERSION, schema_for

__all__ = ["LedgerReport", "Problem", "verify_ledger"]

_MAX_PROBLEMS = 50


@dataclass(frozen=True)
class Problem:
    """One thing that does not hold. `where` names the event, checkpoint or artifact."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass
class LedgerReport:
    events: int = 0
    checkpoints: int = 0
    head: str = GENESIS_HASH
    root: str = ""
    witness_size: int | None = None
    last_checkpoint: int = 0
    version: int = int(SCHEMA_VERSION)
    sealed: int | None = None  # events the seal (signed head) covers; None: no valid seal
    problems: list[Problem] = field(default_factory=list)
    referenced: dict[str, int] = field(default_factory=dict)  # digest -> first seq referencing it

    def add(self, where: str, what: str) -> None:
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(Problem(where, what))

    @property
    def ok(self) -> bool:
        return not self.problems


def _canonical_hex(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{128}", value) is not None


def _expected_schema(version: str) -> set[tuple[str, str, str]]:
    mem = sqlite3.connect(":memory:")
    for stmt in schema_for(version):
        mem.execute(stmt)
    rows = mem.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
    mem.close()
    return set(rows)


def verify_ledger(
    conn: sqlite3.Connection, public_pem: bytes, run_id: str, witness: SignedCheckpoint | None = None
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

    actual = set(conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall())
    expected = _expected_schema(schema)
    for typ, name, _ in sorted(expected - actual):
        report.add(f"schema {typ} {name}", "missing or altered (append-only protection removed?)")
    for typ, name, _ in sorted(actual - expected):
        report.add(f"schema {typ} {name}", "not part of the ledger schema")

    # -- the hash chain ------------------------------------------------------------------
    leaves: list[bytes] = []
    frontier = Frontier()
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
    roots: dict[int, str] = {0: frontier.root().hex()} if 0 in wanted_sizes else {}
    derived_refs: set[tuple[int, str, str, str]] = set()
    prev = GENESIS_HASH
    expected_seq = 0
    rows = conn.execute("SELECT seq, prev_hash, hash, kind, actor_role, actor_id, ts, body FROM events ORDER BY seq")
    for seq, prev_hash, hash_, kind, role, actor_id, ts, body in rows:
        where = f"event {seq}"
        if seq != expected_seq:
            report.add(f"event {expected_seq}", f"missing (next stored event is {seq})")
            expected_seq = seq
        if not isinstance(body, bytes):
            body = str(body).encode()
        if hashlib.sha256(body).hexdigest() != hash_:
            report.add(where, "hash does not match the event body (body or hash edited)")
        try:
            # Parsed and validated by pydantic-core in one pass (the hot loop of verify).
            event = SealedBody.model_validate_json(body)
        except (ValueError, ValidationError):
            report.add(where, "body is not a valid event")
            event = None
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
            for ref in event.artifacts:
                derived_refs.add((seq, ref.digest, ref.role, ref.name))
                report.referenced.setdefault(ref.digest, seq)
        if prev_hash != prev:
            report.add(where, "previous hash does not match the event before it (chain broken)")
        prev = hash_
        try:
            leaf = event_leaf(bytes.fromhex(hash_), version)
        except (ValueError, TypeError):
            leaf = hashlib.sha256(str(hash_).encode()).digest()
        leaves.append(leaf)
        frontier.append(leaf)
        if frontier.size in wanted_sizes:
            roots[frontier.size] = frontier.root().hex()
        expected_seq += 1
    report.events = len(leaves)
    report.head = prev
    report.root = frontier.root().hex()

    stored_refs = set(conn.execute("SELECT seq, digest, role, name FROM artifact_refs").fetchall())
    for seq, digest, _, _ in sorted(stored_refs - derived_refs):
        report.add(f"artifact index (event {seq})", f"row for {digest[:12]} not backed by the event body")
    for seq, digest, _, _ in sorted(derived_refs - stored_refs):
        report.add(f"artifact index (event {seq})", f"reference to {digest[:12]} missing from the index")

    # -- checkpoints ---------------------------------------------------------------------
    cache: dict[tuple[int, int], bytes] = {}
    previous: Checkpoint | None = None
    for size, root_col, body, signature in checkpoint_rows:
        where = f"checkpoint {size}"
        report.checkpoints += 1
        if isinstance(size, int):
            report.last_checkpoint = max(report.last_checkpoint, size)
        try:
            cp = Checkpoint.model_validate_json(body)
        except (ValueError, ValidationError):
            report.add(where, "body is not a valid checkpoint")
            continue
        if not verify_signature(public, str(signature), body if isinstance(body, bytes) else str(body).encode()):
            report.add(where, "signature does not verify under the run's public key")
        elif not _canonical_hex(signature):  # "AB" decodes as "ab" does: the stored text was edited
            report.add(where, "signature is not in canonical form (lower-case hex)")
        if cp.message() != body:
            report.add(where, "body is not in canonical form")
        if cp.tree_size != size or cp.root != root_col:
            report.add(where, "indexed columns differ from the signed body")
        if cp.run_id != run_id:
            report.add(where, f"signed for run {cp.run_id}, not {run_id}")
        if cp.version != version:
            report.add(where, f"a version-{cp.version} checkpoint in a version-{version} ledger")
        if cp.tree_size > report.events:
            report.add(where, f"covers {cp.tree_size} events but the ledger has {report.events} (truncated)")
        elif roots.get(cp.tree_size) != cp.root:
            report.add(where, "Merkle root differs from the events stored (history rewritten)")
        elif previous is not None:
            proof = consistency_proof(leaves, previous.tree_size, cp.tree_size, cache)
            if not verify_consistency(
                previous.tree_size, cp.tree_size, bytes.fromhex(previous.root), bytes.fromhex(cp.root), proof
            ):
                report.add(where, f"not consistent with checkpoint {previous.tree_size}")
        previous = cp

    if not checkpoint_rows:
        report.add("ledger", "no signed checkpoint: nothing in it was signed by the run's key")

    # -- the seal: the signed head of the whole ledger, replaced by every write -------------
    if version >= 2:
        _check_seal(report, seal_row, public, run_id, version, roots)

    # -- an exported checkpoint kept outside the run directory -----------------------------
    if witness is not None:
        w = witness.checkpoint
        report.witness_size = w.tree_size
        where = f"exported checkpoint {w.tree_size}"
        if not verify_signature(public, witness.signature, w.message()):
            report.add(where, "not signed by this run's key (was the run's public key replaced?)")
        elif w.version != version:
            report.add(where, f"a version-{w.version} checkpoint for a version-{version} ledger")
        elif w.run_id != run_id:
            report.add(where, f"belongs to run {w.run_id}, not {run_id}")
        elif w.tree_size > report.events:
            report.add(
                "ledger",
                f"rolled back or truncated: an exported checkpoint covers {w.tree_size} events, "
                f"the ledger has {report.events}",
            )
        elif roots.get(w.tree_size) != w.root:
            report.add("ledger", f"history differs from the exported checkpoint at {w.tree_size} events")
        else:
            proof = consistency_proof(leaves, w.tree_size, len(leaves), cache)
            if not verify_consistency(w.tree_size, len(leaves), bytes.fromhex(w.root), frontier.root(), proof):
                report.add("ledger", f"does not extend the exported checkpoint at {w.tree_size} events")
    return report


def _check_seal(
    report: LedgerReport, row: tuple | None, public, run_id: str, version: int, roots: dict[int, str]
) -> None:
    if row is None:
        report.add("seal", "missing: the ledger has no signed head")
        return
    size, body, signature = row
    body = body if isinstance(body, bytes) else str(body).encode()
    try:
        cp = Checkpoint.model_validate_json(body)
    except (ValueError, ValidationError):
        report.add("seal", "body is not a valid checkpoint")
        return
    if not verify_signature(public, str(signature), body) or not _canonical_hex(signature):
        report.add("seal", "signature does not verify under the run's public key, or is not canonical hex")
        return
    if cp.run_id != run_id or cp.version != version or cp.tree_size != size:
        report.add("seal", "signed for another run, version or size than it is stored as")
        return
    report.sealed = cp.tree_size
    if cp.tree_size < report.events:
        report.add(
            f"event {cp.tree_size}",
            f"events {cp.tree_size}..{report.events - 1} are not covered by the "
            "signed head: not written by a holder of the run's key "
            "(appended with a recomputed chain?)",
        )
    elif cp.tree_size > report.events:
        report.add("ledger", f"truncated: the signed head covers {cp.tree_size} events, the ledger has {report.events}")
    elif roots.get(cp.tree_size) != cp.root:
        report.add("seal", "Merkle root differs from the events stored (history rewritten)")
