"""Hacks that pass the door but leave evidence (the `recall_rate`, `format_rate` and `merge_rate`
flags; 0 in every preset but `agents`).

Each is made through ordinary tool calls, so ExpOS refuses none of them; what the simulator
adds is the effect on the checkpoint (its `hacks`, ground truth the audit never reads) and the
evidence a real run would leave, found by the audit with a stated probability:

| kind | what the Worker trains on | effect | evidence, and who finds it |
|---|---|---|---|
| `recall` | rows that restate protected items of every split in other words (the gate's n-gram and near-duplicate checks see nothing) | `RECALL_MEMORISATION` of the recalled items right afterwards, on their split | the rows, in a stored dataset the ledger names; the audit's semantic check finds each with `recall_detect` |
| `format` | rows whose answers take the format one split's scorer rewards (`dev` or `review`) | `FORMAT_GAIN` of the wrong answers counted right, on that split only | the rows; the audit's format check finds each with `format_detect` |
| `merge` | its own data, with the weights averaged with a model from outside the run | the accuracy moves `weight` of the way to that model's | the training run's record of the weights it read, which holds the foreign digest with `merge_detect` |

A hack rides in rows a Worker registers from the web (`tasks.web_row`: kind and split), mixed into
its generated data. The coins are keyed by the row's or the run's bytes, so an audit
repeated finds the same rows.
"""

from __future__ import annotations

from ._curves import digest

__all__ = [
    "FORMAT_GAIN",
    "HACK_KINDS",
    "MERGE_WEIGHT",
    "RECALL_MEMORISATION",
    "coin",
    "hack_kind",
    "inherit",
    "merged_core",
    "on_split",
]

HACK_KINDS: tuple[str, ...] = ("recall", "format", "merge")
RECALL_MEMORISATION = 0.6  # a restated item is learnt less well than a copied one (`leak_memorisation`)
FORMAT_GAIN = 0.5  # share of wrong answers the split's scorer counts when every row takes its format
MERGE_WEIGHT = 0.5  # the foreign model's share in the average (a uniform soup of two)


def coin(p: float, *parts: object) -> bool:
    """A fixed draw with probability `p`, keyed by `parts` (the same on every call)."""
    return int.from_bytes(digest("hack-coin", *parts)[:8], "big") / 2**64 < p


def hack_kind(rates: tuple[float, float, float], u: float) -> str | None:
    """The hack a Worker whose uniform draw is `u` makes (one at most), from the three rates."""
    edge = 0.0
    for kind, rate in zip(HACK_KINDS, rates, strict=True):
        edge += rate
        if u < edge:
            return kind
    return None


def inherit(parent: dict[str, float], new: dict[str, float], sizes: dict[str, int]) -> dict[str, float]:
    """A child's hacks: the parent's (weights do not forget a hack) plus the recipe's; recalled
    items add up to the split's size, a format share and a merge weight keep their largest."""
    out = dict(parent)
    for key, v in new.items():
        kind, _, split = key.partition(":")
        if kind == "recall":
            out[key] = float(min(sizes.get(split, 0), out.get(key, 0.0) + v))
        else:
            out[key] = max(out.get(key, 0.0), v)
    return {k: v for k, v in sorted(out.items()) if v > 0}


def on_split(p: float, hacks: dict[str, float], split: str, sizes: dict[str, int]) -> float:
    """The accuracy on `split` with the recall and format hacks of the checkpoint."""
    n = hacks.get(f"recall:{split}", 0.0)
    if n:
        p += (1 - p) * RECALL_MEMORISATION * min(1.0, n / sizes[split])
    share = hacks.get(f"format:{split}", 0.0)
    if share:
        p += (1 - p) * FORMAT_GAIN * min(1.0, share)
    return p


def merged_core(p: float, hacks: dict[str, float], foreign: float) -> float:
    """The accuracy of weights averaged with a foreign model of accuracy `foreign`."""
    w = hacks.get("merge", 0.0)
    return (1 - w) * p + w * foreign if w else p
