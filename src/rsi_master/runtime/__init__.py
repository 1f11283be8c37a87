"""Layer 4: the embedded post-training runtime.

Data operations (generate, filter, mix, dedup), training (SFT, LoRA, DPO, GRPO through
TRL and PEFT), and the sealed evaluator that runs in its own process from a
digest-pinned copy of its code. Importing this package is light: torch, transformers
and TRL load only inside the functions that train or evaluate.
"""

from rsi_master.runtime._data import dedup, filter_data, generate, mix
from rsi_master.runtime._digest import dir_digest, sha256_bytes, sha256_file
from rsi_master.runtime._errors import (
    CheckpointLoadError,
    EvaluationError,
    InputChangedError,
    InvalidParameterError,
    SealSecretError,
    TrainingError,
)
from rsi_master.runtime._evaluate import evaluate
from rsi_master.runtime._jsonl import parse_jsonl, write_jsonl
from rsi_master.runtime._model import TinyLlamaSpec, base_model_digest, base_model_dir, base_model_record
from rsi_master.runtime._records import DataResult, EvalResult, SampleRecord, TrainConfig, TrainResult
from rsi_master.runtime._seal import (
    create_seal_secret,
    evaluator_digest,
    load_seal_key,
    operator_seal_key,
    private_seal,
    seal_commitment,
    seal_evaluator,
    seal_secret_path,
)
from rsi_master.runtime._sim import (
    CHECKPOINT_FILE as SIM_CHECKPOINT_FILE,
)
from rsi_master.runtime._sim import (
    read_sim_checkpoint,
    sim_evaluate,
    sim_recipe,
    sim_train,
    spend_simulated,
    write_sim_checkpoint,
)
from rsi_master.runtime._spec import METHODS, TrainSpec, make_spec
from rsi_master.runtime._train import train

__all__ = [
    "METHODS",
    "SIM_CHECKPOINT_FILE",
    "CheckpointLoadError",
    "DataResult",
    "EvalResult",
    "EvaluationError",
    "InputChangedError",
    "InvalidParameterError",
    "SampleRecord",
    "SealSecretError",
    "TinyLlamaSpec",
    "TrainConfig",
    "TrainResult",
    "TrainSpec",
    "TrainingError",
    "base_model_digest",
    "base_model_dir",
    "base_model_record",
    "create_seal_secret",
    "dedup",
    "dir_digest",
    "evaluate",
    "evaluator_digest",
    "filter_data",
    "generate",
    "load_seal_key",
    "make_spec",
    "mix",
    "operator_seal_key",
    "parse_jsonl",
    "private_seal",
    "read_sim_checkpoint",
    "seal_commitment",
    "seal_evaluator",
    "seal_secret_path",
    "sha256_bytes",
    "sha256_file",
    "sim_evaluate",
    "sim_recipe",
    "sim_train",
    "spend_simulated",
    "train",
    "write_jsonl",
    "write_sim_checkpoint",
]
