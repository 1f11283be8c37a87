"""Any local Hugging Face causal LM as the base model: resolving `--model PATH_OR_ID`.

A model is a directory, or a repository id looked up in the local Hugging Face cache
only (nothing is downloaded, whatever HF_HUB_OFFLINE says). Its tree digest is taken over
every file that defines what the model computes and how text reaches it: weights (shards
and their index included), config, generation config, tokenizer files and chat template.
It follows the artifact store's manifest rule, so the digest of the copy a run stores at
contract freeze equals the tree digest, and every guard that checks the base checkpoint
(weight provenance, measured copies before training and evaluation) checks this model as
it checks the shipped one. Importing this module is light: transformers loads only to
check that the architecture is one it can build.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rsi_master.artifacts import copy_measured, file_digest, manifest_bytes
from rsi_master.errors import ArtifactError
from rsi_master.runtime._errors import ModelInputError
from rsi_master.runtime._model import base_model_dir
from rsi_master.runtime._model_checks import check_weight_file

__all__ = ["ModelInputError", "ModelSource", "defining_files", "hf_cache_dir", "resolve_model", "stage_model"]

# What transformers reads to build a causal LM and its tokenizer. Anything else in a model
# directory (README, licence, `original/` consolidated weights, images) changes nothing it
# computes and stays out of the digest, so a model card edit is not a new model.
_CONFIG = "config.json"
_EXACT = frozenset(
    {
        _CONFIG,
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.json",
        "merges.txt",
        "vocab.txt",
        "tokenizer.model",
        "spiece.model",
        "sentencepiece.bpe.model",
        "chat_template.jinja",
        "chat_template.json",
    }
)
_TOKENIZER_DATA = (
    "tokenizer.json",
    "tokenizer.model",
    "vocab.json",
    "vocab.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
)
# A repository id as the Hub spells it: `name` or `owner/name`, optionally `@revision`.
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?(@[\w./-]+)?$")


class ModelSource(BaseModel):
    """A base model resolved to local files, with the digest the contract pins."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    path: Path
    repo_id: str | None = None
    revision: str | None = None
    tree_digest: str
    architecture: str
    files: dict[str, str]
    is_shipped: bool = False

    @property
    def spec(self) -> str:
        """How the user named it: the repository id, else the directory."""
        return self.repo_id or str(self.path)


def hf_cache_dir() -> Path:
    """The hub cache as huggingface_hub would find it now (HF_HUB_CACHE, else HF_HOME/hub).

    Read from the environment at each call: huggingface_hub freezes its own constant at
    import, which would ignore a cache chosen later in the same process."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def _weights(root: Path) -> list[str]:
    """The weight files transformers reads, in its order of preference: a safetensors index and
    its shards, one safetensors file, then the same for pytorch .bin. Other weight files (a
    `consolidated.safetensors` beside the shards, a .bin beside a .safetensors) are not read
    and not part of the model: storing them would only double what a run copies."""
    import json

    for index, single in (
        ("model.safetensors.index.json", "model.safetensors"),
        ("pytorch_model.bin.index.json", "pytorch_model.bin"),
    ):
        if (root / index).is_file():
            try:
                shards = sorted(set(json.loads((root / index).read_text())["weight_map"].values()))
            except (OSError, ValueError, KeyError, AttributeError, TypeError):
                raise ModelInputError(f"model {root}: {index} is not a weight index") from None
            for shard in shards:
                if not isinstance(shard, str) or "/" in shard or not (root / shard).is_file():
                    raise ModelInputError(f"model {root}: weight shard {shard} named in {index} is missing")
            return [index, *shards]
        if (root / single).is_file():
            return [single]
    return []


def defining_files(root: Path) -> list[str]:
    """The files of `root` that define the model (relative paths, sorted)."""
    out = [e for e in os.listdir(root) if (root / e).is_file() and (e in _EXACT or e.endswith(".tiktoken"))]
    out += _weights(root)
    templates = root / "additional_chat_templates"
    if templates.is_dir():
        out += [f"additional_chat_templates/{p.name}" for p in templates.iterdir() if p.is_file()]
    return sorted(set(out))


def _hash(path: Path) -> str:

    # A cache snapshot holds links into `blobs/`: the bytes are what is hashed, wherever they live.
    return file_digest(path.resolve())


def _from_cache(spec: str) -> tuple[Path, str, str | None]:
    repo_id, _, revision = spec.partition("@")
    cache = hf_cache_dir()
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HFValidationError

        # local_files_only: the cache is looked up, the network never asked.
        path = snapshot_download(repo_id, revision=revision or None, cache_dir=str(cache), local_files_only=True)
    except (HFValidationError, ValueError):
        raise ModelInputError(f"model {spec!r} is neither a directory nor a valid repository id") from None
    except Exception:  # LocalEntryNotFoundError and kin: not cached (nothing is downloaded)
        raise ModelInputError(
            f"model {spec!r} is not a directory and not in the local Hugging Face cache ({cache}); "
            "nothing is downloaded: fetch it first (e.g. `hf download`) or give its directory"
        ) from None
    return Path(path), repo_id, revision or None


def _architecture(root: Path) -> str:
    """The model type, checked against the causal LMs transformers can build."""
    import json

    try:
        config = json.loads((root / _CONFIG).read_text())
    except (OSError, ValueError) as exc:
        raise ModelInputError(f"model {root}: config.json does not parse: {exc}") from None
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(model_type, str) or not model_type:
        raise ModelInputError(f"model {root}: config.json names no model_type")
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise ModelInputError(
            f"model {root}: architecture {model_type!r} is not a causal LM this transformers can load "
            "(remote code is never run)"
        )
    return model_type


def _check_tokenizer(root: Path) -> None:
    try:
        from transformers import AutoTokenizer

        AutoTokenizer.from_pretrained(str(root), local_files_only=True)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise ModelInputError(f"model {root}: tokenizer does not load: {type(exc).__name__}: {first}") from None


def _shipped() -> ModelSource:
    root = base_model_dir()
    # Every file of the shipped directory, as its build record's digest was taken.
    files = {p.relative_to(root).as_posix(): _hash(p) for p in sorted(root.rglob("*")) if p.is_file()}
    return ModelSource(
        path=root,
        tree_digest=hashlib.sha256(manifest_bytes(list(files.items()))).hexdigest(),
        architecture="llama",
        files=files,
        is_shipped=True,
    )


def resolve_model(spec: str | Path | None) -> ModelSource:
    """Resolve `--model`: None is the shipped model; a directory; else a cached repository id."""
    if spec is None or str(spec) == "":
        return _shipped()
    text = str(spec)
    root = Path(text).expanduser()
    repo_id = revision = None
    if not root.exists():
        looks_like_path = text.startswith(("/", ".", "~")) or os.sep + os.sep in text or not _REPO_ID.match(text)
        if looks_like_path:
            raise ModelInputError(f"model directory {text} does not exist")
        root, repo_id, revision = _from_cache(text)
    if not root.is_dir():
        raise ModelInputError(f"model {text} is not a directory")
    root = root.resolve() if repo_id is None else root  # a snapshot keeps its own path
    names = defining_files(root)
    if _CONFIG not in names:
        raise ModelInputError(f"model {text} has no config.json: not a Hugging Face model directory")
    if not any(n.endswith((".safetensors", ".bin")) for n in names):
        raise ModelInputError(f"model {text} has no weights (model.safetensors, pytorch_model.bin or a sharded index)")
    if not any(n in _TOKENIZER_DATA or n.endswith(".tiktoken") for n in names):
        raise ModelInputError(f"model {text} has no tokenizer (tokenizer.json, tokenizer.model, vocab.json, ...)")
    for name in names:
        problem = check_weight_file(root / name, name)
        if problem is not None:
            raise ModelInputError(f"model {text}: {problem}")
    architecture = _architecture(root)
    _check_tokenizer(root)
    files = {n: _hash(root / n) for n in names}
    return ModelSource(
        path=root,
        repo_id=repo_id,
        revision=revision,
        tree_digest=hashlib.sha256(manifest_bytes(list(files.items()))).hexdigest(),
        architecture=architecture,
        files=files,
    )


def stage_model(source: ModelSource, dest: Path) -> str:
    """Copy the defining files into the new directory `dest` (regular files, links followed
    to their bytes) and return the digest of what was written; a model changed on disk since
    it was resolved is refused, so what a run stores is what was resolved."""
    dest.mkdir(mode=0o700)
    entries = []
    for rel in sorted(source.files):
        target = dest / rel
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            entries.append((rel, copy_measured((source.path / rel).resolve(), target)))
        except ArtifactError as exc:
            raise ModelInputError(f"model {source.spec}: {exc}") from None
    digest = hashlib.sha256(manifest_bytes(entries)).hexdigest()
    if digest != source.tree_digest:
        raise ModelInputError(f"model {source.spec} changed on disk since it was resolved; nothing was frozen")
    return digest
