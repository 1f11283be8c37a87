"""Layer 1: the append-only, hash-chained, checkpoint-signed event ledger."""

from ._canonical import canonical_bytes, sha256_hex
from ._checkpoint import CHECKPOINT_SCHEMA_VERSION, Checkpoint, SignedCheckpoint, event_leaf
from ._event import EVENT_SCHEMA_VERSION, GENESIS_HASH, Actor, ArtifactRef, Event, EventDraft, validate_draft
from ._keys import (
    KEY_DIR_ENV,
    KeyDir,
    RunRecord,
    Signer,
    check_run_id,
    default_key_dir,
    key_id,
    load_public_key,
    public_key_pem,
    read_secret,
    write_secret,
)
from ._memo import LedgerMemo
from ._merkle import (
    EMPTY_ROOT,
    Frontier,
    consistency_proof,
    consistency_proof_extending,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root,
    verify_consistency,
    verify_inclusion,
)
from ._pg import install as install_postgres
from ._pg import is_url as is_ledger_url
from ._pg import public_url
from ._remote import ForgedEvent, HeadSigner, RemoteLedger, WitnessingSigner
from ._report import LedgerReport, Problem
from ._rows import Row, hash_at, rows_since
from ._schema import SCHEMA as SQLITE_SCHEMA
from ._schema import utc_now
from ._store import Ledger
from ._verify import verify_ledger

__all__ = [
    "CHECKPOINT_SCHEMA_VERSION",
    "EMPTY_ROOT",
    "EVENT_SCHEMA_VERSION",
    "GENESIS_HASH",
    "KEY_DIR_ENV",
    "SQLITE_SCHEMA",
    "Actor",
    "ArtifactRef",
    "Checkpoint",
    "Event",
    "EventDraft",
    "ForgedEvent",
    "Frontier",
    "HeadSigner",
    "KeyDir",
    "Ledger",
    "LedgerMemo",
    "LedgerReport",
    "Problem",
    "RemoteLedger",
    "Row",
    "RunRecord",
    "SignedCheckpoint",
    "Signer",
    "WitnessingSigner",
    "canonical_bytes",
    "check_run_id",
    "consistency_proof",
    "consistency_proof_extending",
    "default_key_dir",
    "event_leaf",
    "hash_at",
    "inclusion_proof",
    "install_postgres",
    "is_ledger_url",
    "key_id",
    "leaf_hash",
    "load_public_key",
    "node_hash",
    "public_key_pem",
    "public_url",
    "read_secret",
    "root",
    "rows_since",
    "sha256_hex",
    "utc_now",
    "validate_draft",
    "verify_consistency",
    "verify_inclusion",
    "verify_ledger",
    "write_secret",
]
