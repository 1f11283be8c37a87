"""Signed Merkle checkpoints (tree heads) of the ledger."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import RsiMasterError
from ._canonical import canonical_bytes
from ._files import write_json_atomic
from ._keys import Signer, load_public_key, public_key_pem, verify_signature
from ._merkle import Frontier, leaf_hash

__all__ = ["CHECKPOINT_SCHEMA_VERSION", "Checkpoint", "SignedCheckpoint", "event_leaf", "write_json_atomic"]

# 1: leaves were the raw event hashes (not RFC 6962 leaves; kept so old runs verify).
# 2: leaf = SHA-256(0x00 || the 32 bytes of the event hash), as RFC 6962 section 2.1 defines.
CHECKPOINT_SCHEMA_VERSION = 2


def event_leaf(event_hash: bytes, version: int = CHECKPOINT_SCHEMA_VERSION) -> bytes:
    """The Merkle leaf of an event (its 32-byte hash) under a checkpoint version."""
    return event_hash if version == 1 else leaf_hash(event_hash)


class Checkpoint(BaseModel):
    """The signed statement: run `run_id` had `tree_size` events with Merkle root `root`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(
        default=CHECKPOINT_SCHEMA_VERSION,
        ge=1,
        le=CHECKPOINT_SCHEMA_VERSION,
        description="Checkpoint schema version; fixes how leaves are hashed (see event_leaf).",
    )
    run_id: str = Field(description="The run this ledger belongs to.")
    tree_size: int = Field(ge=0, description="Number of events covered.")
    root: str = Field(pattern=r"^[0-9a-f]{64}$", description="RFC 6962 tree head over the event leaves.")
    ts: str = Field(description="UTC time of signing, RFC 3339.")
    key_id: str = Field(description="Id of the signing key.")

    def message(self) -> bytes:
        return canonical_bytes(self.model_dump(mode="json"))


class SignedCheckpoint(BaseModel):
    """A checkpoint with its Ed25519 signature; also the exported (witness) file format."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    checkpoint: Checkpoint
    signature: str = Field(description="Ed25519 signature over the canonical checkpoint, hex.")
    public_key: str = Field(description="PEM of the signing public key.")
    frontier: tuple[str, ...] = Field(
        default=(),
        description="Compact range of the tree (hex roots of its perfect subtrees, largest first). "
        "Not signed: it must fold to the signed root. Lets a writer prove that a newer head extends this one "
        "from the events after it alone.",
    )

    @classmethod
    def sign(cls, checkpoint: Checkpoint, signer: Signer) -> SignedCheckpoint:
        return cls(
            checkpoint=checkpoint,
            signature=signer.sign(checkpoint.message()),
            public_key=public_key_pem(signer.public).decode(),
        )

    def valid_for(self, public_pem: bytes) -> bool:
        """True when the signature verifies under the given public key (not the embedded one)."""
        return verify_signature(load_public_key(public_pem), self.signature, self.checkpoint.message())

    def compact_range(self) -> Frontier | None:
        """The stored frontier if it folds to the signed root, else None."""
        if not self.frontier and self.checkpoint.tree_size:
            return None
        try:
            f = Frontier.from_nodes(self.checkpoint.tree_size, [bytes.fromhex(h) for h in self.frontier])
        except ValueError:
            return None
        return f if f.root().hex() == self.checkpoint.root else None

    @classmethod
    def load(cls, path: Path) -> SignedCheckpoint:
        try:
            return cls.model_validate_json(path.read_bytes())
        except OSError as exc:
            raise RsiMasterError(f"cannot read checkpoint {path}: {exc.strerror}") from None
        except ValidationError:
            raise RsiMasterError(f"{path} is not a signed RSI-Master checkpoint") from None

    def dump(self, path: Path) -> None:
        write_json_atomic(path, self.model_dump(mode="json", exclude={"frontier"} if not self.frontier else None))
