"""Where `rocmkit infer` writes and what it prints: the report's tables, `--json`, the default run
directory, `--monitor-memory`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stub_server import StubConfig, StubServer

from rocmkit.cli.main import main
from rocmkit.report.tables import format_cell
from rocmkit.results import load_result


@pytest.fixture(scope="module")
def stub():
    server = StubServer(StubConfig(ttft_s=0.013, itl_s=0.0037)).start()
    yield server
    server.stop()


def _serve(url: str, *tail: str) -> list[str]:
    return ["infer", "serve", "--url", url, "--model", "stub", "--num-prompts", "5",
            "--output-len", "4", "--rate", "50,inf", "--concurrency", "2", *tail]  # fmt: skip


def _table_rows(printed: str) -> list[list[str]]:
    """The body rows of the printed tables, as lists of cell texts."""
    return [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in printed.splitlines()
        if line.startswith("│")
    ]


def test_serve_prints_the_figures_rocmkit_report_prints(stub, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(_serve(stub.base_url, "--slo", "ttft=1s", "--out", str(run_dir))) == 0
    printed = capsys.readouterr().out
    served = _table_rows(printed)
    assert main(["report", str(run_dir)]) == 0
    shown = capsys.readouterr().out
    reported = _table_rows(shown)
    assert len(served) == 2 and served == reported
    assert printed == shown  # the notes and the environment too
    # and every cell is result.json's value through the report's one formatter
    result = load_result(run_dir)
    for row in served:
        rate = row[2]
        found = {m.metric: m for m in result.measurements if m.params["request_rate"] == rate}
        ttft_p50, req_per_s, failed = row[4], row[10], row[13]
        assert ttft_p50 == format_cell(found["ttft_ms_p50"])
        assert req_per_s == format_cell(found["request_per_s"])
        assert failed == "0"


def test_json_prints_the_result_document_and_progress_goes_to_stderr(stub, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(_serve(stub.base_url, "--json", "--out", str(run_dir))) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # stdout is one JSON document, nothing else
    assert document == json.loads((run_dir / "result.json").read_text())
    assert document["kind"] == "infer-serve" and document["data"]["failure"] is None
    assert "prompt lengths are in words" in " ".join(document["data"]["notes"])
    assert captured.err == f"wrote {run_dir / 'result.json'}\n"  # no progress under --json


def test_failed_run_with_json_still_exits_1_and_says_why(tmp_path, capsys):
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, fail_every=2)).start()
    try:
        argv = _serve(server.base_url, "--warmup", "0", "--max-error-rate", "0.1", "--json",
                      "--out", str(tmp_path))  # fmt: skip
        assert main(argv) == 1
    finally:
        server.stop()
    document = json.loads(capsys.readouterr().out)
    assert "more than --max-error-rate 0.1" in document["data"]["failure"]


def test_without_out_each_run_gets_its_own_directory_under_runs(stub, capsys):
    assert main(_serve(stub.base_url)) == 0
    assert main(_serve(stub.base_url)) == 0
    made = sorted(Path("runs").glob("infer-serve-*"))
    assert len(made) == 2 and all((d / "result.json").is_file() for d in made)
    err = capsys.readouterr().err
    assert f"wrote {made[0] / 'result.json'}" in err
    assert "rate=inf concurrency=2: 5 ok" in err  # one progress line per point, on stderr


def test_bad_options_make_no_run_directory(stub, capsys):
    assert main(_serve(stub.base_url, "--slo", "ttft=soon")) == 2
    assert main(_serve(stub.base_url, "--workload", "jsonl")) == 2
    assert not Path("runs").exists()


def test_local_json_and_monitor_memory(cpu_platform, tiny_model, tmp_path, capsys):
    out = tmp_path / "local"
    argv = ["infer", "local", str(tiny_model), "--precision", "fp32", "--prompt-lens", "4",
            "--output-lens", "2", "--iters", "1", "--monitor-memory", "--json", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["kind"] == "infer-local"
    peaks = [m for m in document["measurements"] if m["suite"] == "memory"]
    assert [m["metric"] for m in peaks] == ["peak_rss"] and peaks[0]["value"] > 10  # MiB, torch
    assert (out / "memory.json").is_file()
    assert document == json.loads((out / "result.json").read_text())  # exactly the saved run


def _local(model_dir: Path, *tail: str) -> list[str]:
    return ["infer", "local", str(model_dir), "--precision", "fp32", "--prompt-lens", "4",
            "--output-lens", "2", "--iters", "1", "--warmup", "0", *tail]  # fmt: skip


def test_local_prints_what_rocmkit_report_prints(cpu_platform, tiny_model, tmp_path, capsys):
    run_dir = tmp_path / "local"
    assert main(_local(tiny_model, "--out", str(run_dir))) == 0
    local = capsys.readouterr()
    assert main(["report", str(run_dir)]) == 0
    reported = capsys.readouterr().out
    assert _table_rows(local.out) and _table_rows(local.out) == _table_rows(reported)
    assert local.out == reported  # the notes and the environment too
    assert local.err == f"wrote {run_dir / 'result.json'}\n"


def test_exit_codes_come_from_the_saved_outcome(stub, tiny_model, tmp_path, capsys):
    failed = _serve(stub.base_url, "--model", "stub-error", "--warmup", "0")
    assert main([*failed, "--out", str(tmp_path / "failed")]) == 1
    assert load_result(tmp_path / "failed").outcome == "failed"
    assert main(_local(tiny_model, "--iters", "0", "--out", str(tmp_path / "bad"))) == 2
    assert main(["infer"]) == 2  # no mode
    assert "required: local|serve" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()  # a user error costs no run directory


def test_the_library_call_returns_what_the_command_saves(stub, tmp_path, cpu_platform):
    from rocmkit import driver
    from rocmkit.errors import UserError
    from rocmkit.infer.command import run
    from rocmkit.infer.settings import ServeSettings

    settings = ServeSettings(url=stub.base_url, num_prompts=3, output_len=2, save_requests=True)
    with pytest.raises(UserError, match="--save-requests needs a run directory"):
        run(settings)  # the command's library call: a quiet Context with no run directory
    result = run(settings, driver.Context(out=tmp_path))
    assert result.kind == "infer-serve" and result.outcome == "ok"
    assert driver.exit_code(result) == 0
    assert result.config["model"] == "stub"  # discovered from /models, as the command does
    done = {m.metric: m.value for m in result.measurements}
    assert done["num_completed"] == 3
    assert len((tmp_path / "requests.jsonl").read_text().splitlines()) == 3
