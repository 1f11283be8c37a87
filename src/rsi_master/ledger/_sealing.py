"""What a ledger writer checks before it signs: the seal and the operator's witness.

Every write transaction replaces the *seal* (a signed tree head over every event) in the
same transaction, and the operator key directory's *witness* is moved forward to it after
the commit, only along a verified consistency proof. A writer opens a ledger only when it
extends the witness and the seal covers every event; it never signs rows it has not
verified. `Ledger` inherits these checks; they read and move its verified state.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from pydantic import ValidationError

from ..errors import LedgerError
from ._checkpoint import Checkpoint, SignedCheckpoint, event_leaf
from ._event import GENESIS_HASH
from ._files import write_bytes_atomic
from ._keys import KeyDir, Signer, verify_signature
from ._merkle import EMPTY_ROOT, Frontier, consistency_proof, consistency_proof_extending, verify_consistency
from ._pg import PgConnection
from ._schema import SCHEMA_VERSION, utc_now

__all__ = ["SealKeeper"]

_HEX64 = re.compile(r"[0-9a-f]{64}")
SealRow = tuple[int, bytes, str]  # (tree_size, checkpoint body, signature)


class SealKeeper:
    """The writer's side of the seal and the witness, for `Ledger`."""

    _conn: sqlite3.Connection | PgConnection
    path: Path
    run_id: str
    version: int
    public_pem: str
    _signer: Signer | None
    _signer_pem: str  # the signer's public key as PEM ("" without one)
    _key_dir: KeyDir | None
    # What this writer has verified: the tree (its compact range), the last event's hash,
    # and the seal row it last saw or wrote (with its root). Never rebuilt from unverified rows.
    _frontier: Frontier
    _tip: str
    _sealed: tuple[SealRow, str] | None
    # The witness file's bytes as this writer last wrote or verified them, with what they say
    # (its head and compact range). While the file holds exactly these bytes it is not parsed
    # and verified again; any other bytes (replaced, rolled back, edited) are.
    _witness: tuple[bytes, Checkpoint, Frontier | None] | None
    _witness_path: Path | None

    def _refuse(self, why: str) -> LedgerError:
        return LedgerError(f"{self.path}: {why}; refusing to open it for writing")

    def _verify_for_writing(self) -> None:
        """Check the ledger against the key directory before signing anything in it.

        What a writer may legitimately find: events up to the seal (a crashed writer's
        transaction either committed with its seal or not at all) and a witness at or
        behind the seal (the witness is moved after the commit). Anything else (fewer
        events than the witness covers, another root at its size, events the seal does not
        cover) was done by someone without the key, and is refused.
        """
        if self.version != int(SCHEMA_VERSION):
            raise self._refuse(
                f"a version-{self.version} ledger (written before signed heads); it can be verified but not appended to"
            )
        keys, signer = self._key_dir, self._signer
        if keys is None or signer is None:
            raise self._refuse("no operator key directory")
        record = keys.record(self.run_id)
        if record is None:
            raise self._refuse(f"the key directory {keys.path} has no record of run {self.run_id}")
        if record.key_id != signer.key_id:
            raise self._refuse(
                f"the key directory's record of run {self.run_id} names key {record.key_id}, "
                f"the run directory's ledger.pub is key {signer.key_id}"
            )
        run_dir = str(self.path.parent.resolve())
        here = keys.record_at(run_dir)
        if here is not None and here.run_id != self.run_id:
            raise self._refuse(
                f"the key directory has run {here.run_id} at {run_dir}, this ledger is run "
                f"{self.run_id} (run directory replaced?)"
            )
        # Read before the database: the witness only ever lags it, never leads.
        witness, _ = self._read_witness()
        frontier, at_witness = Frontier(), EMPTY_ROOT if witness.tree_size == 0 else None
        tip = GENESIS_HASH
        self._conn.execute("BEGIN")  # one snapshot for the events and the seal
        try:
            for seq, hash_ in self._conn.execute("SELECT seq, hash FROM events ORDER BY seq"):
                if seq != frontier.size:
                    raise self._refuse(f"event {frontier.size} is missing")
                frontier.append(self._leaf(hash_))
                tip = hash_
                if frontier.size == witness.tree_size:
                    at_witness = frontier.root()
            seal_row = self._read_seal()
        finally:
            self._conn.execute("COMMIT")
        if frontier.size < witness.tree_size:
            raise self._refuse(
                f"rolled back or truncated: the operator's witness covers {witness.tree_size} "
                f"events, the ledger has {frontier.size}"
            )
        if at_witness is None or at_witness.hex() != witness.root:
            raise self._refuse(f"history differs from the operator's witness at {witness.tree_size} events (rewritten)")
        self._check_seal(seal_row, frontier, refuse=True)
        self._frontier, self._tip = frontier, tip
        if record.run_dir != run_dir:  # moved or copied by the operator: remember where it is now
            keys.moved(record, run_dir)
        if witness.tree_size < frontier.size:  # a writer died between its commit and the witness
            self._publish(self._seal_signed(), frontier)

    def _leaf(self, hash_hex: str) -> bytes:
        # Lower-case only: "AB" decodes like "ab", and the next event would chain onto the edited text.
        if not isinstance(hash_hex, str) or not _HEX64.fullmatch(hash_hex):
            raise LedgerError(f"{self.path}: an event hash is not lower-case hex (ledger edited); refusing to write")
        return event_leaf(bytes.fromhex(hash_hex), self.version)

    def _catch_up(self) -> None:
        """Take in events other writers appended, only as far as the seal vouches for them."""
        row = self._conn.execute("SELECT max(seq) FROM events").fetchone()
        stored = 0 if row[0] is None else row[0] + 1
        if stored < self._frontier.size:
            raise LedgerError(
                f"{self.path}: the ledger shrank under this writer ({self._frontier.size} events "
                f"verified, {stored} stored: rolled back); refusing to write"
            )
        rows = self._conn.execute(
            "SELECT seq, hash FROM events WHERE seq >= ? ORDER BY seq", (self._frontier.size,)
        ).fetchall()
        for seq, hash_ in rows:
            if seq != self._frontier.size:
                raise LedgerError(f"{self.path}: ledger has a gap before event {seq}")
            self._frontier.append(self._leaf(hash_))
            self._tip = hash_
        self._check_seal(self._read_seal(), self._frontier)

    def _read_seal(self) -> tuple[int, bytes, str] | None:
        row = self._conn.execute("SELECT tree_size, body, signature FROM seal WHERE id = 0").fetchone()
        return None if row is None else (row[0], bytes(row[1]) if not isinstance(row[1], bytes) else row[1], row[2])

    def _check_seal(self, seal_row: tuple[int, bytes, str] | None, frontier: Frontier, refuse: bool = False) -> None:
        def fail(why: str) -> LedgerError:
            return self._refuse(why) if refuse else LedgerError(f"{self.path}: {why}; refusing to write")

        if seal_row is None:
            raise fail("the ledger has no signed head (seal)")
        if self._sealed is not None and seal_row == self._sealed[0]:
            root = self._sealed[1]  # the row this writer wrote or verified last
        else:
            assert self._signer is not None
            _, body, signature = seal_row
            if not verify_signature(self._signer.public, signature, body):
                raise fail("the signed head (seal) does not verify under this run's key")
            try:
                cp = Checkpoint.model_validate_json(body)
            except ValueError:
                raise fail("the signed head (seal) is not a checkpoint") from None
            if cp.run_id != self.run_id or cp.version != self.version or cp.tree_size != seal_row[0]:
                raise fail("the signed head (seal) belongs to another run or version")
            root = cp.root
        size = seal_row[0]
        if frontier.size > size:
            raise fail(
                f"events {size}..{frontier.size - 1} are not covered by the signed head: they were "
                "not written by a holder of this run's key (appended with a recomputed chain?)"
            )
        if frontier.size < size:
            raise fail(f"truncated: the signed head covers {size} events, the ledger has {frontier.size}")
        if frontier.root().hex() != root:
            raise fail(f"the events differ from the signed head at {size} events (rewritten)")
        self._sealed = (seal_row, root)

    def _seal_signed(self) -> SignedCheckpoint:
        assert self._sealed is not None
        _, body, signature = self._sealed[0]
        return SignedCheckpoint(
            checkpoint=Checkpoint.model_validate_json(body), signature=signature, public_key=self.public_pem
        )

    def _sign_head(self) -> tuple[SignedCheckpoint, bytes]:
        """The signed head of this writer's tree, and its message (the seal's body)."""
        assert self._signer is not None
        cp = Checkpoint(
            run_id=self.run_id,
            tree_size=self._frontier.size,
            root=self._frontier.root().hex(),
            ts=utc_now(),
            key_id=self._signer.key_id,
            version=self.version,
        )
        body = cp.message()
        # SignedCheckpoint.sign, without encoding the public key to PEM on every append.
        head = SignedCheckpoint(checkpoint=cp, signature=self._signer.sign(body), public_key=self._signer_pem)
        return head, body

    def _write_seal(self, head: SignedCheckpoint, body: bytes) -> None:
        cur = self._conn.execute(
            "UPDATE seal SET tree_size = ?, body = ?, signature = ? WHERE id = 0",
            (head.checkpoint.tree_size, body, head.signature),
        )
        if cur.rowcount != 1:
            raise LedgerError(f"{self.path}: the ledger's seal row is missing (edited); refusing to write")
        self._sealed = ((head.checkpoint.tree_size, body, head.signature), head.checkpoint.root)

    def _witness_file(self) -> Path:
        assert self._key_dir is not None
        if self._witness_path is None:
            self._witness_path = self._key_dir.witness_path(self.run_id)
        return self._witness_path

    def _read_witness(self) -> tuple[Checkpoint, Frontier | None]:
        """The operator's witness for this run, verified, with its compact range (None when it
        has none that folds to its root)."""
        assert self._signer is not None
        path = self._witness_file()
        try:
            data = path.read_bytes()
        except OSError as exc:
            if not path.is_file():
                raise self._refuse(f"the operator's witness {path} is missing") from None
            raise self._refuse(f"cannot read checkpoint {path}: {exc.strerror}") from None
        if self._witness is not None and data == self._witness[0]:
            # Exactly the bytes this writer last wrote or verified: what they say is known.
            return self._witness[1], self._witness[2]
        try:
            witness = SignedCheckpoint.model_validate_json(data)
        except ValidationError:
            raise self._refuse(f"{path} is not a signed RSI-Master checkpoint") from None
        cp = witness.checkpoint
        if not verify_signature(self._signer.public, witness.signature, cp.message()):
            raise self._refuse(f"the operator's witness {path} does not verify under this run's key")
        if cp.run_id != self.run_id or cp.version != self.version:
            raise self._refuse(f"the operator's witness {path} belongs to another run or version")
        compact = witness.compact_range()
        self._witness = (data, cp, compact)
        return cp, compact

    def _publish(self, head: SignedCheckpoint, frontier: Frontier) -> None:
        """Move the witness to `head`, only along a consistency proof from the witness.

        Runs after the commit: a writer killed before it leaves the witness behind the
        seal, which the next writer finds and repairs; never ahead of the database."""
        assert self._key_dir is not None
        new = head.checkpoint
        with self._key_dir.witness_lock(self.run_id):
            w, compact = self._read_witness()
            if w.tree_size >= new.tree_size:  # another writer got here first
                if w.tree_size == new.tree_size and w.root != new.root:
                    raise LedgerError(
                        f"{self.path}: the operator's witness at {w.tree_size} events has another "
                        "root than this writer's head (forked ledger); witness kept"
                    )
                return
            rows = self._conn.execute(
                "SELECT hash FROM events WHERE seq >= ? AND seq < ? ORDER BY seq", (w.tree_size, new.tree_size)
            ).fetchall()
            added = [self._leaf(h) for (h,) in rows]
            if compact is not None and len(added) == new.tree_size - w.tree_size:
                proof = consistency_proof_extending(compact, added)
            else:  # a witness without its range: prove from every event
                every = [
                    self._leaf(h)
                    for (h,) in self._conn.execute(
                        "SELECT hash FROM events WHERE seq < ? ORDER BY seq", (new.tree_size,)
                    )
                ]
                proof = consistency_proof(every, w.tree_size, new.tree_size) if len(every) == new.tree_size else []
            if not verify_consistency(
                w.tree_size, new.tree_size, bytes.fromhex(w.root), bytes.fromhex(new.root), proof
            ):
                raise LedgerError(
                    f"{self.path}: the ledger does not extend the operator's witness at {w.tree_size} "
                    "events; witness kept"
                )
            witness = head.model_dump(mode="json")
            witness["frontier"] = [n.hex() for n in frontier.nodes]
            # Compact: the witness is rewritten on every commit, and json's indenting encoder
            # is pure Python. Readers parse it (SignedCheckpoint.load); layout is not part of it.
            data = json.dumps(witness, sort_keys=True).encode() + b"\n"
            write_bytes_atomic(self._witness_file(), data)
            self._witness = (data, new, frontier.copy())
