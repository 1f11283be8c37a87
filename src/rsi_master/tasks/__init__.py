"""The task suite: four PostTrainBench-style tasks in pure Python (no torch).

Each task generates training data through knob-driven generator families, holds sealed
`dev`/`review`/`final` evaluation sets with stable sample IDs, renders prompts with a
fixed template, and scores outputs with a real checker (integer match, parsed JSON,
executed programs, short answers). See `docs/tasks.md`.
"""

from ._arithmetic import ArithmeticTask
from ._base import EVAL_SIZE, PARTIAL_CAP, FamilySpec, Problem, SealedExhaustedError, SuiteTask
from ._dsl import DslError
from ._function_calling import FunctionCallingTask
from ._knowledge import KnowledgeTask
from ._program_synthesis import ProgramSynthesisTask
from ._protocol import SPLITS, Decoding, EvalItem, GeneratorFamily, Knob, Score, Split, Task, TaskHints, task_hints
from ._registry import UnknownTaskError, get_task, list_tasks, register_task
from ._seal_key import PUBLIC_SEAL_KEY, SealKey
from ._sim_task import SIM_ROW_KEY, SimTask
from ._spec import generators_spec, items_digest, source_digest, task_source_files, task_spec

__all__ = [
    "EVAL_SIZE",
    "PARTIAL_CAP",
    "PUBLIC_SEAL_KEY",
    "SIM_ROW_KEY",
    "SPLITS",
    "ArithmeticTask",
    "Decoding",
    "DslError",
    "EvalItem",
    "FamilySpec",
    "FunctionCallingTask",
    "GeneratorFamily",
    "Knob",
    "KnowledgeTask",
    "Problem",
    "ProgramSynthesisTask",
    "Score",
    "SealKey",
    "SealedExhaustedError",
    "SimTask",
    "Split",
    "SuiteTask",
    "Task",
    "TaskHints",
    "UnknownTaskError",
    "generators_spec",
    "get_task",
    "items_digest",
    "list_tasks",
    "register_task",
    "source_digest",
    "task_hints",
    "task_source_files",
    "task_spec",
]
