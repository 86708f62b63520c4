"""A broken run must not look like a result: exit codes of `rocmkit infer serve` against the stub."""

from __future__ import annotations

import threading
import time

import pytest
from stub_server import StubConfig, StubServer

from rocmkit.cli.main import main
from rocmkit.infer.guards import UnreachableWatch, point_failure
from rocmkit.infer.metrics import RequestRecord
from rocmkit.results import load_result


@pytest.fixture(scope="module")
def stub():
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, models=("stub", "stub-error"))).start()
    yield server
    server.stop()


def _serve(url: str, *tail: str) -> list[str]:
    return ["infer", "serve", "--url", url, "--num-prompts", "6", "--output-len", "2", *tail]


def test_all_requests_failed_saves_the_result_and_exits_1(stub, tmp_path, capsys):
    argv = _serve(stub.base_url, "--model", "stub-error", "--warmup", "0", "--out", str(tmp_path))
    assert main(argv) == 1
    assert "run failed: all 6 requests failed" in capsys.readouterr().out
    done = {m.metric: m.value for m in load_result(tmp_path).measurements}
    assert done["num_failed"] == 6


def test_max_error_rate_decides_whether_some_failures_fail_the_run(tmp_path, capsys):
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, fail_every=3)).start()
    try:
        tail = ["--model", "m", "--warmup", "0", "--concurrency", "1"]
        assert (
            main(
                _serve(
                    server.base_url, *tail, "--max-error-rate", "0.2", "--out", str(tmp_path / "a")
                )
            )
            == 1
        )
        assert (
            "2 of 6 requests failed (33%), more than --max-error-rate 0.2"
            in capsys.readouterr().out
        )
        assert (
            main(
                _serve(
                    server.base_url, *tail, "--max-error-rate", "0.5", "--out", str(tmp_path / "b")
                )
            )
            == 0
        )
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("url_tail", "model", "needles"),
    [
        ("/v1", "no-such-model", ("HTTP 404", "does not exist", "check --url")),
        ("", "stub", ("HTTP 404", "no route POST /completions", "end in /v1")),
    ],
)
def test_a_wrong_model_or_path_aborts_at_warm_up_with_exit_2(
    stub, url_tail, model, needles, tmp_path, capsys
):
    url = f"http://{stub.host}:{stub.port}{url_tail}"
    assert main(_serve(url, "--model", model, "--out", str(tmp_path))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "warm-up request failed" in err
    assert all(needle in err for needle in needles), err
    assert not (tmp_path / "result.json").exists()  # nothing was measured


@pytest.mark.slow
def test_a_server_error_at_warm_up_aborts_with_exit_1(stub, capsys):
    assert main(_serve(stub.base_url, "--model", "stub-error")) == 1
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and "warm-up request failed: HTTP 500" in err and "stub failure" in err
    )


def test_sending_stops_once_the_server_is_gone(tmp_path, capsys):
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0)).start()
    threading.Timer(0.5, server.stop).start()
    began = time.monotonic()
    argv = ["infer", "serve", "--url", server.base_url, "--model", "m", "--num-prompts", "400",
            "--output-len", "2", "--rate", "40", "--concurrency", "2",
            "--unreachable-timeout", "0.5", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 1
    assert time.monotonic() - began < 5  # the schedule alone lasts 10 s
    printed = capsys.readouterr().out
    assert "server unreachable for 0.5 s, stopped sending" in printed
    done = {m.metric: m.value for m in load_result(tmp_path).measurements}
    assert done["num_completed"] > 0 and done["num_completed"] + done["num_failed"] < 100


def test_unreachable_watch_needs_an_unbroken_run_of_refused_connections():
    now = [0.0]
    watch = UnreachableWatch(2.0, clock=lambda: now[0])
    refused, answered = RequestRecord(ok=False, unreachable=True), RequestRecord(ok=True)
    assert watch(refused) is None
    now[0] = 1.5
    assert watch(answered) is None  # the server answered: the clock restarts
    now[0] = 3.0
    assert watch(refused) is None
    now[0] = 5.0
    assert "unreachable for 2 s" in (watch(refused) or "")


def test_point_failure_rules():
    assert point_failure(10, 10, 1.0) == "all 10 requests failed"
    assert point_failure(10, 1, 0.1) is None  # at the limit is not above it
    assert point_failure(10, 2, 0.1) is not None and point_failure(0, 0, 0.0) is None
