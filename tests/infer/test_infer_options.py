"""Request and load options of `rocmkit infer serve`, each checked against what the stub received."""

from __future__ import annotations

import itertools
import json
import time

import pytest
from stub_server import StubConfig, StubServer

from rocmkit.cli.main import main
from rocmkit.infer.loadgen import arrival_offsets, ramp_offsets
from rocmkit.results import load_result


@pytest.fixture
def stub():
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0)).start()
    yield server
    server.stop()


def _serve(url: str, out, *tail: str) -> int:
    argv = ["infer", "serve", "--url", url, "--num-prompts", "4", "--output-len", "3",
            "--warmup", "0", "--out", str(out), *tail]  # fmt: skip
    return main(argv)


def _rows(out) -> dict:
    return {m.metric: m for m in load_result(out).measurements}


def test_api_key_from_flag_or_environment_and_masked_in_the_result(tmp_path, monkeypatch, capsys):
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, api_key="sk-test")).start()
    try:
        assert _serve(server.base_url, tmp_path / "a", "--model", "m", "--api-key", "sk-test") == 0
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        assert _serve(server.base_url, tmp_path / "b", "--model", "m") == 0
        monkeypatch.delenv("OPENAI_API_KEY")
        assert _serve(server.base_url, tmp_path / "c", "--model", "m", "--warmup", "1") == 2
        err = capsys.readouterr().err
        assert "HTTP 401" in err and "check --api-key" in err
    finally:
        server.stop()
    saved = (tmp_path / "a" / "result.json").read_text()
    assert "sk-test" not in saved and load_result(tmp_path / "a").config["api_key"] == "***"


def test_headers_extra_body_and_sampling_reach_the_server(stub, tmp_path):
    assert _serve(stub.base_url, tmp_path, "--model", "m", "--header", "X-Team: infer",
                  "--header", "X-Run:7", "--extra-body", '{"seed": 5, "min_p": 0.1}',
                  "--temperature", "0.7", "--top-p", "0.9", "--top-k", "20", "--ignore-eos") == 0  # fmt: skip
    assert stub.stats.last_headers["x-team"] == "infer" and stub.stats.last_headers["x-run"] == "7"
    body = stub.stats.payloads[-1]
    assert (body["seed"], body["min_p"], body["temperature"]) == (5, 0.1, 0.7)
    assert (body["top_p"], body["top_k"], body["ignore_eos"]) == (0.9, 20, True)
    assert load_result(tmp_path).config["header"] == ["X-Team:***", "X-Run:***"]


@pytest.mark.parametrize(
    ("tail", "needle"),
    [
        (["--header", "no-colon"], "NAME:VALUE"),
        (["--extra-body", "[1]"], "JSON object"),
        (["--extra-body", "{bad"], "not valid JSON"),
        (["--random-range-ratio", "1.5"], "range-ratio"),
        (["--ramp-up-time", "2"], "finite --rate"),
        (["--workload", "trace"], "needs --prompts"),
    ],
)
def test_bad_option_values_are_one_line_exit_2(stub, tmp_path, tail, needle, capsys):
    assert _serve(stub.base_url, tmp_path, "--model", "m", *tail) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_random_range_ratio_varies_lengths_within_bounds(stub, tmp_path):
    assert _serve(stub.base_url, tmp_path, "--model", "m", "--num-prompts", "40", "--input-len", "20",
                  "--output-len", "10", "--random-range-ratio", "0.5") == 0  # fmt: skip
    asked = [p["max_tokens"] for p in stub.stats.payloads]
    words = [len(p["prompt"].split()) for p in stub.stats.payloads]
    assert min(asked) >= 5 and max(asked) <= 15 and len(set(asked)) > 3
    assert min(words) >= 10 and max(words) <= 30 and len(set(words)) > 3
    assert _rows(tmp_path)["total_output_tokens"].value == sum(asked)


def test_model_is_discovered_when_not_given(tmp_path):
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, models=("alpha", "beta"))).start()
    try:
        assert _serve(server.base_url, tmp_path) == 0
    finally:
        server.stop()
    assert {p["model"] for p in server.stats.payloads} == {"alpha"}
    assert _rows(tmp_path)["num_completed"].params["model"] == "alpha"
    assert load_result(tmp_path).config["model"] == "alpha"


def test_no_stream_times_the_whole_answer(tmp_path):
    server = StubServer(StubConfig(ttft_s=0.03, itl_s=0.01)).start()
    try:
        assert (
            _serve(server.base_url, tmp_path, "--model", "m", "--no-stream", "--api", "chat") == 0
        )
    finally:
        server.stop()
    assert all(p["stream"] is False and "stream_options" not in p for p in server.stats.payloads)
    rows = _rows(tmp_path)
    assert rows["num_completed"].value == 4 and rows["total_output_tokens"].value == 12
    assert rows["ttft_ms_p50"].value == pytest.approx(rows["e2e_ms_p50"].value)
    assert rows["ttft_ms_p50"].value >= 30 + 2 * 10  # the whole answer, not its first token
    assert rows["num_completed"].params["stream"] is False


@pytest.mark.slow
def test_wait_ready_polls_until_the_server_has_loaded(tmp_path, capsys):
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, ready_after_s=1.0)).start()
    began = time.monotonic()
    try:
        assert _serve(server.base_url, tmp_path / "a", "--model", "m", "--wait-ready", "10") == 0
        assert time.monotonic() - began >= 1.0
        assert _rows(tmp_path / "a")["num_failed"].value == 0
    finally:
        server.stop()
    slow = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, ready_after_s=30.0)).start()
    try:
        assert _serve(slow.base_url, tmp_path / "b", "--model", "m", "--wait-ready", "0.6") == 1
    finally:
        slow.stop()
    assert "not ready after 0.6 s (last answer: HTTP 503)" in capsys.readouterr().err


def test_ramp_up_spreads_the_first_sends():
    # at 10 req/s the due times 0, 0.1, ...; with a 2 s ramp the first go later, then shift by 1 s
    ramped = ramp_offsets([0.0, 0.1, 0.4, 1.0, 2.0], 2.0)
    assert ramped[0] == 0.0 and ramped[1] == pytest.approx(0.632, abs=1e-3)
    assert ramped[2] == pytest.approx(1.265, abs=1e-3) and ramped[3:] == [2.0, 3.0]
    assert all(b > a for a, b in itertools.pairwise(ramped))


def test_ramp_up_reaches_the_server(stub, tmp_path):
    assert _serve(stub.base_url, tmp_path, "--model", "m", "--num-prompts", "6", "--rate", "20",
                  "--ramp-up-time", "1") == 0  # fmt: skip
    flat = arrival_offsets(6, 20.0, 1.0, 0)
    want = ramp_offsets(flat, 1.0)
    sent = [t - stub.stats.arrivals_s[0] for t in stub.stats.arrivals_s]
    assert sent == pytest.approx(want, abs=0.05) and want[-1] > flat[-1] + 0.2


@pytest.mark.parametrize("kind", ["burstgpt", "mooncake"])
def test_trace_replay_follows_timestamps_and_lengths(stub, tmp_path, kind):
    if kind == "burstgpt":
        trace = tmp_path / "trace.csv"
        trace.write_text(
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
            "5.0,ChatGPT,12,4,16,Conversation log\n5.4,ChatGPT,30,0,30,Conversation log\n"
            "5.5,GPT-4,8,2,10,Conversation log\n5.8,ChatGPT,20,6,26,Conversation log\n"
        )
        want_in, want_out, want_t = [12, 8, 20], [4, 2, 6], [0.0, 0.5, 0.8]
    else:
        trace = tmp_path / "trace.jsonl"
        lines = [{"timestamp": 1000, "input_length": 600, "output_length": 3, "hash_ids": [7, 8]},
                 {"timestamp": 1500, "input_length": 700, "output_length": 5, "hash_ids": [7, 9]},
                 {"timestamp": 1800, "input_length": 100, "output_length": 2, "hash_ids": [3]}]  # fmt: skip
        trace.write_text("\n".join(json.dumps(line) for line in lines))
        want_in, want_out, want_t = [600, 700, 100], [3, 5, 2], [0.0, 0.5, 0.8]
    out = tmp_path / "run"
    assert _serve(stub.base_url, out, "--model", "m", "--workload", "trace", "--prompts", str(trace),
                  "--save-requests") == 0  # fmt: skip
    payloads = stub.stats.payloads
    assert [p["max_tokens"] for p in payloads] == want_out
    assert [len(p["prompt"].split()) for p in payloads] == want_in
    if kind == "mooncake":  # a shared block id means a shared prefix
        assert payloads[0]["prompt"].split()[:512] == payloads[1]["prompt"].split()[:512]
        assert payloads[0]["prompt"].split()[512:] != payloads[1]["prompt"].split()[512:600]
    sent = [stub.stats.arrivals_s[i] - stub.stats.arrivals_s[0] for i in range(3)]
    assert sent == pytest.approx(want_t, abs=0.05)
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    assert [x["scheduled_s"] for x in lines] == pytest.approx(want_t, abs=1e-6)


def test_slo_attainment_is_reported_per_metric(tmp_path):
    server = StubServer(StubConfig(ttft_s=0.05, itl_s=0.001)).start()
    try:
        assert (
            _serve(server.base_url, tmp_path, "--model", "m", "--slo", "ttft=10ms,tpot=20ms") == 0
        )
    finally:
        server.stop()
    rows = _rows(tmp_path)
    assert rows["slo_ttft_attainment"].value == 0.0  # every TTFT is ~50 ms
    assert rows["slo_tpot_attainment"].value == 1.0
    assert rows["goodput_req_per_s"].value == 0.0
