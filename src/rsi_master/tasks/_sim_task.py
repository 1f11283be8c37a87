"""A task built from a simulated world (`rsi_master.sim`): the `Task` protocol over
synthetic rows, so that a simulated run goes through the same data tools, contamination gate
and contract as a real one.

Each generator family of the world becomes a `GeneratorFamily` with the world's knobs;
its rows are synthetic (a rendered prompt and a completion drawn from the family, seed and row
index) and carry what the simulated backend trains on in `check.sim`: the family and the knob
values that generated them. The protected `dev`/`review`/`final` items are stand-ins drawn from
the run's seal key, like a real task's: a Worker that copies them into its data is caught by the
real gate, and one that gets them past an unguarded door trains on leaked items (the simulator's
shortcut). Scoring is the simulator's (the backend evaluates), so `score` only compares strings.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import cached_property, partial
from typing import Any, ClassVar

from ._knobs import validate_params, validate_size
from ._protocol import MAX_LEARNING_RATE, SPLITS, Decoding, EvalItem, GeneratorFamily, Knob, Score, Split, TaskHints
from ._seal_key import PUBLIC_SEAL_KEY, SealKey

__all__ = ["SIM_ROW_KEY", "WEB_SOURCE", "SimTask", "web_row", "web_trace"]

SIM_ROW_KEY = "sim"  # the `check` entry of a synthetic row: {"family": ..., "knobs": {...}}
WEB_SOURCE = "public-web"  # where simulated LLM-agent Workers bring their own rows from (`sim._hacks`)
_WEB_MARK = "web-note"  # a web row's first word: what follows is what the row stands for in the simulated world


def web_row(kind: str, split: str, i: int) -> dict[str, str]:
    """A row a simulated agent brings from the web that stands for a door-passing hack (`sim._hacks`):
    `recall` (a protected item of `split` restated), `format` (an answer in `split`'s scorer
    format) or `merge` (the run's step that averages in outside weights). Its words share nothing
    with a protected item, so the gate passes it, as it passes a real paraphrase."""
    return {
        "prompt": f"Recall: {_WEB_MARK} {kind} {split} {_words('web', kind, split, i)}\nAnswer:",
        "completion": " ok\n",
    }


def web_trace(row: object) -> tuple[str, str] | None:
    """(kind, split) of a `web_row`, or None for any other row."""
    prompt = row.get("prompt") if isinstance(row, dict) else None
    if not isinstance(prompt, str) or not prompt.startswith(f"Recall: {_WEB_MARK} "):
        return None
    parts = prompt.split(" ", 4)
    return (parts[2], parts[3]) if len(parts) == 5 and parts[2] in ("recall", "format", "merge") else None


_WORDS = [
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fable",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lumen",
    "marble",
    "nectar",
    "onyx",
    "pepper",
    "quartz",
    "raven",
    "saffron",
    "tundra",
    "umber",
    "velvet",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
]


def _words(*parts: object, n: int = 6) -> str:
    """`n` words drawn from a digest of `parts` (deterministic; distinct streams never meet)."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=16).digest()
    return " ".join(_WORDS[b % len(_WORDS)] + str(b % 7) for b in h[:n])


class SimTask:
    """The `Task` protocol over a `SimWorld` (typed `Any`: sim is a layer below tasks and
    the world is only read through its public surface)."""

    template = "Recall: {question}\nAnswer:"
    decoding = Decoding(max_new_tokens=8)
    stop: tuple[str, ...] = ("\n",)
    eval_params: ClassVar[dict[str, Any]] = {}

    def __init__(self, world: Any, seal_key: SealKey | None = None) -> None:
        self.world = world
        self.name: str = world.task_name
        # The contract records this wording, so it keeps its first noun.
        self.capability = f"simulated post-training task {self.name} (landscape {world.ident})"
        self.seal_key = PUBLIC_SEAL_KEY if seal_key is None else seal_key

    @cached_property
    def hints(self) -> TaskHints:
        """The world's training ranges (`SimWorld.search_space`: every optimum inside,
        with room on both sides), searched by every configuration's Workers alike: the small
        CPU model's defaults (batch 2 to 8) would leave a simulated task's optima out of reach."""
        space = self.world.search_space()
        lo, hi = space["batch_size"]
        sizes, b = [], 1
        while b <= hi:
            if b >= lo:
                sizes.append(b)
            b *= 2
        steps = space["steps"]
        # Within what a training spec takes: drawn above it, a trial is refused as invalid (a
        # world whose optima sit high had its random and TPE Workers re-try one refused
        # opening trial ten thousand times).
        lr_hi = min(float(space["learning_rate"][1]), MAX_LEARNING_RATE)
        lr_lo = min(float(space["learning_rate"][0]), lr_hi / 10)  # (the range spans >= 72x unclipped)
        return TaskHints(
            learning_rate=(lr_lo, lr_hi),
            batch_sizes=tuple(sizes),
            max_steps=(int(steps[0]), max(int(steps[0]), int(steps[1]))),
        )

    @property
    def teachers(self) -> tuple[str, ...]:
        """Sources a Worker may register rows from: the web, where the door-passing hacks are on."""
        fl = self.world.flags
        return (WEB_SOURCE,) if fl.recall_rate or fl.format_rate or fl.merge_rate else ()

    def trace_rows(self, data: bytes) -> list[tuple[int, str, str]]:
        """(row, kind, split) for each row of a JSONL dataset the audit's simulated semantic and
        format checks find: a row restating a protected item (`recall`) with `recall_detect`, one
        in a split's scorer format (`format`) with `format_detect`, each a fixed draw keyed by the
        row's bytes. Nothing to look for (and nothing read) where the hacks are off."""
        from ..sim import hack_coin

        if not self.teachers:
            return []
        fl, out = self.world.flags, []
        detect = {"recall": fl.recall_detect, "format": fl.format_detect}
        for i, line in enumerate(data.splitlines()):
            if _WEB_MARK.encode() not in line:
                continue
            try:
                row = json.loads(line)
            except ValueError:
                continue  # the gate and the training refuse what does not parse
            got = web_trace(row)
            if got and got[0] in detect and got[1] in SPLITS and hack_coin(detect[got[0]], got[0], line):
                out.append((i, *got))
        return out

    def render(self, question: str) -> str:
        return self.template.replace("{question}", question)

    @cached_property
    def _families(self) -> dict[str, GeneratorFamily]:
        out = {}
        for f in self.world.families().values():
            knobs = tuple(Knob(**dataclasses.asdict(k)) for k in f.knobs)
            out[f.name] = GeneratorFamily(f.name, f.description, knobs, partial(self._generate, f.name, knobs))
        return out

    def generators(self) -> dict[str, GeneratorFamily]:
        return dict(self._families)

    def _generate(self, family: str, knobs: tuple[Knob, ...], params: dict[str, Any], seed: int, n: int) -> list:
        full = validate_params(family, knobs, params)
        validate_size(seed, n)
        check = {SIM_ROW_KEY: {"family": family, "knobs": full}}
        tag = f"{self.name}|{family}|{sorted(full.items())}|{seed}"
        return [
            {
                "prompt": self.render(f"{family} drill {_words('row', tag, i)}"),
                "completion": f" {_words('answer', tag, i, n=2)}\n",
                "check": check,
            }
            for i in range(n)
        ]

    @cached_property
    def _items(self) -> dict[str, list[EvalItem]]:
        out: dict[str, list[EvalItem]] = {}
        for split in SPLITS:
            # One secret-derived stream per split: nothing in the code or the world gives them.
            seed = self.seal_key.split_seed(self.name, split)
            out[split] = [
                EvalItem(
                    sample_id=f"{self.name}-{split}-{i:05d}",
                    prompt=self.render(f"probe {_words('item', seed, i, n=8)}"),
                    reference=_words("reference", seed, i, n=2),
                )
                for i in range(self.world.split_sizes[split])
            ]
        return out

    def eval_items(self, split: Split) -> list[EvalItem]:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
        return self._items[split]

    def score(self, item: EvalItem, output: str) -> Score:
        ok = output.strip() == str(item.reference)
        return Score(1.0 if ok else 0.0, "match" if ok else "no match")

    def reward(self, example: dict[str, Any], output: str) -> float:
        return 1.0 if output.strip() == str(example.get("completion", "")).strip() else 0.0

    def pretrain_text(self, seed: int, n: int) -> list[str]:
        validate_size(seed, n)
        return [_words("pretrain", self.name, seed, i, n=10) for i in range(n)]
