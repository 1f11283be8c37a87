"""Sealed evaluation sets: size, stable IDs, determinism, and zero overlap with generators."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rsi_master.tasks import PUBLIC_SEAL_KEY, SPLITS, ArithmeticTask, Problem, SealKey, get_task, items_digest
from rsi_master.tasks._text import normalise

from .helpers import TASK_NAMES

# The sealed sets are part of every task contract: a change must be deliberate.
# If you changed a sampler on purpose, update these digests and say so in docs/tasks.md.
PINNED_DEV_DIGESTS: dict[str, str] = {
    "arithmetic": "d7b7607f3ffd5716ac79a85256e88806009db3bd56a8203d12c401b6da78b467",
    "function_calling": "096d5389eb3eb064d110ae11c3b774480a9cf9519a10c92aa0c4af036917e88b",
    "knowledge": "2bee035e256bebc185dd9be35432a94d6cfde6aa0e790ace37c00383486b2e83",
    "program_synthesis": "9e9b72e9ed0493079f93adaa3f601a9ed0b4cae3dea2b262b7a5ce71d02b335a",
}


def _questions(task) -> set[str]:
    return {normalise(item.prompt) for split in SPLITS for item in task.eval_items(split)}


@pytest.mark.parametrize("name", TASK_NAMES)
def test_splits_have_200_unique_items_with_stable_ids(name):
    task = get_task(name)
    seen: set[str] = set()
    for split in SPLITS:
        items = task.eval_items(split)
        assert [item.sample_id for item in items] == [f"{name}/{split}/{i:04d}" for i in range(200)]
        prompts = {normalise(item.prompt) for item in items}
        assert len(prompts) == 200
        assert not prompts & seen, "an item appears in two splits"
        seen |= prompts
        json.dumps([item.reference for item in items])  # references are JSON-able
    with pytest.raises(ValueError, match="unknown split"):
        task.eval_items("test")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", TASK_NAMES)
def test_eval_items_are_copies(name):
    task = get_task(name)
    before = items_digest(task, "dev")
    items = task.eval_items("dev")
    if isinstance(items[0].reference, dict):
        items[0].reference.clear()
    items.clear()
    assert len(task.eval_items("dev")) == 200
    assert items_digest(task, "dev") == before


def test_eval_sets_identical_in_a_fresh_process_with_another_hash_seed():
    code = (
        "import json; from rsi_master.tasks import get_task, list_tasks, items_digest;"
        "print(json.dumps({n: [items_digest(get_task(n), s) for s in ('dev','review','final')] for n in list_tasks()}))"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": src}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120)
    theirs = json.loads(out.stdout)
    ours = {n: [items_digest(get_task(n), s) for s in SPLITS] for n in TASK_NAMES}
    assert theirs == ours


@pytest.mark.parametrize("name", TASK_NAMES)
def test_dev_set_is_pinned(name):
    if name not in PINNED_DEV_DIGESTS:
        pytest.fail(f"pin {name}: {items_digest(get_task(name), 'dev')}")
    assert items_digest(get_task(name), "dev") == PINNED_DEV_DIGESTS[name], (
        "the sealed dev set changed; if deliberate, update PINNED_DEV_DIGESTS and docs/tasks.md"
    )


def test_another_seal_seed_gives_other_items():
    private = ArithmeticTask(seal_seed=99)
    public = get_task("arithmetic")
    assert private.eval_items("dev")[0].prompt != public.eval_items("dev")[0].prompt


# --- generators never emit a sealed item ---------------------------------------------

# Narrow settings push the generators into the evaluation distribution on purpose.
OVERLAP_PARAMS = {
    "arithmetic": [{}, {"min_digits": 1, "max_digits": 2, "templates": 1}],
    "function_calling": [{}, {"n_shown": 1, "phrasings": 1}],
    # Contamination-check view of the knob extremes: tests/tasks/test_knowledge.py.
    "knowledge": [{}, {"n_facts": 2, "two_hop": 1.0}, {"n_facts": 6, "two_hop": 0.0, "relations": 1}],
    "program_synthesis": [
        {"disambiguate": False},
        {"max_depth": 1, "n_examples": 2, "min_len": 1, "max_len": 3, "disambiguate": False},
    ],
}
SEEDS = range(3)
N_PER_SEED = 600


def _request(prompt: str) -> str:
    return normalise(prompt.split("Request:", 1)[1].split("\n", 1)[0])


@pytest.mark.heavy
@pytest.mark.parametrize("name", TASK_NAMES)
def test_generators_never_emit_a_sealed_item(name):
    task = get_task(name)
    sealed_prompts = _questions(task)
    raw = [item.prompt for split in SPLITS for item in task.eval_items(split)]
    sealed_requests = {_request(p) for p in raw} if name == "function_calling" else set()
    # Families draw the same problems for the same seed, so each family gets its own
    # seeds: more distinct problems for the same cost.
    for index, family in enumerate(task.generators().values()):
        for params in OVERLAP_PARAMS[name]:
            for seed in (index * len(SEEDS) + s for s in SEEDS):
                examples = family.generate(params, seed, N_PER_SEED)
                prompts = {normalise(example["prompt"]) for example in examples}
                assert not prompts & sealed_prompts, (family.name, params, seed)
                if sealed_requests:
                    assert not {_request(e["prompt"]) for e in examples} & sealed_requests


def test_function_calling_requests_really_collide_without_the_seal():
    """Guard on the test above: the narrow setting does hit sealed requests when unsealed."""
    task = get_task("function_calling")
    sealed = {_request(item.prompt) for split in SPLITS for item in task.eval_items(split)}
    import random

    rng = random.Random(0)
    drawn = {
        _request(task.render(task.sample(rng, {**task.eval_params, "n_shown": 1, "phrasings": 1}).question))
        for _ in range(3000)
    }
    assert drawn & sealed


def test_arithmetic_seals_equations_not_only_wording():
    task = get_task("arithmetic")
    sealed_equations = set()
    for split in SPLITS:
        for item in task.eval_items(split):
            a, b = re.findall(r"\d+", item.prompt)
            equation = f"{a}+{b}" if int(a) + int(b) == item.reference else f"{a}-{b}"
            assert normalise(equation) in task.sealed_keys
            sealed_equations.add(equation)
    assert len(sealed_equations) == 600
    drawn = [e["completion"].strip().split("=")[0] for e in task.generator("restate").generate({}, 0, 4000)]
    assert not set(drawn) & sealed_equations


def test_arithmetic_longer_problems_do_not_open_with_a_sealed_one():
    # A three-operand problem whose first operation is a sealed item's equation carries that
    # item's sentences; the contamination check refused such a row from an honest Worker.
    task = get_task("arithmetic")
    sealed = {e for e in task.sealed_keys if re.fullmatch(r"\d+[+-]\d+", e)}
    params = {"min_digits": 1, "max_digits": 2, "operands": 3, "ops": "mixed", "templates": 3}
    restated = [e["completion"].splitlines()[0].strip() for e in task.generator("restate").generate(params, 1, 3000)]
    openings = {re.match(r"\d+[+-]\d+", line).group(0) for line in restated}
    assert len(openings) > 1000 and not openings & sealed


def test_seal_rejects_a_sealed_problem(monkeypatch):
    task = ArithmeticTask()
    item = task.eval_items("review")[5]
    question = item.prompt.removeprefix("Question: ").removesuffix("\nAnswer:")
    sealed = Problem(question, item.reference, data=((1, 1), ("+",)))
    fresh = Problem("Ann has 1 apples. Then 1 more arrive. How many apples now?", 2, data=((1, 1), ("+",)))
    queue = [sealed, sealed, fresh]
    monkeypatch.setattr(task, "sample", lambda rng, params: queue.pop(0))
    examples = task.generator("answer_only").generate({}, 0, 1)
    assert [example["prompt"] for example in examples] == [task.render(fresh.question)]
    assert not queue


# --- secret seals: a run's protected splits come from a secret, not from the source ----

SECRET = SealKey(secret=bytes(range(32)))


def test_a_secret_key_draws_other_items_with_the_same_ids():
    public, private = get_task("knowledge"), get_task("knowledge", seal_key=SECRET)
    assert private is get_task("knowledge", seal_key=SealKey(secret=bytes(range(32))))
    assert [i.sample_id for i in private.eval_items("dev")] == [i.sample_id for i in public.eval_items("dev")]
    assert not {i.prompt for i in private.eval_items("dev")} & {i.prompt for i in public.eval_items("dev")}
    # Each split has its own seed: one split's items say nothing about another's.
    assert len({SECRET.split_seed("knowledge", s) for s in SPLITS} | {SECRET.split_seed("arithmetic", "dev")}) == 4


def test_seal_keys_refuse_short_secrets_and_never_show_the_secret():
    with pytest.raises(ValueError, match="at least 16 bytes"):
        SealKey(secret=b"short")
    with pytest.raises(ValueError, match="exactly one"):
        SealKey(secret=bytes(32), seed=1)
    with pytest.raises(ValueError, match="seal_key must be a SealKey"):
        get_task("knowledge", seal_key=b"x" * 32)  # type: ignore[arg-type]
    assert bytes(range(32)).hex() not in repr(SECRET) + str(SECRET)
    assert SealKey.from_wire(SECRET.to_wire()) == SECRET and SealKey.from_wire({"seed": 3}) == SealKey(seed=3)
    with pytest.raises(ValueError):
        SealKey.from_wire({"secret": "zz"})


def test_generators_keep_clear_of_a_secret_seal():
    # The narrow function-calling setting collides with sealed requests (guarded above), so
    # a generator of a secret-sealed task must reject the secret items, not the public ones.
    task = get_task("function_calling", seal_key=SECRET)
    sealed = {_request(item.prompt) for split in SPLITS for item in task.eval_items(split)}
    public = {_request(item.prompt) for split in SPLITS for item in get_task("function_calling").eval_items(split)}
    examples = task.generator(next(iter(task.generators()))).generate({"n_shown": 1, "phrasings": 1}, 0, 3000)
    drawn = {_request(e["prompt"]) for e in examples}
    assert not drawn & sealed
    assert drawn & (public - sealed), "the public items are no longer protected and need not be avoided"


def test_a_runs_protected_items_are_not_regenerated_from_the_source(tmp_path):
    """The attack: a shell, the source, the run directory, but no key directory."""
    from rsi_master.expos import ExpOS

    with ExpOS.create(tmp_path / "run", "function_calling", eval_limit=4) as run:
        pinned = run.contract.evaluator.items_sha256
        run_id = run.run.run_id
        # The key holder does reproduce them: the contract's digests are checkable.
        assert {s: items_digest(run.protected_task(), s) for s in SPLITS} == pinned
    code = f"""
import json
from rsi_master.tasks import get_task, items_digest
from rsi_master.tasks._seal_key import PUBLIC_SEED
from rsi_master.tasks._text import derive_seed
seeds = [PUBLIC_SEED, *range(PUBLIC_SEED - 20, PUBLIC_SEED + 20), *range(20), derive_seed({run_id!r})]
print(json.dumps(sorted({{items_digest(get_task("function_calling", seal_seed=s), split)
                          for s in seeds for split in ("dev", "review", "final")}})))
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    env.pop("RSI_MASTER_KEY_DIR")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    regenerated = set(json.loads(out.stdout))
    assert len(regenerated) > 100 and not regenerated & set(pinned.values())


def test_derived_split_seeds_draw_the_same_splits_and_only_those():
    derived = SECRET.derive("knowledge", SPLITS)
    assert derived.secret is None and not derived.is_public
    assert [derived.split_seed("knowledge", s) for s in SPLITS] == [SECRET.split_seed("knowledge", s) for s in SPLITS]
    with pytest.raises(ValueError, match="no seed for task 'arithmetic'"):
        derived.split_seed("arithmetic", "dev")
    assert SealKey.from_wire(derived.to_wire()) == derived
    assert str(SECRET.split_seed("knowledge", "dev")) not in repr(derived)
    items = [i.sample_id for i in get_task("knowledge", seal_key=derived).eval_items("final")]
    assert items == [i.sample_id for i in get_task("knowledge", seal_key=SECRET).eval_items("final")]
    assert PUBLIC_SEAL_KEY.derive("knowledge", SPLITS) is PUBLIC_SEAL_KEY
    with pytest.raises(ValueError):
        SealKey.from_wire({"splits": [["knowledge", "dev", "x"]]})
