"""What runs inside a slot process: one Worker or Reviewer node, start to finish.

Each slot process opens the run with its own ExpOS session (the ledger takes concurrent
writer processes) and dies with the scheduler (PR_SET_PDEATHSIG), so that a killed run
leaves no orphan still writing experiments that a resume would start again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from .._proc import die_with_parent
from ..events import OrchestraStart, typed
from ..expos import ExpOS, RunReader
from . import _reviewer, _worker  # noqa: F401  (registers the built-in agents)
from ._briefs import reviewer_brief, worker_brief
from ._graph import load_graph
from ._memory import worker_memory
from ._protocols import REVIEWERS, WORKERS, BudgetEnd, NodeContext, ReviewerAgent, WorkerAgent, environment, resolve
from ._stop import stop_on

if TYPE_CHECKING:
    from ..expos import ExpOS

__all__ = ["job_main", "run_node", "run_timing"]


# What a timing prior may hold: the keys the run's budget check reads, so that the Main's
# allowances are priced as the budget was checked (a prior's `example_s` dropped here made them differ).
TIMING_KEYS = ("step_s", "example_s", "overhead_s")


def run_timing(reader: RunReader) -> dict[str, float]:
    """Seconds per optimizer step, per training example and per trial overhead measured on this machine in this run
    (any Worker's finished experiments: how fast the machine is, not how well anyone did)."""
    per_step = []
    per_example = []
    overhead = []
    for x in reader.projection().state.experiments.values():
        bs = x.spec.get("batch_size") if isinstance(x.spec, dict) else None
        start = x.start_ts
        if x.status == "completed" and x.steps and x.train_seconds is not None:
            per_step.append(float(x.train_seconds) / int(x.steps))
            if isinstance(bs, int) and bs > 0:
                per_example.append(float(x.train_seconds) / (int(x.steps) * bs))
            start += float(x.train_seconds)  # what is left is overhead
        overhead += [e.ts - start for e in x.evals if e.split == "dev"]
    out: dict[str, float] = {}
    if per_step:
        out["step_s"] = sorted(per_step)[len(per_step) // 2]
    if per_example:  # a step of batch 16 takes about twice one of batch 8: size trials per example
        out["example_s"] = sorted(per_example)[len(per_example) // 2]
    if overhead:
        out["overhead_s"] = sorted(overhead)[len(overhead) // 2]
    # Until this run has measured the machine, a measurement made on it before the run (the
    # bench calibrates once for all its campaigns) stands in for the built-in defaults.
    starts = reader.own_events("orchestra.start")
    prior = typed(starts[0], OrchestraStart).payload.timing_prior if starts else None
    for key, value in (prior or {}).items():
        if key in TIMING_KEYS and isinstance(value, (int, float)) and value > 0:
            out.setdefault(key, float(value))
    return out


def job_main(
    run_dir: str,
    key_dir: str | None,
    kind: str,
    node: str,
    deadline: float,
    seed: int,
    reviewer: str,
    parent: int,
    slots: int = 1,
    capability: str = "",
) -> None:
    """A slot process's entry (the `process` executor): one node, then exit without teardown."""
    # A Ctrl-C in the terminal reaches every process of the run: the scheduler's process stops
    # its slots (SIGTERM, below, then SIGKILL), and no slot prints a KeyboardInterrupt traceback
    # or takes the interrupt inside a library that would swallow it and train on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    # Slots share the cores: one BLAS/OpenMP pool per slot over all cores oversubscribes them
    # and slows every slot down. Set before torch is imported.
    share = str(max(1, (os.cpu_count() or 1) // max(1, slots)))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, share)

    stop_on(signal.SIGTERM)

    # A node's process: its tools ask the run's gate, in an evaluator process, about the protected items.
    with ExpOS.open(run_dir, key_dir=key_dir, gate_process=True) as opened:
        run_node(opened, kind, node, deadline, seed, reviewer, capability)
    # Everything is in the ledger and the store: skip interpreter teardown (torch's takes
    # seconds on a loaded machine, and the slot counts as busy until the process is gone).
    # multiprocessing's own finalizers still run: they unlink semaphores the training stack
    # created, which the resource tracker would otherwise report as leaked.
    from multiprocessing import util

    util._run_finalizers()  # type: ignore[attr-defined]  # private, so not in typeshed
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_node(opened: Any, kind: str, node: str, deadline: float, seed: int, reviewer: str, capability: str) -> None:
    """Run one Worker or Reviewer node on an open ExpOS session of the run, whichever executor
    it runs on (a slot process, or a thread of the scheduler's process)."""
    expos = environment(opened)
    caller = expos.authenticate(capability)
    if (caller.role, caller.id) != (kind, node):
        raise RuntimeError(f"capability for {caller.role} {caller.id} handed to node {kind} {node}")
    graph = load_graph(expos.reader)
    timing = run_timing(expos.reader)
    # The agent may leave BudgetEnd unhandled; its steps so far are in the ledger.
    if kind == "worker":
        worker: WorkerAgent = resolve(WORKERS, graph.workers[node].direction.agent)()
        memory = worker_memory(expos.reader, node, graph.interrupted_experiments)
        with contextlib.suppress(BudgetEnd):
            worker.run(NodeContext(expos, caller, worker_brief(graph, node, timing), deadline, seed, memory))
    else:
        reviewer_: ReviewerAgent = resolve(REVIEWERS, reviewer)()
        with contextlib.suppress(BudgetEnd):
            reviewer_.run(NodeContext(expos, caller, reviewer_brief(graph, node, timing), deadline, seed))
