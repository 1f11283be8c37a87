from __future__ import annotations

import pytest

from rsi_master.runtime import InvalidParameterError, make_spec


def test_defaults_are_the_default_experiment():
    spec = make_spec(method="sft")
    assert (spec.learning_rate, spec.batch_size, spec.epochs) == (1e-3, 32, 1.0)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"method": "sgd"}, "unknown training method"),
        ({"method": "sft", "learning_rate": 5.0}, "learning_rate"),
        ({"method": "sft", "learning_rate": -1e-3}, "learning_rate"),
        ({"method": "sft", "batch_size": -4}, "batch_size"),
        ({"method": "sft", "max_steps": 0}, "max_steps"),
        ({"method": "sft", "bogus": 1}, "bogus"),
        ({"method": "dpo"}, "needs a task"),
        ({"method": "grpo", "task": "arithmetic", "batch_size": 10, "grpo_num_generations": 4}, "multiple"),
    ],
)
def test_invalid_parameters_are_clear_value_errors(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment) as info:
        make_spec(**kwargs)
    assert isinstance(info.value, InvalidParameterError)
