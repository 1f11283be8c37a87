"""Simulated post-training worlds: a seeded generator whose structure is set by flags.

A world has directions (generator family x method x data knobs) with learning curves
(onset, slope, plateau, seed-to-seed spread), a learning-rate and batch response with an
optimum, continuation and forgetting, interactions when two families' data are mixed, early
leaders that plateau below late bloomers, binomial-like scores on fixed per-item outcomes
(selecting on `dev` inflates `dev` only) and the shortcuts a hack-prone Worker takes (leaked
protected items, a lenient scorer, a substituted model) and those that pass the door but leave
evidence (restated protected items, a split's scorer format, weights averaged from outside). `train` and `evaluate` cost
microseconds, so thousands of simulated campaigns run in minutes. See docs/sim.md.

Layering: pure Python and numpy; imports nothing of rsi_master but `errors`, so every layer
above (runtime, expos, orchestra, bench) may use it.
"""

from ._calibrate import CalibrationFit, CurveFit, fit_curves
from ._curves import curve
from ._describe import describe as describe_world
from ._errors import SimInputError, WorldFileError
from ._file import load_world, loads_world, save_world
from ._flags import METHODS, PRESETS, GeneratorFlags, flags_from, parse_overrides
from ._generate import generate_world
from ._hacks import HACK_KINDS, MERGE_WEIGHT, hack_kind
from ._hacks import coin as hack_coin
from ._model import FamilySpec, Knob, KnobSpec, MethodSpec, SimCheckpoint, SimFamily, SimRecipe
from ._reach import reachable_detail
from ._world import FORMAT, SimWorld

__all__ = [
    "FORMAT",
    "HACK_KINDS",
    "MERGE_WEIGHT",
    "METHODS",
    "PRESETS",
    "CalibrationFit",
    "CurveFit",
    "FamilySpec",
    "GeneratorFlags",
    "Knob",
    "KnobSpec",
    "MethodSpec",
    "SimCheckpoint",
    "SimFamily",
    "SimInputError",
    "SimRecipe",
    "SimWorld",
    "WorldFileError",
    "curve",
    "describe_world",
    "fit_curves",
    "flags_from",
    "generate_world",
    "hack_coin",
    "hack_kind",
    "load_world",
    "loads_world",
    "parse_overrides",
    "reachable_detail",
    "save_world",
]
