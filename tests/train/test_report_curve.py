"""The training curves of `rocmkit train` runs in `rocmkit report` (issue 23, item 7): result.json
carries a thinned metrics.jsonl series; report.html draws loss, grad norm, tokens/s and (fp16)
the loss scale, one line per run, side by side for several runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loop_helpers import as_flags, tiny_overrides

from rocmkit.cli.main import main
from rocmkit.train.metrics import curve


def _train(out: Path, *extra: str) -> None:
    overrides = tiny_overrides(out, **{"train.steps": 6, "checkpoint.save_final": "false"})
    del overrides["logging.run_dir"]
    argv = ["train", "--preset", "gpt-tiny", *as_flags(overrides), "--out", str(out), *extra]
    assert main(argv) == 0


def test_result_json_carries_the_curve_and_the_html_report_draws_it(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    fp32, fp16 = tmp_path / "fp32", tmp_path / "fp16"
    _train(fp32)
    _train(fp16, "--precision", "fp16")
    saved = json.loads((fp16 / "result.json").read_text())["data"]["curve"]
    assert saved["step"] == [1, 2, 3, 4, 5, 6]
    assert len(saved["loss"]) == 6 and all(v is not None for v in saved["loss"])
    assert all(v is not None for v in saved["loss_scale"])  # fp16: the scaler's value per step
    report = tmp_path / "report"
    assert main(["report", str(fp32), str(fp16), "--out", str(report)]) == 0
    html = (report / "report.html").read_text()
    assert 'alt="train plot"' in html
    capsys.readouterr()


def test_curve_is_thinned_and_keeps_the_last_value_of_a_repeated_step(tmp_path):
    lines = [{"step": s, "loss": 10.0 - s / 100} for s in range(1, 1001)]
    lines.append({"step": 501, "loss": 1.0})  # logged again after a resume
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines) + "{cut")
    series = curve(tmp_path, max_points=100)
    assert series is not None
    assert len(series["step"]) <= 101 and series["step"][0] == 1 and series["step"][-1] == 1000
    assert series["loss"][series["step"].index(491)] == pytest.approx(10.0 - 4.91)
    assert series["loss"][series["step"].index(501)] == 1.0
    assert curve(tmp_path / "missing") is None
