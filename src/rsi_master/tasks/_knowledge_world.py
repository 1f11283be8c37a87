"""Made-up entities and relations for the `knowledge` task.

Names are built from syllables so no pretrained model could know them: the answer
must come from the facts given in the prompt.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["ANIMALS", "COLORS", "JOBS", "PERSONS", "PLACES", "REGION", "RELATIONS", "Relation"]

PERSONS = tuple(
    a + b
    for a in (
        "Vor",
        "Tes",
        "Bri",
        "Kal",
        "Mon",
        "Zef",
        "Dra",
        "Lun",
        "Pim",
        "Rok",
        "Sel",
        "Tav",
        "Gor",
        "Nim",
        "Fal",
        "Jus",
    )
    for b in ("la", "ko", "mi", "ren", "dar", "vin", "to", "sa", "nel", "bo")
)
PLACES = tuple(
    a + b
    for a in ("Pem", "Ruv", "Ost", "Kel", "Yar", "Bel", "Hul", "Quen", "Wex", "Dun", "Cor", "Ild")
    for b in ("tor", "ia", "mar", "eth", "ford", "ane", "ix", "ul")
)
ANIMALS = ("lark", "newt", "goat", "mole", "crab", "hare", "moth", "wren", "toad", "yak", "eel", "owl")
JOBS = ("baker", "miner", "tailor", "potter", "sailor", "smith", "weaver", "farmer", "cook", "judge", "poet", "guard")
COLORS = ("teal", "amber", "olive", "coral", "ivory", "plum", "rust", "navy", "jade", "gold", "lilac", "slate")


@dataclass(frozen=True)
class Relation:
    """A relation with its fact sentence, question and pretraining paraphrase."""

    name: str
    values: tuple[str, ...]
    fact: str  # "{s} lives in {o}."
    question: str  # "Where does {s} live?"
    prose: str  # pretraining paraphrase: the fact in another style

    def draw(self, rng: random.Random) -> str:
        return rng.choice(self.values)


RELATIONS = (
    Relation("home", PLACES, "{s} lives in {o}.", "Where does {s} live?", "{o} is the home of {s}."),
    Relation("pet", ANIMALS, "{s} keeps a {o}.", "What animal does {s} keep?", "The {o} of {s} is well fed."),
    Relation("job", JOBS, "{s} works as a {o}.", "What is the job of {s}?", "{s} earns a living as a {o}."),
    Relation("color", COLORS, "{s} likes {o}.", "What color does {s} like?", "The favourite color of {s} is {o}."),
)
# Second hop: a place lies in a region (also a place name).
REGION = Relation("region", PLACES, "{s} is in {o}.", "", "{s} lies within {o}.")
