"""Checks on the ledger's signed records: each checkpoint row, the seal (the signed head) and
an exported checkpoint (a witness) kept outside the run directory."""

from __future__ import annotations

import re

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import ValidationError

from ._checkpoint import Checkpoint, SignedCheckpoint
from ._keys import verify_signature
from ._merkle import Frontier, consistency_proof, verify_consistency
from ._report import LedgerReport

__all__ = ["check_seal", "check_witness", "checkpoint_problems"]


def _canonical_hex(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{128}", value) is not None


def checkpoint_problems(
    cp: Checkpoint, size: object, root_col: object, body: object, signature: object, public, run_id: str, version: int
) -> list[str]:
    """What is wrong with a checkpoint row by itself: its signature, form and labels."""
    out = []
    if not verify_signature(public, str(signature), body if isinstance(body, bytes) else str(body).encode()):
        out.append("signature does not verify under the run's public key")
    elif not _canonical_hex(signature):  # "AB" decodes as "ab" does: the stored text was edited
        out.append("signature is not in canonical form (lower-case hex)")
    if cp.message() != body:
        out.append("body is not in canonical form")
    if cp.tree_size != size or cp.root != root_col:
        out.append("indexed columns differ from the signed body")
    if cp.run_id != run_id:
        out.append(f"signed for run {cp.run_id}, not {run_id}")
    if cp.version != version:
        out.append(f"a version-{cp.version} checkpoint in a version-{version} ledger")
    return out


def check_seal(
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


def check_witness(
    report: LedgerReport,
    witness: SignedCheckpoint,
    public: Ed25519PublicKey,
    run_id: str,
    version: int,
    roots: dict[int, str],
    leaves: list[bytes],
    frontier: Frontier,
    cache: dict[tuple[int, int], bytes],
) -> None:
    """An exported checkpoint kept outside the run directory: the ledger must extend it."""
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
