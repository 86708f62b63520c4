"""`rocmkit profile train|infer|memory` as a user runs them, bad input included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rocmkit
from rocmkit.cli.main import main

SRC = str(Path(rocmkit.__file__).resolve().parent.parent)


def _pythonpath() -> str:
    """This checkout's src first, then the caller's PYTHONPATH (where extras may be installed)."""
    return os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)


def _json_out(capsys):
    """The answer in the result document that --json prints (the summary or the estimate)."""
    return json.loads(capsys.readouterr().out)["data"]


def test_memory_estimate_for_the_issue_example(capsys):
    argv = ["profile", "memory", "--preset", "gpt2-124m", "--precision", "bf16"]
    argv += ["--parallel", "fsdp", "--world-size", "8", "--json"]
    assert main(argv) == 0
    data = _json_out(capsys)
    assert data["label"] == "bf16 zero3 x8"
    assert 120e6 < data["num_params"] < 130e6
    single = ["profile", "memory", "--preset", "gpt2-124m", "--precision", "bf16", "--json"]
    assert main(single) == 0
    unsharded = _json_out(capsys)
    assert data["bytes"]["optimizer"] < unsharded["bytes"]["optimizer"] / 7


def test_memory_measure_agrees_and_draws_the_chart(tmp_path, capsys):
    chart = tmp_path / "charts" / "memory.png"
    argv = ["profile", "memory", "--preset", "gpt-tiny", "--precision", "bf16"]
    argv += ["--activation-checkpointing", "--measure", "--plot", str(chart), "--json"]
    argv += ["--device", "cpu"]
    assert main(argv) == 0
    rows = _json_out(capsys)["measured"]["rows"]
    assert abs(rows["activations"]["error"]) < 0.10
    assert rows["parameters"]["error"] == 0
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_memory_from_explicit_shape_renders_a_table(capsys):
    argv = ["profile", "memory", "--n-layer", "4", "--d-model", "256", "--n-head", "4"]
    argv += ["--seq-len", "128", "--vocab-size", "1000", "--precision", "int8"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "int8 infer" in out and "parameters" in out


def test_profile_train_writes_trace_result_and_summary(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["profile", "train", "--preset", "gpt-tiny", "--out", str(out), "--active", "2"]
    argv += ["--json", "--train.micro_batch", "2", "--train.device", "cpu"]
    assert main(argv) == 0
    summary = _json_out(capsys)
    assert summary["num_steps"] == 2 and summary["timeline"] == "host"
    assert summary["category_share"]["gemm"] > 0
    assert "traceEvents" in json.loads((out / "trace.json").read_text())
    result = json.loads((out / "result.json").read_text())
    assert result["kind"] == "profile-train"
    assert any(m["metric"] == "share_gemm" for m in result["measurements"])


def test_profile_train_reports_the_data_loading_share(tmp_path, capsys):
    # The train loop names its batch fetch while a profiler records; the summary counts it.
    out = tmp_path / "run"
    argv = ["profile", "train", "--preset", "gpt-tiny", "--out", str(out), "--active", "2"]
    argv += ["--json", "--train.micro_batch", "2", "--train.device", "cpu"]
    assert main(argv) == 0
    summary = _json_out(capsys)
    assert summary["data_time_us"] > 0
    assert 0 < summary["data_share"] < 1
    trace = json.loads((out / "trace.json").read_text())["traceEvents"]
    assert any(e.get("name") == "rocmkit.data.get_batch" for e in trace)
    result = json.loads((out / "result.json").read_text())
    shares = [m for m in result["measurements"] if m["metric"] == "share_data_loading"]
    assert len(shares) == 1 and 0 < shares[0]["value"] < 100


def test_profile_infer_on_a_local_tiny_hf_model(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=64)
    model_dir = tmp_path / "tiny-gpt2"
    transformers.GPT2LMHeadModel(config).save_pretrained(model_dir)
    argv = ["profile", "infer", str(model_dir), "--out", str(tmp_path / "out"), "--wait", "0"]
    argv += ["--warmup", "1", "--active", "1", "--max-new-tokens", "2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "top operators" in out and (tmp_path / "out" / "trace.json").is_file()


def _blocked(tmp_path: Path) -> Path:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    return blocker / "sub"


@pytest.mark.parametrize(
    "argv",
    [
        ["profile"],
        ["profile", "memory", "--preset", "no-such-preset"],
        ["profile", "memory", "--preset", "gpt2-124m", "--parallel", "fsdp", "--world-size", "0"],
        ["profile", "memory", "--preset", "gpt2-124m", "--world-size", "8"],
        ["profile", "memory", "--n-layer", "2"],
        ["profile", "memory", "--preset", "gpt-tiny", "--precision", "int8", "--mode", "train"],
        ["profile", "memory", "--preset", "resnet18"],
        ["profile", "train"],
        ["profile", "train", "--preset", "no-such-preset"],
        ["profile", "train", "--preset", "gpt-tiny", "--active", "0"],
        ["profile", "train", "--preset", "gpt-tiny", "--train.no_such_key", "1"],
        ["profile", "infer", "/no/such/model/dir"],
    ],
)
def test_bad_input_is_one_line_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocmkit: error:") and "\n" not in err


def test_unwritable_outputs_are_one_line_exit_2(tmp_path, capsys):
    target = _blocked(tmp_path)
    plot = ["profile", "memory", "--preset", "gpt-tiny", "--plot", str(target / "c.png")]
    train = ["profile", "train", "--preset", "gpt-tiny", "--out", str(target)]
    for argv in (plot, train):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "cannot write" in err and "\n" not in err


def test_infer_dir_without_config_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["profile", "infer", str(tmp_path)]) == 2
    assert "config.json" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # a refused run leaves nothing behind


@pytest.mark.slow
def test_python_dash_m_entry_point(tmp_path):
    env = dict(os.environ, PYTHONPATH=SRC, OMP_NUM_THREADS="1")
    argv = [sys.executable, "-m", "rocmkit", "profile", "memory", "--preset", "gpt2-124m", "--json"]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["data"]["label"] == "bf16"


def test_profile_train_hints_at_math_attention_only_when_it_ran(tmp_path, capsys):
    base = ["profile", "train", "--preset", "gpt-tiny", "--active", "1", "--json"]
    base += ["--train.device", "cpu"]  # the CPU's SDPA math fallback is what this tests
    # Attention dropout sends CPU SDPA to its math kernel: real evidence for the rule.
    assert main([*base, "--out", str(tmp_path / "a"), "--model.dropout", "0.1"]) == 0
    rules = {h["rule"]: h for h in _json_out(capsys)["hints"]}
    assert "math-kernel" in rules["attention-math-fallback"]["evidence"]
    assert main([*base, "--out", str(tmp_path / "b")]) == 0
    assert "attention-math-fallback" not in {h["rule"] for h in _json_out(capsys)["hints"]}


def test_train_steps_override_is_ignored_with_a_warning(tmp_path, capsys):
    from rocmkit.errors import RocmkitWarning

    argv = ["profile", "train", "--preset", "gpt-tiny", "--active", "1", "--json"]
    argv += ["--out", str(tmp_path), "--train.steps", "100"]
    with pytest.warns(RocmkitWarning, match="train.steps"):
        assert main(argv) == 0
    assert _json_out(capsys)["num_steps"] == 1


@pytest.mark.slow
def test_profiler_chatter_is_silent_unless_debug(tmp_path):
    argv = [sys.executable, "-m", "rocmkit", "profile", "train", "--preset", "gpt-tiny"]
    argv += ["--active", "1", "--json", "--train.device", "cpu", "--out", str(tmp_path / "run")]
    env = {**os.environ, "PYTHONPATH": _pythonpath(), "OMP_NUM_THREADS": "1"}
    env.pop("KINETO_LOG_LEVEL", None)
    quiet = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    # Only the driver's note of what it saved: no profiler or kineto lines.
    assert quiet.returncode == 0 and quiet.stderr == f"wrote {tmp_path / 'run' / 'result.json'}\n"
    loud = subprocess.run([*argv, "--debug"], env=env, capture_output=True, text=True, timeout=120)
    # kineto's own log lines (profiler_start) or torch.profiler's warnings, by torch version
    extra = loud.stderr.replace(f"wrote {tmp_path / 'run' / 'result.json'}\n", "")
    assert loud.returncode == 0 and "profiler" in extra.lower()


def test_profile_train_takes_the_short_train_flags_and_json_is_the_saved_document(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["profile", "train", "--preset", "gpt-tiny", "--active", "1", "--out", str(out)]
    argv += ["--precision", "bf16", "--micro-batch", "2", "--train.device", "cpu"]
    argv += ["--json", "--monitor-memory"]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((out / "result.json").read_text())
    assert printed == saved and saved["kind"] == "profile-train"
    assert saved["config"]["precision"]["dtype"] == "bf16"
    assert saved["config"]["train"]["micro_batch"] == 2
    assert saved["data"]["trace"] == str(out / "trace.json")
    memory = [m["metric"] for m in saved["measurements"] if m["suite"] == "memory"]
    assert memory == ["peak_rss"] and (out / "memory.json").is_file()


def test_profile_train_without_out_writes_a_run_of_its_own(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["profile", "train", "--preset", "gpt-tiny", "--active", "1", "--micro-batch", "2"]
    argv += ["--train.device", "cpu"]
    assert main(argv) == 0
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.startswith("profile-train-20")
    assert (run / "trace.json").is_file() and (run / "result.json").is_file()
    captured = capsys.readouterr()
    assert f"trace: {Path('runs') / run.name / 'trace.json'}" in captured.out
    assert f"wrote {Path('runs') / run.name / 'result.json'}" in captured.err  # the driver's note


def test_profile_memory_json_is_a_result_document_saved_only_with_out(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    argv = ["profile", "memory", "--preset", "gpt2-124m", "--precision", "bf16", "--json"]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["kind"] == "profile-memory" and not (tmp_path / "runs").exists()
    # every category of the document is a measurement with the same bytes, and nothing else is
    rows = {m["metric"]: m["value"] for m in printed["measurements"]}
    assert rows == {f"{k}_bytes": v for k, v in printed["data"]["bytes"].items()}
    assert rows["total_bytes"] > rows["parameters_bytes"] > 0
    assert main([*argv, "--out", "estimate"]) == 0
    saved = json.loads((tmp_path / "estimate" / "result.json").read_text())
    assert saved["data"] == json.loads(capsys.readouterr().out)["data"]
