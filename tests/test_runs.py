"""The output rule every command shares (`rocmkit.runs`) and the one JSON sanitiser."""

from __future__ import annotations

import datetime as dt
import json
import math

from rocmkit.results import Measurement, RunResult, jsonable, load_result
from rocmkit.runs import default_out, is_main_process, latest_run, run_directory, save

NOW = dt.datetime(2026, 11, 23, 12, 0, 0, tzinfo=dt.timezone.utc)


def test_default_out_is_command_and_utc_stamp_and_never_reuses_a_directory(tmp_path):
    first = default_out("train", root=tmp_path, now=NOW)
    assert first == tmp_path / "train-20261123-120000"
    first.mkdir()
    second = default_out("train", root=tmp_path, now=NOW)
    assert second == tmp_path / "train-20261123-120000-2"
    second.mkdir()
    assert default_out("train", root=tmp_path, now=NOW).name.endswith("-3")


def test_latest_run_picks_the_newest_run_of_that_command(tmp_path):
    assert latest_run("train", root=tmp_path) is None
    for name in ("train-20261120-090000", "train-20261123-080000", "bench-20261124-000000"):
        (tmp_path / name).mkdir()
    assert latest_run("train", root=tmp_path) == tmp_path / "train-20261123-080000"
    for name in ("train-20261123-080000-9", "train-20261123-080000-10", "train-gpt2-mine"):
        (tmp_path / name).mkdir()
    # -10 is newer than -9; a directory the user named is never taken for a stamped run.
    assert latest_run("train", root=tmp_path) == tmp_path / "train-20261123-080000-10"


def test_only_rank_zero_or_a_lone_process_reports():
    assert is_main_process({}) and is_main_process({"RANK": "0"})
    assert not is_main_process({"RANK": "1"})


def test_save_writes_result_and_reports_that_report_can_read(tmp_path):
    result = RunResult(
        kind="bench",
        environment={"backend": "cpu"},
        config={"rate": math.inf},
        measurements=[
            Measurement(suite="gemm", name="fp32 64", metric="gflops", value=2.0, unit="GFLOP/s")
        ],
    )
    path = save(result, tmp_path / "run", reports=True)
    assert path == tmp_path / "run" / "result.json"
    assert {p.name for p in (tmp_path / "run").iterdir()} == {
        "result.json",
        "report.md",
        "report.html",
    }
    assert "gemm" in (tmp_path / "run" / "report.md").read_text().lower()
    assert json.loads(path.read_text())["config"]["rate"] == "inf"  # valid JSON, value kept
    assert load_result(tmp_path / "run").measurements[0].value == 2.0


def test_jsonable_makes_any_result_valid_json():
    doc = jsonable({"nan": math.nan, "neg": -math.inf, "t": (1, 2), "p": NOW.date()})
    assert doc["nan"] is None and doc["neg"] == "-inf" and doc["t"] == [1, 2]
    assert doc["p"] == "2026-11-23"
    json.dumps(doc, allow_nan=False)  # what atomic_write_json and --json do: no fallback


def test_a_result_holding_a_value_json_lacks_still_saves_and_prints(tmp_path, capsys):
    from rocmkit.driver import print_json

    result = RunResult(kind="bench", environment={"day": NOW.date()}, config={})
    path = save(result, tmp_path / "run")
    assert json.loads(path.read_text())["environment"]["day"] == "2026-11-23"
    print_json(result.to_dict())
    assert json.loads(capsys.readouterr().out)["environment"]["day"] == "2026-11-23"


def test_a_run_that_fails_before_writing_leaves_no_empty_directory(tmp_path):
    import pytest

    out = tmp_path / "runs" / "infer-serve-x"
    with pytest.raises(RuntimeError), run_directory(out):
        raise RuntimeError("warm-up failed")
    assert not out.exists()
    kept = tmp_path / "mine"
    kept.mkdir()
    with pytest.raises(RuntimeError), run_directory(kept):
        raise RuntimeError("boom")
    assert kept.is_dir()  # a directory the user made is never removed


def test_a_save_the_disk_refuses_is_a_one_line_error(tmp_path):
    import pytest

    from rocmkit.errors import UserError

    out = tmp_path / "run"
    (out / "result.json").mkdir(parents=True)  # what a full disk or lost permission looks like
    result = RunResult(kind="bench", environment={}, config={})
    with pytest.raises(UserError, match=r"cannot write .*run/result\.json: Is a directory"):
        save(result, out)
