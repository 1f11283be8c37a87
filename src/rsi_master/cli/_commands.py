"""The `rsi-master` subcommands: each one's name, the module that implements it and its line of
help, in the order `rsi-master --help` lists them.

The parser imports a command's module only when that command runs (`_main.build_parser`), so
`rsi-master --help` reads this table alone and each command loads only what it runs; a module's
commands stand together here, since it registers them all at once.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["COMMANDS", "Command", "help_of"]


class Command(NamedTuple):
    module: str  # the `rsi_master.cli` module whose `add_parser` registers the command
    help: str


COMMANDS: dict[str, Command] = {
    "demo": Command("_demo", "record a small provenance chain into a new run directory and verify it"),
    "init": Command("_init", "create a run directory for a task, freezing its task contract as the first event"),
    "verify": Command("_verify", "check that nothing in a run directory changed after the fact"),
    "log": Command("_log", "show a run's ledger events"),
    "checkpoint": Command("_checkpoint", "sign the ledger's current Merkle root and export the signed checkpoint"),
    "audit": Command("_audit", "audit every submission of an ExpOS run for the twelve integrity violations"),
    "lineage": Command("_lineage", "show the chain from a checkpoint (or experiment id) back to the base model"),
    "tasks": Command("_tasks", "list the tasks with their generator families and measured base/reference scores"),
    "landscape": Command("_landscape", "measure the research landscape (learning curves per recipe) and report it"),
    "sim": Command("_sim", "simulated post-training worlds: generate, describe, calibrate, pilot"),
    "data": Command("_pipeline", "generate, filter, mix or deduplicate training data (JSONL)"),
    "train": Command("_pipeline", "train a checkpoint (sft, lora, dpo, grpo) on a JSONL dataset"),
    "eval": Command("_pipeline", "score a checkpoint with the sealed evaluator on a split"),
    "pipeline": Command("_pipeline", "generate data, train, and evaluate in one go, showing progress"),
    "run": Command(
        "_run", "post-train the base model on a task with Workers, Reviewers and a Main agent under a budget"
    ),
    "resume": Command("_resume", "continue a run of `rsi-master run` after it was stopped or killed"),
    "report": Command("_report", "write a run's HTML report, or the overview and comparison of several runs"),
    "serve": Command(
        "_serve", "serve a run's report (or a directory of runs' overview) live, redrawn as the ledger grows"
    ),
    "guide": Command(
        "_guide",
        "give a running campaign's Main agent guidance: text, directions to prefer or avoid, a Worker to stop, pause",
    ),
    "bench": Command(
        "_bench", "run every configuration (full system, ablations, baselines) and write the table, JSON and plot"
    ),
    "mcp": Command(
        "_mcp", "serve a caller's ExpOS tools of a run over the Model Context Protocol (stdio, or HTTP on loopback)"
    ),
    "door": Command("_door", "serve a run's ExpOS tools on a Unix socket (the door agents reach the run through)"),
    "capability": Command("_door", "issue a capability (role, node id, expiry) for a run; prints the token"),
    "agent": Command(
        "_door", "run an external agent's command (after --) behind the trust boundary, with a capability and the door"
    ),
    "export": Command(
        "_export", "write a run (its ledger on any backend) out as an ordinary run directory that verifies on its own"
    ),
    "ledger-install": Command(
        "_export", "install the ledger schema in a PostgreSQL database and let roles create runs there"
    ),
}


def help_of(name: str) -> str:
    return COMMANDS[name].help
