"""Reading and writing the landscape file: versions, validation, the file in force."""

from __future__ import annotations

import json

import pytest

from rsi_master.landscape import (
    ENV_VAR,
    SHIPPED,
    Curve,
    Landscape,
    LandscapeError,
    TaskLandscape,
    expected_scores,
    landscape_path,
    load,
    save,
)

V1 = {
    "version": 1,
    "split": "dev",
    "produced_by": "scripts/measure_landscape.py",
    "default_experiment": {"examples": 5000, "batch_size": 32, "learning_rate": 0.001},
    "tasks": {
        "t": {
            "curves": {
                "a": {
                    "points": [{"multiple": 1.0, "score": 0.2, "seeds": 1, "per_seed": [0.2]}],
                    "tokens": 1000,
                    "train_seconds": 10.0,
                    "params": {},
                    "seeds": [0],
                }
            }
        }
    },
    "targets": {
        "t": {
            "base_ok": True,
            "crossing": None,
            "family_gap": None,
            "family_gap_ok": False,
            "reference_gain_points": None,
            "reference_ok": False,
        },
        "crossing_ok": False,
        "crossing_tasks": [],
    },
}


def test_the_shipped_file_loads_and_is_the_default(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert landscape_path() == SHIPPED
    land = load()
    assert land.version == 2 and land.curves("arithmetic") and land.curves("no_such_task") == {}
    assert load() is land  # read again only when the file changes


def test_a_version_1_file_is_read(tmp_path):
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(V1))
    land = load(p)
    assert land.version == 2 and land.targets.tasks["t"].crossing is None and land.targets.crossing_ok is False
    assert land.curves("t")["a"].score_at(0.5) == pytest.approx(0.1)
    save(land, tmp_path / "v2.json")
    assert load(tmp_path / "v2.json") == land


@pytest.mark.parametrize(
    "change,says",
    [
        (lambda d: d.update(version=3), "format version 3 is not one this rsi-master reads"),
        (lambda d: d.pop("version"), "format version None"),
        (lambda d: d["tasks"]["t"]["curves"].update({"a@s1": d["tasks"]["t"]["curves"]["a"]}), "no @sS"),
        (lambda d: d["tasks"]["t"]["curves"].update({"a[": d["tasks"]["t"]["curves"]["a"]}), "does not read as"),
        (lambda d: d["tasks"]["t"]["curves"]["a"]["points"][0].update(score=2.0), "score"),
        (lambda d: d["tasks"]["t"]["curves"]["a"].update(colour="red"), "colour"),
    ],
)
def test_a_bad_file_is_refused_in_one_line_naming_it(tmp_path, change, says):
    data = json.loads(json.dumps(V1))
    change(data)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(data))
    with pytest.raises(LandscapeError, match=says) as err:
        load(p)
    assert str(p) in str(err.value) and "\n" not in str(err.value)


def test_not_json_and_missing_files(tmp_path):
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(LandscapeError, match="not JSON"):
        load(tmp_path / "x.json")
    with pytest.raises(LandscapeError, match="no such landscape file"):
        load(tmp_path / "missing.json")


def test_the_environment_names_the_file_in_force(tmp_path, monkeypatch):
    curve = {
        "points": [{"multiple": 1.0, "score": 0.0}, {"multiple": 4.0, "score": 0.9}],
        "tokens": 4000,
        "train_seconds": 400,
    }
    path = save(
        Landscape(tasks={"knowledge": TaskLandscape(curves={"chain_then_answer": curve})}), tmp_path / "mine.json"
    )
    monkeypatch.setenv(ENV_VAR, str(path))
    # one default experiment costs 100 s here; 300 s buy three of them
    assert expected_scores("knowledge", 300.0) == {"chain_then_answer": pytest.approx(0.6)}
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "gone.json"))
    with pytest.raises(LandscapeError, match="no such landscape file"):
        load()


def test_save_writes_only_what_load_reads(tmp_path):
    bad = Landscape(tasks={"t": TaskLandscape()})
    bad.tasks["t"].curves["a b"] = Curve(points=[])  # assignment is not validated; save is
    with pytest.raises(LandscapeError, match="does not read as"):
        save(bad, tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()
