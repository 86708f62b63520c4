"""Issue 28's edges, each against a faulty stub server: a server killed mid-run, a flaky warm-up,
the default error budget, Ctrl-C's unsent requests, and TPOT without streaming."""

from __future__ import annotations

import threading
import time

import pytest
from stub_server import StubConfig, StubServer

from rocmkit.cli.main import main
from rocmkit.infer.guards import DEFAULT_MAX_ERROR_RATE
from rocmkit.results import load_result


def _serve(url: str, out, *tail: str) -> int:
    argv = ["infer", "serve", "--url", url, "--model", "m", "--output-len", "2",
            "--out", str(out), *tail]  # fmt: skip
    return main(argv)


def _figures(out) -> dict:
    return {m.metric: m.value for m in load_result(out).measurements}


def _stop_after(server: StubServer, num_requests: int) -> None:
    """Kill the server once it has answered `num_requests` (polled, for at most 30 s)."""
    deadline = time.monotonic() + 30
    while server.stats.num_requests < num_requests and time.monotonic() < deadline:
        time.sleep(0.01)
    server.stop()


def test_a_server_killed_mid_run_exits_1_even_within_the_error_budget(tmp_path, capsys):
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0)).start()
    threading.Thread(target=_stop_after, args=(server, 8), daemon=True).start()
    # 20 requests over ~1 s: the first 8 are answered, the rest find nothing listening
    code = _serve(server.base_url, tmp_path, "--num-prompts", "20", "--rate", "20",
                  "--concurrency", "2", "--warmup", "0", "--max-error-rate", "1")  # fmt: skip
    assert code == 1
    done = _figures(tmp_path)
    assert done["num_completed"] > 0 and done["num_failed"] > 0
    result = load_result(tmp_path)
    assert result.outcome == "failed"
    assert "the server became unreachable during the run" in result.data["failure"]
    assert "could not connect" in capsys.readouterr().out


def test_one_500_at_warm_up_is_retried_and_the_run_goes_on(tmp_path, capsys):
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, fail_first=1)).start()
    try:
        assert _serve(server.base_url, tmp_path, "--num-prompts", "5") == 0
        sent = server.stats.num_requests
    finally:
        server.stop()
    assert sent == 2 + 5  # the warm-up twice (one 500, one retry), then the measured five
    assert _figures(tmp_path)["num_completed"] == 5


def test_a_warm_up_failing_every_retry_gives_up_in_one_line(tmp_path, capsys):
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, fail_first=100)).start()
    try:
        code = _serve(server.base_url, tmp_path, "--num-prompts", "5", "--warmup-retries", "2")
        sent = server.stats.num_requests
    finally:
        server.stop()
    assert code == 1 and sent == 3  # one try and two retries, nothing measured
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "warm-up request failed: HTTP 500" in err and "(3 attempts, --warmup-retries 2)" in err


def test_the_default_error_budget_fails_a_run_above_it_and_passes_one_at_it(tmp_path, capsys):
    assert DEFAULT_MAX_ERROR_RATE == 0.05
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, fail_every=20)).start()
    try:  # request 20 of 20 fails: 5%, at the budget
        assert _serve(server.base_url, tmp_path / "a", "--num-prompts", "20", "--warmup", "0") == 0
    finally:
        server.stop()
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, fail_every=5)).start()
    try:  # 4 of 20 fail: 20%, the run of the issue that exited 0
        assert _serve(server.base_url, tmp_path / "b", "--num-prompts", "20", "--warmup", "0") == 1
    finally:
        server.stop()
    assert (
        "4 of 20 requests failed (20%), more than --max-error-rate 0.05" in capsys.readouterr().out
    )
    assert load_result(tmp_path / "b").outcome == "failed"


def test_a_run_timeout_reports_unsent_requests_and_cancels_only_those_in_flight(tmp_path):
    server = StubServer(StubConfig(ttft_s=2.0, itl_s=0.0)).start()
    try:
        code = _serve(server.base_url, tmp_path, "--num-prompts", "10", "--concurrency", "4",
                      "--warmup", "0", "--run-timeout", "0.5")  # fmt: skip
    finally:
        server.stop()
    done = _figures(tmp_path)
    assert (done["num_requests"], done["num_failed"], done["num_unsent"]) == (4, 4, 6)
    assert code == 1  # nothing completed: a run without a single answer is not a result


def test_requests_cut_off_by_the_run_timeout_do_not_count_against_the_budget(tmp_path):
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0)).start()
    try:  # 40 at 20 req/s last 2 s; cut at 1 s: about half sent, a few in flight, all fine
        code = _serve(server.base_url, tmp_path, "--num-prompts", "40", "--rate", "20",
                      "--warmup", "0", "--run-timeout", "1")  # fmt: skip
    finally:
        server.stop()
    done = _figures(tmp_path)
    assert code == 0 and done["num_unsent"] > 0
    assert done["num_requests"] + done["num_unsent"] == 40


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_no_stream_reports_tpot_as_not_available(tmp_path, api, capsys):
    server = StubServer(StubConfig(ttft_s=0.01, itl_s=0.005)).start()
    try:
        assert _serve(server.base_url, tmp_path, "--num-prompts", "4", "--output-len", "4",
                      "--no-stream", "--api", api) == 0  # fmt: skip
        printed = capsys.readouterr().out
        assert _serve(server.base_url, tmp_path / "slo", "--num-prompts", "4", "--no-stream",
                      "--slo", "tpot=50ms") == 2  # fmt: skip
    finally:
        server.stop()
    done = _figures(tmp_path)
    assert done["num_completed"] == 4
    assert done["tpot_ms_p50"] is None and done["tpot_ms_mean"] is None  # not 0.0
    assert done["e2e_ms_p50"] is not None
    assert "TPOT and ITL are n/a" in printed
    assert "--slo tpot needs streamed answers" in capsys.readouterr().err
