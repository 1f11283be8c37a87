"""The Main's prior: a landscape file the user supplies (`rsi-master run --prior FILE`), or none.

Without one (the default) the Main decides from the run's own evidence (`_evidence`). With one,
the file is checked before the run is created, stored in the run's artifact store and named by
its digest in `orchestra.start` (`prior`), so that a resume, every slot process and the audit
read the very landscape the run planned with, whatever the file on disk became since. The
landscape file in force for `rsi-master landscape` and `rsi-master tasks`
(`RSI_MASTER_LANDSCAPE`, else the shipped one) is not the Main's: naming the shipped file is
`--prior shipped`.

A prior must describe the run's task (`check_prior`): curves for it, each of a family the task
has. One that does not (another task's landscape, a simulated world's pilot for another
world) is refused with one line before the run is created: planned with, it would rank
nothing and still switch off the evidence the Main decides from without one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..events import OrchestraStart, payload_of
from ..landscape import SHIPPED, CurveLabel, Landscape, LandscapeError, dumps, load, loads

if TYPE_CHECKING:
    from ..expos import RunReader
    from ..landscape import Landscape
    from ..tasks import Task

__all__ = [
    "PRIOR_ARTIFACT",
    "SHIPPED_PRIOR",
    "check_prior",
    "prior_landscape",
    "read_prior",
    "run_prior",
    "store_prior",
]

SHIPPED_PRIOR = "shipped"  # names the landscape file shipped with the package
PRIOR_ARTIFACT = "prior_landscape"
_cache: dict[str, Landscape] = {}
_named: dict[str, str | None] = {}  # run directory -> the prior its orchestra.start names


def read_prior(source: str | Path | Landscape) -> Landscape:
    """The landscape a prior names: a `Landscape`, `shipped`, or a file (a one-line
    `LandscapeError` for one that is missing or does not parse). Reads nothing of the run."""

    if isinstance(source, Landscape):
        return source
    path = SHIPPED if str(source) == SHIPPED_PRIOR else Path(source)
    if not path.is_file():
        raise LandscapeError(f"{path}: no such landscape file (--prior takes a landscape file or `shipped`)")
    return load(path)


def check_prior(landscape: Landscape, task: Task) -> None:
    """A one-line `LandscapeError` unless `landscape` has curves for `task` (a `Task`: its name and
    generator families) and every curve names one of its families and only knobs that family has."""

    curves = landscape.curves(task.name)
    if not curves:
        measured = ", ".join(sorted(t for t, tl in landscape.tasks.items() if tl.curves)) or "none"
        raise LandscapeError(
            f"the prior has no curves for task {task.name!r} (it has curves for: {measured}); give a landscape "
            "measured on this task (`rsi-master landscape measure`, `rsi-master sim pilot` for a simulated one) "
            "or no --prior"
        )
    families = task.generators()
    for label in sorted(curves):
        parsed = CurveLabel.parse(label)
        gen = families.get(parsed.family)
        if gen is None:
            raise LandscapeError(
                f"the prior's curve {label!r} names no family of task {task.name!r} "
                f"(its families: {', '.join(sorted(families))}): the prior is another task's landscape"
            )
        unknown = sorted({k for k, _ in parsed.knobs} - {k.name for k in gen.knobs})
        if unknown:
            raise LandscapeError(
                f"the prior's curve {label!r} fixes knob {unknown[0]!r}, which family {parsed.family!r} "
                f"of task {task.name!r} does not have"
            )


def store_prior(reader: RunReader, landscape: Landscape) -> str:
    """Store the landscape in the run (its canonical JSON) and return its digest."""

    return str(reader.store.put_bytes(dumps(landscape).encode()))


def prior_landscape(reader: RunReader, digest: str) -> Landscape:
    """The stored prior of digest `digest`, checked against it (read once per process)."""

    hit = _cache.get(digest)
    if hit is None:
        hit = _cache[digest] = loads(reader.store.read_bytes(digest).decode(), f"prior {digest[:12]}")
    return hit


def run_prior(reader: RunReader) -> Landscape | None:
    """The run's prior (its `orchestra.start` names it), None for a run without one."""

    where = str(reader.path)
    if where not in _named:
        starts = reader.own_events("orchestra.start")
        if not starts:
            return None  # not recorded yet: nothing to remember either
        _named[where] = payload_of(starts[0], OrchestraStart).prior
    digest = _named[where]
    return prior_landscape(reader, digest) if digest else None
