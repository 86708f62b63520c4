"""`rocmkit infer serve|local` as a user runs it: results on disk, one-line errors, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from stub_server import StubConfig, StubServer

import rocmkit
from rocmkit.cli.main import main
from rocmkit.results import load_result

SRC = str(Path(rocmkit.__file__).resolve().parent.parent)


def _pythonpath() -> str:
    """This checkout's src first, then the caller's PYTHONPATH (where extras may be installed)."""
    return os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)


@pytest.fixture(scope="module")
def stub():
    server = StubServer(StubConfig(ttft_s=0.02, itl_s=0.005)).start()
    yield server
    server.stop()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _one_line_exit_2(argv: list[str], capsys) -> str:
    capsys.readouterr()  # what earlier runs printed (progress goes to stderr too)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_serve_sweep_writes_an_inference_result(stub, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["infer", "serve", "--url", stub.base_url, "--model", "stub", "--api", "chat",
            "--num-prompts", "6", "--input-len", "8", "--output-len", "4", "--rate", "100,inf",
            "--concurrency", "3", "--slo", "ttft=1s,tpot=1s", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "TTFT p50 (ms)" in printed and "prompt lengths are in words" in printed
    result = load_result(out)
    assert result.kind == "infer-serve"
    names = {m.name for m in result.measurements}
    assert names == {"stub rate=100 concurrency=3", "stub rate=inf concurrency=3"}
    by_metric = {(m.name, m.metric): m for m in result.measurements}
    point = "stub rate=inf concurrency=3"
    assert by_metric[(point, "num_completed")].value == 6
    assert (
        by_metric[(point, "goodput_req_per_s")].value == by_metric[(point, "request_per_s")].value
    )
    assert (
        by_metric[(point, "ttft_ms_p99")].unit == "ms"
        and by_metric[(point, "ttft_ms_p99")].value >= 19
    )
    assert by_metric[(point, "ttft_ms_p50")].params["request_rate"] == "inf"
    json.loads((out / "result.json").read_text())  # strict JSON: no Infinity


def test_config_file_fills_options_and_flags_win(stub, tmp_path, capsys):
    config = tmp_path / "bench.toml"
    config.write_text(
        f'url = "{stub.base_url}"\nmodel = "stub"\nnum-prompts = 50\noutput_len = 3\n'
        'concurrency = [2, 4]\nslo = "ttft=1s"\n'
    )
    argv = [
        "infer",
        "serve",
        "--config",
        str(config),
        "--num-prompts",
        "4",
        "--out",
        str(tmp_path / "r"),
    ]
    assert main(argv) == 0
    rows = load_result(tmp_path / "r").measurements
    assert {m.params["max_concurrency"] for m in rows} == {2, 4}
    done = [m for m in rows if m.metric == "num_completed"]
    assert [m.value for m in done] == [4, 4]  # the flag beat the file's 50
    assert any(m.metric == "goodput_req_per_s" for m in rows)
    config.write_text('url = "http://127.0.0.1:1/v1"\nmodel = "m"\nnum_prompt = 3\n')
    assert "unknown setting 'num_prompt'" in _one_line_exit_2(
        ["infer", "serve", "--config", str(config)], capsys
    )
    config.write_text('model = "m"\n')
    assert "--url is required" in _one_line_exit_2(
        ["infer", "serve", "--config", str(config)], capsys
    )
    config.write_text('url = "http://x/v1"\nmodel = "m"\napi = "grpc"\n')
    assert "api must be one of" in _one_line_exit_2(
        ["infer", "serve", "--config", str(config)], capsys
    )


def test_jsonl_and_sharegpt_workloads_reach_the_server(stub, tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text(
        '{"prompt": "hello there"}\n\n{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}\n'
    )
    assert main(["infer", "serve", "--url", stub.base_url, "--model", "m", "--workload", "jsonl",
                 "--prompts", str(jsonl), "--output-len", "3", "--out", str(tmp_path / "a")]) == 0  # fmt: skip
    done = {m.metric: m.value for m in load_result(tmp_path / "a").measurements}
    assert done["num_completed"] == 2 and done["output_tokens_per_s"] > 0
    share = tmp_path / "sg.json"
    conversations = [
        {
            "conversations": [
                {"from": "human", "value": "why is the sky blue"},
                {"from": "gpt", "value": "light scatters more at short wavelengths"},
            ]
        },
        {"conversations": [{"from": "gpt", "value": "no human turn first"}]},
    ]
    share.write_text(json.dumps(conversations))
    assert main(["infer", "serve", "--url", stub.base_url, "--model", "m", "--workload", "sharegpt",
                 "--prompts", str(share), "--out", str(tmp_path / "b")]) == 0  # fmt: skip
    done = {m.metric: m for m in load_result(tmp_path / "b").measurements}
    assert done["num_completed"].value == 1
    assert stub.stats.payloads[-1]["max_tokens"] == 6  # 6 reply words -> 6 tokens asked for
    assert done["total_output_tokens"].value == 6


def test_shared_prefix_turns_extend_the_previous_prompt():
    from rocmkit.infer.workloads import shared_prefix_workload

    w = shared_prefix_workload(
        num_conversations=2, num_turns=3, prefix_len=50, turn_len=5, output_len=4
    )
    assert len(w.prompts) == 6
    first, later = w.prompts[0].text, w.prompts[4].text  # conversation 0, turns 1 and 3
    assert later.startswith(first) and len(later.split()) == 50 + 3 * 5 + 2 * 4
    assert w.prompts[0].messages[0] == w.prompts[1].messages[0]  # one system prefix for all


def test_failed_requests_are_saved_and_explained(stub, tmp_path, capsys):
    argv = ["infer", "serve", "--url", stub.base_url, "--model", "stub-error", "--num-prompts", "3",
            "--warmup", "0", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 1  # a run whose every request failed is a failed run
    assert "3 requests failed, most often: HTTP 500" in capsys.readouterr().out
    rows = load_result(tmp_path).measurements
    done = {m.metric: m for m in rows}
    assert done["num_failed"].value == 3 and done["ttft_ms_p50"].value is None
    assert next(iter(done["num_failed"].extra["errors"].values())) == 3


def test_unreachable_url_is_one_line_exit_2(capsys):
    err = _one_line_exit_2(
        ["infer", "serve", "--url", f"http://127.0.0.1:{_closed_port()}/v1", "--model", "x"], capsys
    )
    assert "cannot reach the server" in err


@pytest.mark.parametrize(
    ("argv_tail", "needle"),
    [
        (["--workload", "jsonl"], "needs --prompts"),
        (["--slo", "ttft=fast"], "bad SLO"),
        (["--rate", "0"], "--rate"),
        (["--url", "127.0.0.1:8000"], "http://"),
        (["--concurrency", "x"], "concurrency"),
        (["--tokenizer", "/nonexistent/tok"], "tokenizer directory not found"),
        (["--num-prompts", "0"], "--num-prompts"),
        (["--timeout", "0"], "--timeout"),
        (["--burstiness", "0"], "burstiness"),
        (["--workload", "sharegpt", "--prompts", "/nonexistent.json"], "not found"),
    ],
)
def test_bad_serve_options_are_one_line_exit_2(stub, argv_tail, needle, capsys):
    argv = ["infer", "serve", "--url", stub.base_url, "--model", "m", *argv_tail]
    assert needle in _one_line_exit_2(argv, capsys)


def test_malformed_jsonl_names_the_line(stub, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\n{"prompt": \n')
    err = _one_line_exit_2(["infer", "serve", "--url", stub.base_url, "--model", "m", "--workload", "jsonl",
                            "--prompts", str(bad)], capsys)  # fmt: skip
    assert "bad.jsonl:2" in err
    bad.write_text('{"text": "no prompt key"}\n')
    assert "bad.jsonl:1" in _one_line_exit_2(
        [
            "infer",
            "serve",
            "--url",
            stub.base_url,
            "--model",
            "m",
            "--workload",
            "jsonl",
            "--prompts",
            str(bad),
        ],
        capsys,
    )


def test_model_dir_without_config_is_one_line_exit_2(tmp_path, capsys):
    assert "no config.json" in _one_line_exit_2(["infer", "local", str(tmp_path)], capsys)
    (tmp_path / "config.json").write_text("{}")
    for flag, value in (("--batch-sizes", "0"), ("--output-lens", "a,b"), ("--iters", "0")):
        assert flag.strip("-").split("-")[0] in _one_line_exit_2(
            ["infer", "local", str(tmp_path), flag, value], capsys
        )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "code", "why"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_ctrl_c_or_sigterm_saves_the_partial_result(tmp_path, signum, code, why):
    server = StubServer(StubConfig(ttft_s=0.01, itl_s=0.0)).start()
    out = tmp_path / "partial"
    env = {**os.environ, "PYTHONPATH": _pythonpath(), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "rocmkit", "infer", "serve", "--url", server.base_url, "--model", "stub",
           "--num-prompts", "3000", "--output-len", "2", "--rate", "200", "--concurrency", "4", "--out", str(out)]  # fmt: skip
    try:
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 20
        while server.stats.num_requests < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        server.stop()
    assert proc.returncode == code, stderr  # the driver's exit-code table
    assert f"partial run: {why}" in stdout and load_result(out).outcome == why
    done = {m.metric: m.value for m in load_result(out).measurements}
    assert 0 < done["num_completed"] < 3000
    # requests never sent are unsent, not failed: only the <= 4 in flight were cut off
    assert done["num_unsent"] > 0 and done["num_failed"] <= 4
    assert done["num_requests"] + done["num_unsent"] == 3000


def test_preset_file_dotted_override_and_flag_in_that_order(stub, tmp_path):
    config = tmp_path / "serve.toml"
    config.write_text("[serve]\ninput_len = 9\noutput-len = 5\nnum_prompts = 3\n")
    argv = ["infer", "serve", "--url", stub.base_url, "--preset", "decode-heavy",
            "--config", str(config), "--serve.output_len", "4", "--num-prompts", "2",
            "--concurrency", "2", "--out", str(tmp_path / "r")]  # fmt: skip
    assert main(argv) == 0
    saved = load_result(tmp_path / "r").config
    assert saved["ignore_eos"] is True  # from the preset
    assert saved["input_len"] == 9  # the file beat the preset's 128
    assert saved["output_len"] == 4  # the dotted override beat the file
    assert saved["num_prompts"] == 2 and saved["concurrency"] == [2]  # flags beat everything


@pytest.mark.parametrize(
    ("argv_tail", "needle"),
    [
        (["--preset", "nope"], "unknown preset 'nope'; available for serve: decode-heavy"),
        (["--local.iters", "3"], "settings of this command are --serve.NAME"),
        (["--serve.num_prompt", "3"], "unknown setting 'num_prompt'"),
    ],
)
def test_bad_presets_and_overrides_are_one_line_exit_2(stub, argv_tail, needle, capsys):
    argv = ["infer", "serve", "--url", stub.base_url, "--model", "m", *argv_tail]
    assert needle in _one_line_exit_2(argv, capsys)
