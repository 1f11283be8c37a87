"""A ledger writer that holds no key: its heads are signed by a process that does.

A job on another machine appends to the run's ledger (its own connection, the same SQL, the
same chain and seal) but never sees the signing key or the key directory. Where a local writer
signs its new head itself, a `RemoteLedger` asks a `HeadSigner` (the driver's, reached through
its capability) to sign it, and the driver moves the operator's witness. The driver's side,
`WitnessingSigner`, signs only what it checked itself: each event since the last signed head
extends the chain it verified, hashes to its stored bytes, carries the columns its body says,
and names the caller as its actor. A writer that slips in an event as anyone else (the harness,
another node) gets no signature, so its transaction commits nothing.

Before the driver signs, the remote writer holds the database's write lock (SQLite's write
transaction, PostgreSQL's advisory lock), so what the driver reads committed is exactly what the
writer extends.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ..errors import LedgerError
from ._checkpoint import Checkpoint, SignedCheckpoint, event_leaf
from ._event import GENESIS_HASH, parse_body
from ._keys import key_id, verify_signature
from ._merkle import Frontier
from ._schema import utc_now
from ._store import Ledger

__all__ = ["ForgedEvent", "HeadSigner", "RemoteLedger", "WitnessingSigner"]

# One appended event as the writer stored it: (seq, prev_hash, hash, kind, actor_role, actor_id, ts, body).
EventRow = tuple[int, str, str, str, str, str, str, bytes]
_ROW_SQL = "SELECT seq, prev_hash, hash, kind, actor_role, actor_id, ts, body FROM events WHERE seq >= ? ORDER BY seq"


class ForgedEvent(LedgerError):
    """A remote writer asked for a head over an event that is not its own to write."""


@runtime_checkable
class HeadSigner(Protocol):
    """What a writer without the key asks of the process holding it (each call carries the
    writer's capability, checked there)."""

    def vouch(self) -> tuple[int, str]:
        """The signed head the key holder verified (size, root hex), its witness moved to it."""
        ...

    def sign(self, rows: Sequence[EventRow]) -> tuple[bytes, str]:
        """The checkpoint body and signature over the committed events and `rows` after them."""
        ...

    def publish(self) -> None:
        """Move the operator's witness to the committed seal."""
        ...


class _PublicOnly:
    """The run's public key where a writer's signer goes: it verifies, it never signs."""

    def __init__(self, public: Ed25519PublicKey) -> None:
        self.public = public
        self.key_id = key_id(public)

    def sign(self, message: bytes) -> str:
        raise LedgerError("this writer holds no signing key: its heads are signed by the driver")


class RemoteLedger(Ledger):
    """A writer whose heads `signer` signs. Open with `RemoteLedger.open_remote`."""

    _head_signer: HeadSigner

    @classmethod
    def open_remote(
        cls,
        path: Path,
        signer: HeadSigner,
        public: Ed25519PublicKey,
        public_pem: str,
        checkpoint_every: int = 1000,
        *,
        url: str | None = None,
        run_id: str | None = None,
    ) -> RemoteLedger:
        ledger = cls.open(path, None, None, checkpoint_every, public_pem, url=url, run_id=run_id)
        assert isinstance(ledger, RemoteLedger)
        ledger._head_signer = signer
        ledger._signer = _PublicOnly(public)  # type: ignore[assignment]  # verifies seals, never signs
        ledger._signer_pem = public_pem
        try:
            ledger._verify_for_writing()
        except BaseException:
            ledger._conn.close()
            raise
        return ledger

    def _verify_for_writing(self) -> None:
        """The driver checked the ledger against the operator's witness (`vouch`); this writer
        checks that what it reads extends the head the driver vouched for, and that the seal
        covers every event, before it appends."""
        size, root = self._head_signer.vouch()
        frontier, tip, at_vouched = Frontier(), GENESIS_HASH, None
        self._conn.execute("BEGIN")
        try:
            for seq, hash_ in self._conn.execute("SELECT seq, hash FROM events ORDER BY seq"):
                if seq != frontier.size:
                    raise self._refuse(f"event {frontier.size} is missing")
                if frontier.size == size:
                    at_vouched = frontier.root().hex()
                frontier.append(self._leaf(hash_))
                tip = hash_
            if frontier.size == size:
                at_vouched = frontier.root().hex()
            seal_row = self._read_seal()
        finally:
            self._conn.execute("COMMIT")
        if at_vouched != root:
            raise self._refuse(f"the events this writer reads differ from the driver's signed head at {size} events")
        self._check_seal(seal_row, frontier, refuse=True)
        self._frontier, self._tip = frontier, tip

    def _sign_head(self) -> tuple[SignedCheckpoint, bytes]:
        assert self._sealed is not None
        sealed_size = self._sealed[0][0]  # events from here are this transaction's own, not yet committed
        rows = [(*r[:7], bytes(r[7])) for r in self._conn.execute(_ROW_SQL, (sealed_size,))]
        body, signature = self._head_signer.sign(rows)
        cp = Checkpoint.model_validate_json(body)
        if cp.tree_size != self._frontier.size or cp.root != self._frontier.root().hex():
            raise LedgerError(f"{self.path}: the driver signed another head than this writer's; nothing written")
        if not verify_signature(self._signer.public, signature, body):  # type: ignore[union-attr]
            raise LedgerError(f"{self.path}: the driver's signature does not verify under the run's key")
        return SignedCheckpoint(checkpoint=cp, signature=signature, public_key=self._signer_pem), body

    def _publish(self, head: SignedCheckpoint, frontier: Frontier) -> None:
        self._head_signer.publish()


class WitnessingSigner:
    """The key holder's side of `HeadSigner`, over its own writable `Ledger` of the run."""

    def __init__(self, ledger: Ledger) -> None:
        if ledger._signer is None or ledger._key_dir is None:
            raise LedgerError("a witnessing signer needs a writable ledger (the key and the key directory)")
        self.ledger = ledger

    def _catch_up(self) -> None:
        log = self.ledger
        log._conn.execute("BEGIN")
        try:
            log._catch_up()
        finally:
            log._conn.execute("COMMIT")

    def vouch(self) -> tuple[int, str]:
        log = self.ledger
        with log._lock:
            self._catch_up()
            log._publish(log._seal_signed(), log._frontier)
            return log._frontier.size, log._frontier.root().hex()

    def publish(self) -> None:
        self.vouch()

    def sign(self, rows: Sequence[Any], actor: dict[str, str]) -> tuple[bytes, str]:
        """Sign the head over the committed events and `rows`, only if each row extends the chain
        and is an event by `actor` (ForgedEvent otherwise: nothing is signed)."""
        log = self.ledger
        with log._lock:
            self._catch_up()
            frontier, tip = log._frontier.copy(), log._tip
            if not rows:
                raise ForgedEvent("nothing to sign: no event after the signed head")
            for row in rows:
                problem = _row_problem(row, frontier.size, tip, actor)
                if problem is not None:
                    raise ForgedEvent(problem)
                frontier.append(event_leaf(bytes.fromhex(row[2]), log.version))
                tip = row[2]
            assert log._signer is not None
            cp = Checkpoint(
                run_id=log.run_id,
                tree_size=frontier.size,
                root=frontier.root().hex(),
                ts=utc_now(),
                key_id=log._signer.key_id,
                version=log.version,
            )
            body = cp.message()
            return body, log._signer.sign(body)


def _row_problem(row: Sequence[Any], seq: int, prev: str, actor: dict[str, str]) -> str | None:
    """Why `row` may not be signed at chain position `seq` after `prev` for `actor` (None: it may)."""
    if not isinstance(row, (tuple, list)) or len(row) != 8:
        return "not an event row"
    r_seq, r_prev, r_hash, kind, role, id_, ts, body = row
    if r_seq != seq or r_prev != prev:
        return f"event {r_seq} does not extend the signed chain at {seq}"
    if not isinstance(body, (bytes, bytearray)) or hashlib.sha256(body).hexdigest() != r_hash:
        return f"event {seq}'s hash is not the hash of its stored bytes"
    try:
        parsed = parse_body(bytes(body))
    except ValueError:
        return f"event {seq}'s stored bytes do not parse"
    if not isinstance(parsed, dict) or not isinstance(parsed.get("actor"), dict):
        return f"event {seq} has no actor"
    said = (parsed.get("seq"), parsed.get("prev_hash"), parsed.get("kind"), parsed["actor"].get("role"))
    if said != (r_seq, r_prev, kind, role) or (parsed["actor"].get("id"), parsed.get("ts")) != (id_, ts):
        return f"event {seq}'s columns differ from its body"
    if parsed["actor"] != actor:
        who = parsed["actor"]
        return (
            f"event {seq} ({kind}) is recorded as {who.get('role')} {who.get('id')}, "
            f"not as the capability's holder {actor.get('role')} {actor.get('id')}"
        )
    return None
