"""The Main makes the same plans on each built-in task as before the landscape became a
package and its per-task tuning data (issue 20): openings at several budgets, the answers
to a failed and a passing review, and the default budget, against a capture made before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_master.tasks import list_tasks

from ._plans import task_plans

EXPECTED = json.loads((Path(__file__).parent / "data" / "first_plans.json").read_text())


@pytest.mark.parametrize("task", sorted(list_tasks()))
def test_the_main_plans_as_before(task, tmp_path):
    got = json.loads(json.dumps(task_plans(task, tmp_path), sort_keys=True))
    want = EXPECTED[task]
    assert sorted(got) == sorted(want)
    for case in want:
        assert got[case] == want[case], case
