"""Layer 4: the embedded post-training runtime.

Data operations (generate, filter, mix, dedup), training (SFT, LoRA, DPO, GRPO through
TRL and PEFT), and the sealed evaluator that runs in its own process from a
digest-pinned copy of its code. Importing this package is light: torch, transformers
and TRL load only inside the functions that train or evaluate.
"""

from rsi_master.runtime._adapter import ADAPTER_BASE_FILE, adapter_base_digest, is_adapter
from rsi_master.runtime._backend import BACKENDS, EvalBackend, check_backend, make_backend
from rsi_master.runtime._chat import is_chat
from rsi_master.runtime._data import dedup, filter_data, generate, generate_rows, mix, mix_rows
from rsi_master.runtime._device import DeviceSettings, check_device, device_settings
from rsi_master.runtime._digest import dir_digest, sha256_bytes, sha256_file
from rsi_master.runtime._errors import (
    CheckpointLoadError,
    EvaluationError,
    EvaluatorDigestError,
    InputChangedError,
    InvalidParameterError,
    SealSecretError,
    SwappedBaseError,
    TrainingError,
)
from rsi_master.runtime._evaluate import evaluate
from rsi_master.runtime._hf_model import ModelInputError, ModelSource, hf_cache_dir, resolve_model, stage_model
from rsi_master.runtime._jsonl import jsonl_bytes, parse_jsonl, write_jsonl
from rsi_master.runtime._model import TinyLlamaSpec, base_model_digest, base_model_dir, base_model_record
from rsi_master.runtime._model_checks import check_chat_template, check_weight_file
from rsi_master.runtime._records import DataResult, EvalResult, SampleRecord, TrainConfig, TrainResult
from rsi_master.runtime._sample import SampleResult, sample
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
    "ADAPTER_BASE_FILE",
    "BACKENDS",
    "METHODS",
    "SIM_CHECKPOINT_FILE",
    "CheckpointLoadError",
    "DataResult",
    "DeviceSettings",
    "EvalBackend",
    "EvalResult",
    "EvaluationError",
    "EvaluatorDigestError",
    "InputChangedError",
    "InvalidParameterError",
    "ModelInputError",
    "ModelSource",
    "SampleRecord",
    "SampleResult",
    "SealSecretError",
    "SwappedBaseError",
    "TinyLlamaSpec",
    "TrainConfig",
    "TrainResult",
    "TrainSpec",
    "TrainingError",
    "adapter_base_digest",
    "base_model_digest",
    "base_model_dir",
    "base_model_record",
    "check_backend",
    "check_chat_template",
    "check_device",
    "check_weight_file",
    "create_seal_secret",
    "dedup",
    "device_settings",
    "dir_digest",
    "evaluate",
    "evaluator_digest",
    "filter_data",
    "generate",
    "generate_rows",
    "hf_cache_dir",
    "is_adapter",
    "is_chat",
    "jsonl_bytes",
    "load_seal_key",
    "make_backend",
    "make_spec",
    "mix",
    "mix_rows",
    "operator_seal_key",
    "parse_jsonl",
    "private_seal",
    "read_sim_checkpoint",
    "resolve_model",
    "sample",
    "seal_commitment",
    "seal_evaluator",
    "seal_secret_path",
    "sha256_bytes",
    "sha256_file",
    "sim_evaluate",
    "sim_recipe",
    "sim_train",
    "spend_simulated",
    "stage_model",
    "train",
    "write_jsonl",
    "write_sim_checkpoint",
]
