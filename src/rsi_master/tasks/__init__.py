"""The task suite: four PostTrainBench-style tasks in pure Python (no torch).

Each task generates training data through knob-driven generator families, holds sealed
`dev`/`review`/`final` evaluation sets with stable sample IDs, renders prompts with a
fixed template, and scores outputs with a real checker (integer match, parsed JSON,
executed programs, short answers). See `docs/tasks.md`.
"""

from ._arithmetic import ArithmeticTask
from ._base import EVAL_SIZE, PARTIAL_CAP, FamilySpec, Problem, SealedExhaustedError, SuiteTask
from ._dir import (
    FileTask,
    PoolItem,
    TaskConfig,
    TaskInputError,
    load_public_task,
    load_task_dir,
    model_output_boundary,
)
from ._dsl import DslError
from ._function_calling import FunctionCallingTask
from ._knobs import validate_params
from ._knowledge import KnowledgeTask
from ._pool import (
    POOL,
    POOL_PROMPTS,
    SAMPLE_PAIRS,
    SAMPLING_FAMILIES,
    SELF_DISTILL,
    pool_families,
    raw_fields,
    sample_items,
    sampled_rows,
)
from ._program_synthesis import ProgramSynthesisTask
from ._protocol import (
    MAX_LEARNING_RATE,
    SPLITS,
    Decoding,
    EvalItem,
    GeneratorFamily,
    Knob,
    Score,
    Split,
    Task,
    TaskHints,
    task_hints,
)
from ._registry import UnknownTaskError, get_task, list_tasks, resolve_task
from ._seal_key import PUBLIC_SEAL_KEY, SealKey
from ._sim_task import SIM_ROW_KEY, WEB_SOURCE, SimTask, web_row, web_trace
from ._spec import generators_spec, items_digest, source_digest, task_source_files, task_spec

__all__ = [
    "EVAL_SIZE",
    "MAX_LEARNING_RATE",
    "PARTIAL_CAP",
    "POOL",
    "POOL_PROMPTS",
    "PUBLIC_SEAL_KEY",
    "SAMPLE_PAIRS",
    "SAMPLING_FAMILIES",
    "SELF_DISTILL",
    "SIM_ROW_KEY",
    "SPLITS",
    "WEB_SOURCE",
    "ArithmeticTask",
    "Decoding",
    "DslError",
    "EvalItem",
    "FamilySpec",
    "FileTask",
    "FunctionCallingTask",
    "GeneratorFamily",
    "Knob",
    "KnowledgeTask",
    "PoolItem",
    "Problem",
    "ProgramSynthesisTask",
    "Score",
    "SealKey",
    "SealedExhaustedError",
    "SimTask",
    "Split",
    "SuiteTask",
    "Task",
    "TaskConfig",
    "TaskHints",
    "TaskInputError",
    "UnknownTaskError",
    "generators_spec",
    "get_task",
    "items_digest",
    "list_tasks",
    "load_public_task",
    "load_task_dir",
    "model_output_boundary",
    "pool_families",
    "raw_fields",
    "resolve_task",
    "sample_items",
    "sampled_rows",
    "source_digest",
    "task_hints",
    "task_source_files",
    "task_spec",
    "validate_params",
    "web_row",
    "web_trace",
]
