"""`rsi-master run`: grow a research graph on a task under a wall-clock budget, return a
better, verified, audited checkpoint, and end with a greppable summary."""

from __future__ import annotations

import argparse
from typing import Any

from ..agents import AgentsSetup, check_endpoints, record_setup, resolve_setup
from ..errors import RsiMasterError
from ..orchestra import RunSpec, make_display, start_run
from ..sim import SimWorld, flags_from, generate_world, load_world
from ._commands import help_of
from ._common import (
    apply_device,
    artifacts_arg,
    device_arg,
    env,
    executor_args,
    is_tty,
    key_dir_arg,
    ledger_arg,
    old_flag,
)
from ._report import report_for

NAME = "run"
HELP = help_of(NAME)

# The closing `key: value` lines, in order (scripts and agents parse them).
SUMMARY_KEYS = (
    "task",
    "backend",
    "final_score",
    "why",
    "base_score",
    "reference_score",
    "selected",
    "selected_model",
    "selected_review_score",
    "hacking_rate",
    "interception_rate",
    "blocked_attempts",
    "experiments",
    "workers",
    "reviews",
    "cross_worker_reviews",
    "decisions",
    "slot_utilisation",
    "llm_tokens",
    "llm_cost_usd",
    "budget_s",
    "spent_s",
    "trust_boundary",
    "summary_json",
    "run_dir",
    "report",
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    # knowledge: the task that moves above base within the default 5 minutes on a 2-core CPU.
    p.add_argument(
        "--task",
        default=env("task"),
        metavar="NAME_OR_DIR",
        help="a task of the embedded suite, or the path of a task directory (task.toml and JSONL splits: "
        "docs/your-model.md) (env RSI_MASTER_TASK; default knowledge; a simulated run's is its world's)",
    )
    p.add_argument(
        "--model",
        default=env("model"),
        metavar="PATH_OR_ID",
        help="base model: a Hugging Face model directory, or a repository id in the local Hugging Face "
        "cache (never downloaded); any causal LM with its tokenizer and chat template (env RSI_MASTER_MODEL; "
        "default: the shipped 1M-parameter model)",
    )
    sim = p.add_argument_group(
        "backend",
        "where experiments run: real training and the sealed evaluator, or a simulated world "
        "(rsi_master.sim) on a simulated clock, every other part unchanged (docs/sim.md)",
    )
    sim.add_argument(
        "--backend",
        choices=("real", "sim"),
        default=env("backend", "real"),
        help="experiment backend (env RSI_MASTER_BACKEND; default real)",
    )
    sim.add_argument("--world", default=None, metavar="FILE", help="sim: a world file (rsi-master sim generate)")
    old_flag(sim, "--landscape", "world", metavar="FILE")
    sim.add_argument(
        "--world-seed",
        type=int,
        default=None,
        metavar="N",
        help="sim: generate the world from this seed instead (default 0 without --world)",
    )
    old_flag(sim, "--landscape-seed", "world_seed", type=int, metavar="N")
    sim.add_argument("--preset", default="default", help="sim: generator preset for --world-seed (default default)")
    p.add_argument(
        "--budget",
        default=env("budget"),
        help="wall-clock budget: seconds or a duration such as 90s, 5m (env RSI_MASTER_BUDGET; default 5m, "
        "or the task's own where it declares one)",
    )
    p.add_argument(
        "--prior",
        default=env("prior"),
        metavar="LANDSCAPE",
        help="a landscape file (docs/landscape.md) the Main plans with, or `shipped` for the built-in suite's "
        "measured one (env RSI_MASTER_PRIOR; default: no prior, the Main decides from the run's own evidence)",
    )
    p.add_argument(
        "--slots",
        type=int,
        default=env("slots", "2"),
        help="parallel Worker/Reviewer processes (env RSI_MASTER_SLOTS; default 2)",
    )
    p.add_argument("--seed", type=int, default=env("seed", "0"), help="seed of the policies (env RSI_MASTER_SEED)")
    p.add_argument(
        "--dir",
        default=env("dir"),
        metavar="RUN_DIR",
        help="new run directory (env RSI_MASTER_DIR; default runs/<task>-<UTC time>)",
    )
    p.add_argument(
        "--eval-limit",
        type=int,
        default=env("eval_limit", "50"),
        help="evaluation items per split the agents use, dev and review (env RSI_MASTER_EVAL_LIMIT; default 50)",
    )
    p.add_argument(
        "--final-limit",
        type=int,
        default=env("final_limit", "0"),
        help="final items the harness scores the base and the returned checkpoint on, once each; 0 is "
        "the whole split (env RSI_MASTER_FINAL_LIMIT; default 0)",
    )
    hw = p.add_argument_group("hardware and checkpoints")
    device_arg(hw)
    executor_args(hw)
    hw.add_argument(
        "--gpus-per-slot",
        type=int,
        default=env("gpus_per_slot", "0"),
        metavar="N",
        help="GPUs each slot process gets as its own CUDA_VISIBLE_DEVICES; slots x N must not exceed the GPUs "
        "nvidia-smi shows; with --executor ray, the GPUs each node's Ray task asks the cluster for "
        "(env RSI_MASTER_GPUS_PER_SLOT; default 0: none assigned)",
    )
    hw.add_argument(
        "--eval-backend",
        choices=("transformers", "vllm"),
        default=env("eval_backend", "transformers"),
        help="how the sealed evaluator generates: batched transformers, or vLLM on a GPU (the [gpu] extra); "
        "sealed into the contract's evaluator digest (env RSI_MASTER_EVAL_BACKEND; default transformers)",
    )
    hw.add_argument(
        "--keep",
        choices=("all", "referenced"),
        default=env("keep", "all"),
        help="checkpoints kept at the end: all, or referenced (prune those never evaluated on review, submitted, "
        "selected or cited by a decision or review; recorded in the ledger) (env RSI_MASTER_KEEP; default all)",
    )
    agents = p.add_argument_group(
        "agents",
        "who plays each role: the programmatic agents (scripted, the offline "
        "default) or LLM agents over an OpenAI-compatible endpoint (llm)",
    )
    agents.add_argument(
        "--agents",
        choices=("scripted", "llm"),
        default=env("agents", "scripted"),
        help="every role's agent (env RSI_MASTER_AGENTS; default scripted)",
    )
    for role in ("main", "worker", "reviewer"):
        agents.add_argument(
            f"--{role}",
            default=env(role),
            metavar="AGENT",
            help=f"the {role} agent: scripted, llm, or package.module:Class "
            f"(env RSI_MASTER_{role.upper()}; default: --agents)",
        )
    agents.add_argument(
        "--llm-config",
        default=env("llm_config"),
        metavar="TOML",
        help="[llm], [main], [worker], [reviewer] tables of LLM settings (env RSI_MASTER_LLM_CONFIG)",
    )
    agents.add_argument(
        "--llm-provider",
        choices=("openai", "fake"),
        default=None,
        help="openai: any OpenAI-compatible endpoint; fake: the scripted offline model (env RSI_MASTER_LLM_PROVIDER)",
    )
    agents.add_argument(
        "--llm-base-url",
        default=None,
        metavar="URL",
        help="endpoint of every LLM role, e.g. http://localhost:8000/v1 (env RSI_MASTER_LLM_BASE_URL, "
        "per role RSI_MASTER_<ROLE>_BASE_URL)",
    )
    agents.add_argument(
        "--llm-model",
        default=None,
        metavar="NAME",
        help="model of every LLM role (env RSI_MASTER_LLM_MODEL, per role RSI_MASTER_<ROLE>_MODEL); "
        "the key comes from RSI_MASTER_LLM_API_KEY, RSI_MASTER_<ROLE>_API_KEY or OPENAI_API_KEY",
    )
    key_dir_arg(p)
    ledger_arg(p)
    artifacts_arg(p)
    p.set_defaults(handler=run, resumable=True)


# The exit status of `run` and `resume` when the run finished but returned no checkpoint (the
# summary's `final_score: n/a` and `why:` say so); 2 is an error before or while running.
NO_MODEL = 3


def print_summary(summary: dict[str, object]) -> int:
    """Print the closing lines; the exit status (0: a checkpoint was returned, else `NO_MODEL`)."""
    print("---")
    for key in SUMMARY_KEYS:
        v = summary.get(key)
        if key == "why" and v is None:
            continue  # only a run that returned no checkpoint says why
        if isinstance(v, float):
            v = f"{v:.4f}"
        print(f"{key}: {'n/a' if v is None else v}")
    return 0 if summary.get("selected") is not None else NO_MODEL


def agents_setup(args: argparse.Namespace) -> AgentsSetup | None:
    """The run's agents, checked before anything is written; None when every role is scripted."""
    choices = [args.main, args.worker, args.reviewer]
    if args.agents == "scripted" and all(c in (None, "scripted") for c in choices):
        return None

    explicit = {"provider": args.llm_provider, "base_url": args.llm_base_url, "model": args.llm_model}
    setup = resolve_setup(
        args.agents,
        main=args.main,
        worker=args.worker,
        reviewer=args.reviewer,
        config_file=args.llm_config,
        explicit=explicit,
    )
    check_endpoints(setup.llm.values())  # an endpoint nobody listens on: one line, before anything is written
    return setup


def world_arg(args: argparse.Namespace) -> SimWorld | None:
    """The world a `--backend sim` run simulates (None for the real backend), checked before
    anything is written: a file that does not parse or a bad preset is a one-line error."""
    if args.backend != "sim":
        if args.world is not None or args.world_seed is not None:
            raise RsiMasterError("--world and --world-seed are for --backend sim")
        return None

    if args.world is not None:
        if args.world_seed is not None:
            raise RsiMasterError("give --world FILE or --world-seed N, not both")
        return load_world(args.world)
    return generate_world(args.world_seed or 0, flags_from(args.preset), preset=args.preset)


def spec_from_args(args: argparse.Namespace) -> RunSpec:
    """The `RunSpec` the flags describe (the world and the agents checked on the way, before
    anything is written); `resolve_spec` checks the rest."""

    world = world_arg(args)
    setup = agents_setup(args)
    agents: dict[str, Any] = {}
    if setup is not None:
        agents = {role: setup.agents[role] for role in ("main", "worker", "reviewer")}
        agents["setup"] = lambda expos: record_setup(expos, setup)
    return RunSpec(
        task=args.task if args.task is not None or world is not None else "knowledge",
        budget=args.budget,
        backend=args.backend,
        world=world,
        model=args.model or None,
        # A simulated run has no evaluation backend: only one asked for beyond the default is refused.
        eval_backend=args.eval_backend if world is None or args.eval_backend != "transformers" else None,
        slots=args.slots,
        seed=args.seed,
        run_dir=args.dir,
        key_dir=args.key_dir,
        eval_limit=args.eval_limit,
        final_limit=args.final_limit,
        prior=args.prior or None,
        gpus_per_slot=args.gpus_per_slot,
        keep=args.keep,
        executor=args.executor,
        ray_address=args.ray_address,
        sim_speed=args.sim_speed,
        **agents,
    )


def run(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    if spec.world is None:  # a simulated run trains nothing
        apply_device(args)
    summary = start_run(spec, display=make_display(is_tty()))
    summary["report"] = report_for(summary.get("run_dir"), args.key_dir)
    return print_summary(summary)
