"""Signed Merkle checkpoints (tree heads) of the ledger."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._canonical import canonical_bytes
from ._keys import Signer, load_public_key, public_key_pem, verify_signature
from ..errors import RsiMasterError

__all__ = ["CHECKPOINT_SCHEMA_VERSION", "Checkpoint", "SignedCheckpoint", "write_json_atomic"]

CHECKPOINT_SCHEMA_VERSION = 1


class Checkpoint(BaseModel):
    """The signed statement: run `run_id` had `tree_size` events with Merkle root `root`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(default=CHECKPOINT_SCHEMA_VERSION, description="Checkpoint schema version.")
    run_id: str = Field(description="The run this ledger belongs to.")
    tree_size: int = Field(ge=0, description="Number of events covered.")
    root: str = Field(pattern=r"^[0-9a-f]{64}$", description="RFC 6962 root over the event hashes.")
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

    @classmethod
    def sign(cls, checkpoint: Checkpoint, signer: Signer) -> "SignedCheckpoint":
        return cls(
            checkpoint=checkpoint,
            signature=signer.sign(checkpoint.message()),
            public_key=public_key_pem(signer.public).decode(),
        )

    def valid_for(self, public_pem: bytes) -> bool:
        """True when the signature verifies under the given public key (not the embedded one)."""
        return verify_signature(load_public_key(public_pem), self.signature, self.checkpoint.message())

    @classmethod
    def load(cls, path: Path) -> "SignedCheckpoint":
        try:
            return cls.model_validate_json(path.read_bytes())
        except OSError as exc:
            raise RsiMasterError(f"cannot read checkpoint {path}: {exc.strerror}") from None
        except ValidationError:
            raise RsiMasterError(f"{path} is not a signed RSI-Master checkpoint") from None

    def dump(self, path: Path) -> None:
        write_json_atomic(path, self.model_dump(mode="json"))


def write_json_atomic(path: Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(obj, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
