"""The streaming client and load generator against the stub server's known timings."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from stub_server import StubConfig, StubServer

from rocmkit.infer.client import Client, Endpoint, SseReader, parse_sse_line
from rocmkit.infer.loadgen import LoadConfig, LoadResult, run_load
from rocmkit.infer.metrics import summarize
from rocmkit.infer.workloads import Prompt, random_workload

TTFT_S, ITL_S, TOKENS = 0.10, 0.02, 8


@pytest.fixture(scope="module")
def stub():
    server = StubServer(StubConfig(ttft_s=TTFT_S, itl_s=ITL_S)).start()
    yield server
    server.stop()


def _load(
    base_url: str,
    *,
    model: str = "stub",
    api: str = "completions",
    num: int = 6,
    timeout_s: float = 10.0,
    load: LoadConfig | None = None,
    kick=None,
) -> LoadResult:
    endpoint = Endpoint(base_url=base_url, model=model, api=api, timeout_s=timeout_s)  # type: ignore[arg-type]
    prompts = random_workload(num_prompts=num, input_len=5, output_len=TOKENS).prompts

    async def main() -> LoadResult:
        if kick is not None:
            kick()
        async with Client(endpoint) as client:
            return await run_load(prompts, client.send, load or LoadConfig(max_concurrency=3))

    return asyncio.run(main())


def test_sse_lines_of_both_apis():
    assert parse_sse_line('data: {"choices":[{"text":"hi"}]}').text == "hi"
    assert parse_sse_line('data: {"choices":[{"delta":{"content":"yo"}}]}').text == "yo"
    assert parse_sse_line('data: {"choices":[{"delta":{"role":"assistant"}}]}').text == ""
    usage = parse_sse_line('data: {"choices":[],"usage":{"completion_tokens":7}}')
    assert usage.text is None and usage.usage == {"completion_tokens": 7}
    assert parse_sse_line("data: [DONE]").done
    assert "overloaded" in parse_sse_line('data: {"error":{"message":"overloaded"}}').error
    assert "not JSON" in parse_sse_line("data: {oops").error
    assert parse_sse_line(": keep-alive") is None and parse_sse_line("") is None


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_measured_latencies_match_the_stub_delays(stub, api):
    result = _load(stub.base_url, api=api)
    s = summarize(result.records, result.duration_s)
    assert s.num_completed == 6 and s.num_failed == 0
    assert s.total_output_tokens == 6 * TOKENS and s.tokens_from_usage
    # a loaded 2-core machine: the stub may send late, never early
    assert TTFT_S - 0.001 <= s.ttft.median <= TTFT_S + 0.015
    assert s.tpot.mean == pytest.approx(ITL_S, abs=0.003)
    assert s.itl.count == 6 * (TOKENS - 1) and s.itl.median == pytest.approx(ITL_S, abs=0.004)
    assert s.e2e.median == pytest.approx(TTFT_S + (TOKENS - 1) * ITL_S, abs=0.02)


def test_tokens_are_counted_when_the_server_sends_no_usage():
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, usage=False)).start()
    try:
        result = _load(server.base_url, num=2)
    finally:
        server.stop()
    assert [r.output_tokens for r in result.records] == [TOKENS, TOKENS]
    assert not any(r.tokens_from_usage for r in result.records)


def test_http_errors_are_counted_and_the_run_continues():
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, fail_every=3)).start()
    try:
        result = _load(server.base_url, num=9, load=LoadConfig(max_concurrency=1))
    finally:
        server.stop()
    s = summarize(result.records, result.duration_s)
    assert (s.num_completed, s.num_failed) == (6, 3)
    assert s.errors == {'HTTP 500: {"error": {"message": "stub failure"}}': 3}


def test_error_model_fails_every_request(stub):
    result = _load(stub.base_url, model="stub-error", num=3)
    assert all(not r.ok and r.error.startswith("HTTP 500") for r in result.records)


def test_stalled_stream_times_out_per_request(stub):
    start = time.perf_counter()
    result = _load(stub.base_url, model="stub-stall", num=3, timeout_s=0.4)
    assert time.perf_counter() - start < 3
    assert [r.error for r in result.records] == ["timeout after 0.4 s"] * 3
    assert result.stopped is None


def test_run_deadline_cancels_what_is_in_flight(stub):
    start = time.perf_counter()
    load = LoadConfig(max_concurrency=2, deadline_s=time.perf_counter() + 0.5)
    result = _load(stub.base_url, model="stub-stall", num=4, timeout_s=30, load=load)
    assert time.perf_counter() - start < 3
    assert result.stopped == "run timeout"
    # the two in flight failed; the two waiting for a slot were never sent, and are not failures
    assert [r.error for r in result.records] == ["cancelled: run timeout"] * 2
    assert all(r.cancelled for r in result.records) and result.num_unsent == 2


def test_ctrl_c_ends_the_run_with_a_partial_result(stub):
    def interrupt_soon() -> None:
        asyncio.get_running_loop().call_later(0.4, os.kill, os.getpid(), signal.SIGINT)

    load = LoadConfig(max_concurrency=2, request_rate=20.0)
    result = _load(stub.base_url, num=40, load=load, kick=interrupt_soon)
    assert result.stopped == "interrupted"
    assert 0 < len(result.records) < 40  # later arrivals were never sent
    assert result.num_unsent == 40 - len(result.records)  # counted as unsent, not failed
    assert sum(not r.ok for r in result.records) <= 2  # only those in flight were cancelled
    assert any(r.ok for r in result.records)


def test_concurrency_cap_and_warmup_exclusion():
    server = StubServer(StubConfig(ttft_s=0.05, itl_s=0.0)).start()
    try:
        result = _load(server.base_url, num=6, load=LoadConfig(max_concurrency=2, num_warmup=3))
        sent, connections = server.stats.num_requests, server.stats.num_connections
    finally:
        server.stop()
    assert sent == 9 and len(result.records) == 6  # warm-up sent but not measured
    assert connections == 2  # kept alive: one per request in flight, not one per request
    assert result.duration_s >= 3 * 0.05  # 6 requests, 2 at a time, 50 ms each


def test_unreachable_server_is_recorded_not_raised():
    async def main():
        endpoint = Endpoint(base_url="http://127.0.0.1:9/v1", model="x", timeout_s=2)
        async with Client(endpoint) as client:
            return await client.send(
                Prompt(messages=({"role": "user", "content": "hi"},), max_tokens=2)
            )

    record = asyncio.run(main())
    assert not record.ok and record.error.startswith("Connect") and record.unreachable


def test_sse_reader_splits_events_across_network_chunks():
    reader = SseReader()
    wire = (
        b'data: {"choices":[{"text":"a"}]}\r\n\r\ndata: {"choices":[{"text":"b"}]}\n\n'
        b': keep-alive\n\ndata: {"choices":[],"usage":{"completion_tokens":2}}\n\ndata: [DONE]\n\n'
    )
    cut = wire.index(b"\r\n\r\n") + 3  # inside the first event's blank line
    pieces = [wire[:10], wire[10:cut], wire[cut : cut + 1], wire[cut + 1 :]]
    for now, piece in enumerate(pieces):
        reader.feed(piece, float(now))
    assert reader.pieces == ["a", "b"] and reader.usage == {"completion_tokens": 2}
    assert reader.first_s == 2.0 and reader.itl_s == [1.0] and reader.error is None


def test_a_kept_alive_connection_closed_under_a_request_is_retried_once():
    server = StubServer(StubConfig(ttft_s=0.0, itl_s=0.0, close_reused=True)).start()
    try:
        result = _load(server.base_url, num=4, load=LoadConfig(max_concurrency=1))
        connections = server.stats.num_connections
    finally:
        server.stop()
    assert all(r.ok for r in result.records), [r.error for r in result.records]
    assert connections >= 4  # each connection served one request, then hung up on the next
