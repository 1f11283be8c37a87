"""Tasks from directories: `task.toml` plus JSONL splits, scored by built-in or user scorers.

See docs/your-model.md, "Task directories", for the format.
"""

from ._config import CONFIG_VERSION, TaskConfig
from ._errors import TaskInputError
from ._file_task import FileTask, PoolItem, load_public_task, load_task_dir, model_output_boundary
from ._sandbox import network_isolation, run_unit_tests
from ._scorers import Scorer, normalise_answer

__all__ = [
    "CONFIG_VERSION",
    "FileTask",
    "PoolItem",
    "Scorer",
    "TaskConfig",
    "TaskInputError",
    "load_public_task",
    "load_task_dir",
    "model_output_boundary",
    "network_isolation",
    "normalise_answer",
    "run_unit_tests",
]
