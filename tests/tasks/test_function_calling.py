"""`function_calling`: the JSON-call checker and the catalogue."""

from __future__ import annotations

import json

import pytest

from rsi_master.tasks import EvalItem, get_task
from rsi_master.tasks._fc_catalog import CATALOG

TASK = get_task("function_calling")
REF = {
    "name": "weather",
    "arguments": {"city": "Oslo", "day": "Monday", "metric": True},
    "types": {"city": "str", "day": "str", "metric": "bool"},
}
ITEM = EvalItem("function_calling/dev/x", "Functions: ...\nCall:", REF)
FLOAT_ITEM = EvalItem("x", "", {"name": "km_to_mi", "arguments": {"km": 12.0}, "types": {"km": "float"}})
INT_ITEM = EvalItem("x", "", {"name": "roll", "arguments": {"sides": 6}, "types": {"sides": "int"}})


@pytest.mark.parametrize(
    "output",
    [
        ' {"name":"weather","arguments":{"city":"Oslo","day":"Monday","metric":true}}',
        ' {"name": "weather", "arguments": {"metric": true, "day": "Monday", "city": "Oslo"}}\n\n',
        ' weather: city="Oslo"\n{"name":"weather","arguments":{"city":"oslo ","day":"MONDAY","metric":true}}',
        '{"arguments":{"city":"Oslo","day":"Monday","metric":true},"name":"weather"}',
    ],
)
def test_right_calls(output):
    assert TASK.score(ITEM, output).score == 1.0


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ('{"name":"alarm","arguments":{"city":"Oslo","day":"Monday","metric":true}}', "wrong function"),
        ('{"name":"weather","arguments":{"city":"Oslo","day":"Monday","metric":"true"}}', "'metric'"),
        ('{"name":"weather","arguments":{"city":"Oslo","day":"Monday","metric":1}}', "'metric'"),
        ('{"name":"weather","arguments":{"city":"Lima","day":"Monday","metric":true}}', "'city'"),
        ('{"name":"weather","arguments":{"city":"Oslo","day":"Monday"}}', "missing ['metric']"),
        ('{"name":"weather","arguments":{"city":"Oslo","day":"Monday","metric":true,"x":1}}', "unexpected ['x']"),
        ('{"name":"weather","arguments":{"city":"Oslo","day":"Monday","metric":true}', "malformed JSON"),
        ("{'name':'weather'}", "malformed JSON"),
        ('{"name":"weather","arguments":[1,2]}', "not an object"),
        ('{"name":"weather"}', "exactly 'name' and 'arguments'"),
        ('{"name":"weather","arguments":{},"extra":1}', "exactly 'name' and 'arguments'"),
        ('["weather"]', "not a JSON object"),
        ('{"name":"weather","arguments":{"city":"Oslo","day":"Monday","metric":true}} trailing', "malformed JSON"),
        ('{"a":' * 40 + "1" + "}" * 40, "too deeply nested"),
        ("weather(city=Oslo)", "not a JSON object"),
    ],
)
def test_wrong_calls_say_why(output, reason):
    score = TASK.score(ITEM, output)
    assert score.score == 0.0 and reason in score.reason, score


def test_numbers_are_type_aware():
    assert TASK.score(FLOAT_ITEM, '{"name":"km_to_mi","arguments":{"km":12}}').score == 1.0
    assert TASK.score(FLOAT_ITEM, '{"name":"km_to_mi","arguments":{"km":12.0}}').score == 1.0
    assert TASK.score(FLOAT_ITEM, '{"name":"km_to_mi","arguments":{"km":"12.0"}}').score == 0.0
    assert TASK.score(FLOAT_ITEM, '{"name":"km_to_mi","arguments":{"km":NaN}}').score == 0.0
    assert TASK.score(INT_ITEM, '{"name":"roll","arguments":{"sides":6}}').score == 1.0
    assert TASK.score(INT_ITEM, '{"name":"roll","arguments":{"sides":6.5}}').score == 0.0
    assert TASK.score(INT_ITEM, '{"name":"roll","arguments":{"sides":"6"}}').score == 0.0
    assert TASK.score(INT_ITEM, '{"name":"roll","arguments":{"sides":true}}').score == 0.0


def test_prompts_list_the_target_and_distinct_functions():
    for item in TASK.eval_items("dev"):
        signatures = item.prompt.split("\n")[0].removeprefix("Functions: ").split(" ")
        names = [s.split("(")[0] for s in signatures]
        assert len(names) == 3 == len(set(names)) and item.reference["name"] in names


def test_every_request_mentions_every_argument_value():
    for example in TASK.generator("compact").generate({}, 2, 500):
        request = example["prompt"].split("Request: ")[1].lower()
        for key, value in example["check"]["arguments"].items():
            if isinstance(value, bool):
                continue  # said in words ("celsius"/"fahrenheit")
            shown = f"{value:.1f}" if isinstance(value, float) else str(value)
            assert shown.lower() in request, (key, value, request)


def test_families_differ_in_format_not_in_the_call():
    compact, verbose = (TASK.generator(f).generate({}, 4, 50) for f in ("compact", "verbose"))
    for a, b in zip(compact, verbose, strict=True):
        assert a["prompt"] == b["prompt"] and a["completion"] != b["completion"]
        assert json.loads(a["completion"]) == json.loads(b["completion"])


def test_catalogue_names_are_unique_and_every_function_is_asked():
    assert len({f.name for f in CATALOG}) == len(CATALOG)
    asked = {item.reference["name"] for item in TASK.eval_items("dev")}
    assert asked == {f.name for f in CATALOG}


def test_max_arity_knob_restricts_targets():
    examples = TASK.generator("compact").generate({"max_arity": 1}, 0, 100)
    assert {e["check"]["name"] for e in examples} == {"km_to_mi", "roll"}


def test_reward_gives_shaped_credit_for_partly_right_calls():
    example = {"check": REF}
    assert TASK.reward(example, '{"name":"weather","arguments":{"city":"Oslo","day":"Monday","metric":true}}') == 1.0
    two_of_three = TASK.reward(example, '{"name":"weather","arguments":{"city":"Oslo","day":"Monday","metric":false}}')
    wrong_name = TASK.reward(example, '{"name":"alarm","arguments":{}}')
    assert 0.1 == wrong_name < TASK.reward(example, '{"name":"weather","arguments":{}}') < two_of_three < 0.5
    assert TASK.reward(example, "weather please") == 0.0
