"""The research landscape: what recipes of each task reach with how much training.

A landscape is measured learning curves (a recipe's `dev` score at multiples of a default
experiment), base and reference scores and probes per task, stored in one versioned file
(`landscape.json`, shipped beside this module) and read by the Main when it plans. Curves
are named by one label grammar (`CurveLabel`: `family[knob=value]+method@bN@sS`).
`rsi-master landscape measure` measures and rebuilds the file; `rsi-master landscape report`
prints it. See docs/landscape.md.

Layering: above `tasks` and `runtime` (measuring trains and evaluates through the runtime,
imported only when a measurement runs), below `orchestra`, which reads it.
"""

from ._build import build, mean_curve
from ._expect import affordable_multiple, expected_scores
from ._file import ENV_VAR, SHIPPED, LandscapeError, dumps, landscape_path, load, loads, save
from ._label import CURVE_BATCH, CurveLabel, LabelError
from ._measure import CURVE_MULTIPLES, CURVE_SPEC, DEFAULT_EXAMPLES, Measurer, curve_key, parent_label, step_multiple
from ._model import (
    FORMAT_VERSION,
    Base,
    Crossing,
    Curve,
    DefaultExperiment,
    FamilyGap,
    Landscape,
    Point,
    Probe,
    Reference,
    Targets,
    TaskLandscape,
    TaskTargets,
)
from ._plan import TASK_ORDER, plan, run_plan
from ._report import expected_rows, markdown_lines
from ._results import BaseRow, CurveRow, ProbeRow, ReferenceRow, Row, RowPoint, append_row, read_rows, write_rows
from ._sim_fit import sim_calibration
from ._sim_pilot import PILOT_MULTIPLES, PILOT_SEEDS, PILOT_UNIT, pilot_seconds, sim_pilot
from ._targets import SINGLE_RUN_GAP, target_lines, targets

__all__ = [
    "CURVE_BATCH",
    "CURVE_MULTIPLES",
    "CURVE_SPEC",
    "DEFAULT_EXAMPLES",
    "ENV_VAR",
    "FORMAT_VERSION",
    "PILOT_MULTIPLES",
    "PILOT_SEEDS",
    "PILOT_UNIT",
    "SHIPPED",
    "SINGLE_RUN_GAP",
    "TASK_ORDER",
    "Base",
    "BaseRow",
    "Crossing",
    "Curve",
    "CurveLabel",
    "CurveRow",
    "DefaultExperiment",
    "FamilyGap",
    "LabelError",
    "Landscape",
    "LandscapeError",
    "Measurer",
    "Point",
    "Probe",
    "ProbeRow",
    "Reference",
    "ReferenceRow",
    "Row",
    "RowPoint",
    "Targets",
    "TaskLandscape",
    "TaskTargets",
    "affordable_multiple",
    "append_row",
    "build",
    "curve_key",
    "dumps",
    "expected_rows",
    "expected_scores",
    "landscape_path",
    "load",
    "loads",
    "markdown_lines",
    "mean_curve",
    "parent_label",
    "pilot_seconds",
    "plan",
    "read_rows",
    "run_plan",
    "save",
    "sim_calibration",
    "sim_pilot",
    "step_multiple",
    "target_lines",
    "targets",
    "write_rows",
]
