"""The function catalogue of the `function_calling` task.

Every function's request space (phrasings times argument values) is in the hundreds
or more, so sealing 600 evaluation requests leaves most of each function's requests
available to the generators.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ARTISTS",
    "CATALOG",
    "CITIES",
    "DAYS",
    "EVENTS",
    "LABELS",
    "LANGS",
    "PEOPLE",
    "ROOMS",
    "SONGS",
    "WORDS",
    "Function",
    "Param",
]

CITIES = (
    "Oslo",
    "Lima",
    "Rome",
    "Cairo",
    "Tokyo",
    "Delhi",
    "Paris",
    "Quito",
    "Dakar",
    "Hanoi",
    "Perth",
    "Riga",
    "Sofia",
    "Bern",
    "Seoul",
    "Accra",
    "Baku",
    "Doha",
    "Kyiv",
    "Minsk",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
PEOPLE = (
    "Ana",
    "Bo",
    "Cleo",
    "Dan",
    "Eva",
    "Finn",
    "Gia",
    "Hugo",
    "Ivy",
    "Jon",
    "Kai",
    "Liv",
    "Milo",
    "Nora",
    "Otto",
    "Pia",
    "Remy",
    "Sara",
    "Theo",
    "Zoe",
)
LABELS = ("tea", "eggs", "pasta", "rice", "bread", "laundry", "nap", "pizza", "soup", "yoga")
SONGS = ("Echo", "Drift", "Ember", "Halo", "Tides", "Orbit", "Velvet", "Mirage", "Nova", "Fable")
ARTISTS = ("Aria", "Bram", "Coda", "Dune", "Eno", "Flux", "Gale", "Haze", "Iris", "Juno")
ROOMS = ("kitchen", "bedroom", "office", "hall", "garage", "attic", "den", "bathroom")
WORDS = (
    "cat",
    "house",
    "water",
    "bread",
    "river",
    "moon",
    "green",
    "friend",
    "book",
    "tree",
    "apple",
    "road",
    "snow",
    "fire",
    "bird",
    "stone",
    "star",
    "door",
    "milk",
    "boat",
)
LANGS = ("French", "German", "Spanish", "Italian", "Dutch", "Polish")
EVENTS = ("dentist", "meeting", "lunch", "gym", "class", "party", "interview", "checkup")


@dataclass(frozen=True)
class Param:
    """One argument: its JSON type and how to draw a value."""

    name: str
    type: str  # "str" | "int" | "float" | "bool"
    values: tuple[Any, ...]

    def draw(self, rng: random.Random) -> Any:
        return rng.choice(self.values)


@dataclass(frozen=True)
class Function:
    """A callable the model may choose, with request phrasings that mention every argument."""

    name: str
    params: tuple[Param, ...]
    requests: tuple[str, ...]  # str.format templates over the argument names (+ derived fields)

    def signature(self) -> str:
        return f"{self.name}({','.join(f'{p.name}:{p.type}' for p in self.params)})"

    def render(self, rng: random.Random, args: dict[str, Any], phrasings: int) -> str:
        fields = dict(args)
        for key, value in args.items():
            if isinstance(value, bool):
                fields[key] = {"metric": ("fahrenheit", "celsius")}.get(key, ("no", "yes"))[value]
            elif isinstance(value, float):
                fields[key] = f"{value:.1f}"
        if "minute" in fields:
            fields["minute"] = f"{args['minute']:02d}"
        return rng.choice(self.requests[:phrasings]).format(**fields)


def _range(low: int, high: int, step: int = 1) -> tuple[int, ...]:
    return tuple(range(low, high + 1, step))


CATALOG: tuple[Function, ...] = (
    Function(
        "weather",
        (Param("city", "str", CITIES), Param("day", "str", DAYS), Param("metric", "bool", (True, False))),
        (
            "Weather in {city} on {day} in {metric}?",
            "How warm is {city} on {day}, in {metric}?",
            "Forecast for {city} on {day}, {metric} please.",
        ),
    ),
    Function(
        "alarm",
        (Param("hour", "int", _range(0, 23)), Param("minute", "int", _range(0, 55, 5))),
        ("Set an alarm for {hour}:{minute}.", "Wake me up at {hour}:{minute}.", "Alarm at {hour}:{minute} please."),
    ),
    Function(
        "timer",
        (Param("minutes", "int", _range(1, 90)), Param("label", "str", LABELS)),
        (
            "Start a {minutes} minute timer for {label}.",
            "Timer for {label}, {minutes} minutes.",
            "Give me {minutes} minutes for {label}.",
        ),
    ),
    Function(
        "play",
        (Param("title", "str", SONGS), Param("artist", "str", ARTISTS)),
        ("Play {title} by {artist}.", "Put on {artist}'s song {title}.", "I want to hear {title} by {artist}."),
    ),
    Function(
        "pay",
        (Param("to", "str", PEOPLE), Param("amount", "int", _range(5, 500, 5))),
        ("Send {amount} dollars to {to}.", "Pay {to} {amount} dollars.", "Transfer {amount} dollars to {to}."),
    ),
    Function(
        "book",
        (Param("name", "str", PEOPLE), Param("people", "int", _range(1, 12)), Param("hour", "int", _range(11, 22))),
        (
            "Book a table for {people} at {hour} for {name}.",
            "Table for {people} people at {hour}, name {name}.",
            "Reserve {people} seats at {hour} under {name}.",
        ),
    ),
    Function(
        "heat",
        (Param("room", "str", ROOMS), Param("degrees", "int", _range(15, 30))),
        ("Set the {room} to {degrees} degrees.", "Make the {room} {degrees} degrees.", "Heat the {room} to {degrees}."),
    ),
    Function(
        "translate",
        (Param("word", "str", WORDS), Param("lang", "str", LANGS)),
        ("Translate {word} into {lang}.", "What is {word} in {lang}?", "Say {word} in {lang}."),
    ),
    Function(
        "km_to_mi",
        (Param("km", "float", tuple(x / 2 for x in range(1, 200))),),
        ("Convert {km} km to miles.", "How many miles is {km} km?", "{km} km in miles?"),
    ),
    Function(
        "event",
        (Param("title", "str", EVENTS), Param("day", "str", DAYS), Param("hour", "int", _range(7, 20))),
        (
            "Add {title} on {day} at {hour}.",
            "Put {title} in my calendar on {day} at {hour}.",
            "Schedule {title} for {day} at {hour}.",
        ),
    ),
    Function(
        "roll",
        (Param("sides", "int", _range(2, 120)),),
        ("Roll a {sides} sided die.", "Throw a die with {sides} sides.", "Random number from 1 to {sides}."),
    ),
)
