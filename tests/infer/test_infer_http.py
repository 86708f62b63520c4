"""The streaming path below the client: SSE parsing on any chunking, HTTP chunked bodies, and
arrival timestamps (taken when the bytes arrived, not when the client got round to them)."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import socket
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocmkit.infer import http
from rocmkit.infer.client import SseReader

# token texts with the characters that could confuse a byte-level reader: newlines, quotes,
# backslashes, "data: ", "[DONE]", "error", non-ASCII
_TEXT = st.lists(
    st.sampled_from(["a", "Z", " ", "\n", '"', "\\", "data: ", "[DONE]", "error", "é", "€"]),
    min_size=1,
    max_size=6,
).map("".join)


def _event(obj: object, crlf: bool) -> bytes:
    end = b"\r\n\r\n" if crlf else b"\n\n"
    return b"data: " + json.dumps(obj).encode() + end


def _stream(texts: list[str], *, chat: bool, crlf: bool, usage: int | None) -> bytes:
    """An OpenAI-style stream: role chunk (chat), one chunk per text, comments, usage, [DONE]."""
    wire = (
        [_event({"choices": [{"delta": {"role": "assistant", "content": ""}}]}, crlf)]
        if chat
        else []
    )
    for i, text in enumerate(texts):
        choice = {"delta": {"content": text}} if chat else {"text": text, "logprobs": None}
        wire.append(_event({"choices": [{"index": 0, **choice}], "usage": None}, crlf))
        if i % 3 == 1:
            wire.append(b": keep-alive\n\n")
    if usage is not None:
        wire.append(_event({"choices": [], "usage": {"completion_tokens": usage}}, crlf))
    wire.append(b"data: [DONE]\n\n")
    return b"".join(wire)


def _cut(wire: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(wire) + 1) for c in cuts} | {0, len(wire)})
    return [wire[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(_TEXT, min_size=1, max_size=8),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
    chat=st.booleans(),
    crlf=st.booleans(),
    usage=st.one_of(st.none(), st.integers(1, 99)),
)
def test_sse_reader_gives_the_same_tokens_however_the_stream_is_cut(texts, cuts, chat, crlf, usage):
    reader = SseReader()
    pieces = _cut(_stream(texts, chat=chat, crlf=crlf, usage=usage), cuts)
    for now, piece in enumerate(pieces):
        reader.feed(piece, float(now))
    assert reader.error is None
    assert reader.pieces == texts
    assert reader.usage == (None if usage is None else {"completion_tokens": usage})
    # one arrival per token: the first is TTFT, every later one an inter-token latency
    assert reader.first_s is not None and len(reader.itl_s) == len(texts) - 1
    assert reader.first_s + sum(reader.itl_s) == reader.last_s


def test_tokens_of_one_read_share_its_arrival_time():
    reader = SseReader()
    one = _event({"choices": [{"text": "a"}]}, crlf=False)
    reader.feed(one, 0.5)
    reader.feed(one * 3, 1.25)  # three tokens arrived together
    assert reader.first_s == 0.5 and reader.last_s == 1.25
    assert reader.itl_s == [0.75, 0.0, 0.0]  # the gap is carried by the first of them


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"error": {"message": "overloaded", "code": 503}}, "overloaded"),
        ({"object": "error", "message": "context too long"}, "context too long"),
    ],
)
def test_an_error_event_ends_the_stream_with_the_servers_message(payload, expected):
    reader = SseReader()
    reader.feed(_event({"choices": [{"text": "a"}]}, crlf=False), 1.0)
    reader.feed(_event(payload, crlf=False) + _event({"choices": [{"text": "b"}]}, crlf=False), 2.0)
    assert reader.error is not None and expected in reader.error
    assert reader.pieces == ["a"]  # nothing after the error counts


def test_a_malformed_chunk_is_an_error_not_a_token():
    reader = SseReader()
    reader.feed(b'data: {"choices": [{"text": "a"\n\n', 1.0)
    assert reader.error is not None and "not JSON" in reader.error and reader.pieces == []


def test_done_usage_and_role_chunks_are_not_tokens_but_reasoning_is():
    reader = SseReader()
    wire = [
        _event({"choices": [{"delta": {"role": "assistant"}}]}, crlf=False),
        _event({"choices": [{"delta": {"reasoning_content": "hmm"}}]}, crlf=False),
        _event({"choices": [{"delta": {"content": "yes"}}]}, crlf=False),
        _event(
            {"choices": [{"delta": {"content": "!"}}], "usage": {"completion_tokens": 3}}, False
        ),
        b"data: [DONE]\n\n",
    ]
    for now, event in enumerate(wire):
        reader.feed(event, float(now))
    assert reader.pieces == ["hmm", "yes", "!"] and reader.first_s == 1.0
    assert reader.usage == {"completion_tokens": 3} and reader.error is None


class _Fake(http._Exchange):
    """The connection's parsing half, fed by hand."""

    async def _write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def _chunked(body: bytes, size: int) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts) + b"0\r\n\r\n"


# The HTTP/1.1 client parses responses with httptools (the `serve` extra).
needs_httptools = pytest.mark.skipif(
    importlib.util.find_spec("httptools") is None,
    reason="needs the serve extra (httptools): pip install 'rocmkit[serve]'",
)


@needs_httptools
@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(_TEXT, min_size=1, max_size=6),
    chunk_size=st.integers(1, 80),
    cuts=st.lists(st.integers(min_value=0), max_size=10),
)
def test_a_chunked_answer_cut_anywhere_reaches_the_reader_whole(texts, chunk_size, cuts):
    wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    wire += _chunked(_stream(texts, chat=False, crlf=False, usage=len(texts)), chunk_size)

    async def exchange() -> http.Answer:
        connection, reader = _Fake(), SseReader()
        task = asyncio.ensure_future(connection.exchange(b"GET / HTTP/1.1\r\n\r\n", reader.feed))
        await asyncio.sleep(0)
        for now, piece in enumerate(_cut(wire, cuts)):
            connection._feed(piece, float(now))
        answer = await task
        assert reader.pieces == texts and reader.usage == {"completion_tokens": len(texts)}
        return answer

    answer = asyncio.run(exchange())
    assert answer.status == 200 and answer.body == b""  # the sink took the body


def test_kernel_stamp_converts_the_wall_clock_and_ignores_stale_stamps():
    now = time.perf_counter()

    def stamp(age_s: float) -> list[tuple[int, int, bytes]]:
        wall_ns = time.time_ns() - int(age_s * 1e9)
        data = http._TIMESPEC.pack(wall_ns // 1_000_000_000, wall_ns % 1_000_000_000)
        return [(socket.SOL_SOCKET, http._SO_TIMESTAMPNS, data)]

    assert time.perf_counter() - http.kernel_stamp_s(stamp(0.050), now) == pytest.approx(
        0.050, abs=0.005
    )
    assert http.kernel_stamp_s(stamp(120.0), now) == now  # the wall clock stepped: not trusted
    assert http.kernel_stamp_s(stamp(-5.0), now) == now  # from the future: not trusted
    assert http.kernel_stamp_s([], now) == now


@needs_httptools
@pytest.mark.parametrize("runner", [asyncio.run, http.run], ids=["asyncio", "uvloop-if-installed"])
@pytest.mark.parametrize("kernel", [True, False])
def test_a_token_is_timed_when_it_arrived_even_if_the_client_reads_it_late(
    monkeypatch, kernel, runner
):
    """The client's loop is blocked 150 ms while the first token waits in its socket: with kernel
    receive stamps the token is still timed at its arrival; stamped when read, it is late."""
    if kernel and not http._KERNEL_STAMPS:
        pytest.skip("kernel receive stamps are Linux-only")
    monkeypatch.setattr(http, "_KERNEL_STAMPS", kernel)
    event = _event({"choices": [{"text": "a"}]}, crlf=False)

    async def scenario() -> tuple[float, float, float]:
        with socket.create_server(("127.0.0.1", 0)) as server:
            pool = http.HttpPool(f"http://127.0.0.1:{server.getsockname()[1]}/v1")
            reader = SseReader()
            request = pool.head("POST", "/completions", {}, 0)
            task = asyncio.ensure_future(pool.request(request, reader.feed))
            await asyncio.sleep(0.05)  # connected, request sent
            conn, _ = server.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                await asyncio.sleep(0.05)  # the headers are read
                before = time.perf_counter()
                conn.sendall(_chunked(event, 1000)[:-5])  # one token, the body not finished
                after = time.perf_counter()
                time.sleep(0.15)  # the client's loop is busy: it cannot read now
                await asyncio.sleep(0.02)  # now it reads
                conn.sendall(b"0\r\n\r\n")
                await task
            pool.close()
        assert reader.first_s is not None
        return before, after, reader.first_s

    before, after, stamped = runner(scenario())
    if kernel:
        assert before - 0.001 <= stamped <= after + 0.001  # at arrival, not 150 ms later
    else:
        assert stamped >= before + 0.15
