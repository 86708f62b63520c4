"""A stub OpenAI-compatible streaming server with known timings (stdlib asyncio only).

It answers POST /v1/completions and /v1/chat/completions with an SSE stream whose first chunk
leaves `ttft_s` after the request arrived and chunk k leaves at ttft_s + k * itl_s (absolute
deadlines, so delays never drift). The model name picks a behaviour:
  any name        stream max_tokens chunks, one token each
  "stub-error"    answer HTTP 500
  "stub-stall"    send one chunk, then nothing until the client hangs up
`fail_every=N` also fails every Nth request with HTTP 500, `fail_first=N` the first N. It records how late each chunk left
(server-side scheduling error), so a benchmark can tell its own error from the client's.

Run it alone: python tests/infer/stub_server.py --ttft-ms 50 --itl-ms 10  (prints its port).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import threading
from dataclasses import dataclass, field


def _skip_without_the_serve_client() -> None:
    """A test that starts this server drives it with rocmkit's serve client, which needs the
    `serve` extra (httptools): without it the test skips, as tests of other missing extras do
    (a GPU image without httptools failed 61 of them). Run alone, the server needs nothing."""
    if os.environ.get("PYTEST_CURRENT_TEST") and importlib.util.find_spec("httptools") is None:
        import pytest

        pytest.skip("needs the serve extra (httptools): pip install 'rocmkit[serve]'")


@dataclass(kw_only=True)
class StubConfig:
    ttft_s: float = 0.05
    itl_s: float = 0.01
    usage: bool = True  # honour stream_options.include_usage
    fail_every: int = 0  # 0: never
    fail_first: int = 0  # answer HTTP 500 to the first N completion requests (a flaky start)
    models: tuple[str, ...] = ()  # served model names; empty: any name is served
    api_key: str | None = None  # when set, requests need "Authorization: Bearer <key>"
    ready_after_s: float = 0.0  # answer 503 to everything until this long after start
    close_reused: bool = False  # hang up, unanswered, on a connection's second request


@dataclass
class StubStats:
    num_requests: int = 0
    num_connections: int = 0
    lateness_s: list[float] = field(default_factory=list)  # actual - scheduled send time per chunk
    ttft_s: list[float] = field(default_factory=list)  # actual first-chunk send - request arrival
    itl_s: list[float] = field(default_factory=list)  # actual gaps between chunk sends
    arrivals_s: list[float] = field(default_factory=list)  # loop time each POST arrived
    last_headers: dict[str, str] = field(default_factory=dict)  # of the last POST, lower-cased
    payloads: list[dict] = field(default_factory=list)  # every POST body
    # loop time (CLOCK_MONOTONIC, as a client's perf_counter on Linux) each stream's first chunk
    # left, by prompt: a benchmark in another process compares its arrival stamps with these
    first_sent_s: dict[str, float] = field(default_factory=dict)

    def report(self) -> dict:
        """Server-side truth in ms: what the stub really did, to compare with what a client saw."""
        report: dict = {"num_requests": self.num_requests, "num_chunks": len(self.lateness_s)}
        for name, values in (
            ("lateness", self.lateness_s),
            ("ttft", self.ttft_s),
            ("itl", self.itl_s),
        ):
            ordered = sorted(values) or [0.0]
            report[f"{name}_ms_mean"] = 1e3 * sum(ordered) / len(ordered)
            report[f"{name}_ms_p50"] = 1e3 * ordered[len(ordered) // 2]
            report[f"{name}_ms_p99"] = 1e3 * ordered[int(0.99 * (len(ordered) - 1))]
            report[f"{name}_ms_max"] = 1e3 * ordered[-1]
        report["first_sent_s"] = self.first_sent_s
        return report


class StubServer:
    """Start with `start()` (own thread and event loop) or `serve_forever()` in a script."""

    def __init__(self, config: StubConfig | None = None, host: str = "127.0.0.1", port: int = 0):
        self.config = config or StubConfig()
        self.stats = StubStats()
        self.host, self.port = host, port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def _open(self) -> None:
        self._started = asyncio.get_running_loop().time()
        self._server = await asyncio.start_server(self._handle, self.host, self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    def start(self) -> StubServer:
        _skip_without_the_serve_client()
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._open())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is None or self._server is None:
            return
        loop = self._loop
        # close every connection too, as a dying server process would: clients see resets and
        # refused connections, not streams that hang
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def serve_forever(self) -> None:
        await self._open()
        assert self._server is not None
        async with self._server:
            await self._server.serve_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.num_connections += 1
        with contextlib.suppress(
            ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError
        ):
            served = 0
            while True:  # keep-alive: one request after another on this connection
                request = await _read_request(reader)
                if request is None or (self.config.close_reused and served == 1):
                    break  # the second case: the keep-alive race of servers closing idle ones
                served += 1
                await self._respond(request, reader, writer)
        with contextlib.suppress(Exception):
            writer.close()

    async def _respond(
        self,
        request: tuple[str, str, dict[str, str], bytes],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        loop = asyncio.get_running_loop()
        arrived = loop.time()
        method, path, headers, body = request
        if arrived - self._started < self.config.ready_after_s:
            return _send_json(writer, 503, {"error": {"message": "model is loading"}})
        if method == "GET" and path.endswith(
            "/stats"
        ):  # for benchmarks: server-side lateness, then reset
            report, self.stats = self.stats.report(), StubStats()
            return _send_json(writer, 200, report)
        if method == "GET" and path.endswith("/models"):
            ids = self.config.models or ("stub",)
            models = [{"id": name, "object": "model"} for name in ids]
            return _send_json(writer, 200, {"object": "list", "data": models})
        if method != "POST" or path not in ("/v1/completions", "/v1/chat/completions"):
            return _send_json(writer, 404, {"error": {"message": f"no route {method} {path}"}})
        self.stats.num_requests += 1
        self.stats.arrivals_s.append(arrived)
        self.stats.last_headers = headers
        payload = json.loads(body or b"{}")
        self.stats.payloads.append(payload)
        if self.config.api_key and headers.get("authorization") != f"Bearer {self.config.api_key}":
            return _send_json(writer, 401, {"error": {"message": "invalid API key"}})
        model = str(payload.get("model", "stub"))
        if self.config.models and model not in self.config.models:
            message = (
                f"The model `{model}` does not exist.\nServed: {', '.join(self.config.models)}"
            )
            return _send_json(writer, 404, {"error": {"message": message}})
        failing = (
            self.config.fail_every and self.stats.num_requests % self.config.fail_every == 0
        ) or self.stats.num_requests <= self.config.fail_first
        if model == "stub-error" or failing:
            return _send_json(writer, 500, {"error": {"message": "stub failure"}})
        if not payload.get("stream"):
            return await self._respond_whole(payload, arrived, writer)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        chat = "messages" in payload
        if chat:
            _write_event(
                writer, {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
            )
        num_tokens = int(payload.get("max_tokens") or 16)
        sent = arrived
        for k in range(num_tokens):
            deadline = arrived + self.config.ttft_s + k * self.config.itl_s
            await asyncio.sleep(max(0.0, deadline - loop.time()))
            piece = {"delta": {"content": f"t{k} "}} if chat else {"text": f"t{k} "}
            _write_event(writer, {"choices": [{"index": 0, **piece}]})
            now = loop.time()
            self.stats.lateness_s.append(now - deadline)
            (self.stats.itl_s if k else self.stats.ttft_s).append(now - sent)
            if k == 0:
                self.stats.first_sent_s[str(payload.get("prompt", ""))] = now
            sent = now
            await writer.drain()
            if model == "stub-stall":
                await reader.read(1)  # returns when the client hangs up
                raise ConnectionError("client hung up on a stalled stream")
        if self.config.usage and (payload.get("stream_options") or {}).get("include_usage"):
            prompt = payload.get("prompt") or " ".join(m["content"] for m in payload["messages"])
            usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": num_tokens}
            _write_event(writer, {"choices": [], "usage": usage})
        _write_chunk(writer, b"data: [DONE]\n\n")
        _write_chunk(writer, b"")
        await writer.drain()

    async def _respond_whole(
        self, payload: dict, arrived: float, writer: asyncio.StreamWriter
    ) -> None:
        """A non-streamed answer: all tokens at once, after the time the stream would take."""
        num_tokens = int(payload.get("max_tokens") or 16)
        delay = self.config.ttft_s + (num_tokens - 1) * self.config.itl_s
        await asyncio.sleep(max(0.0, arrived + delay - asyncio.get_running_loop().time()))
        text = "".join(f"t{k} " for k in range(num_tokens))
        prompt = payload.get("prompt") or " ".join(m["content"] for m in payload["messages"])
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": num_tokens}
        choice = (
            {"index": 0, "message": {"role": "assistant", "content": text}}
            if "messages" in payload
            else {"index": 0, "text": text}
        )
        answer = {"choices": [choice]}
        if self.config.usage:
            answer["usage"] = usage
        _send_json(writer, 200, answer)


async def _read_request(
    reader: asyncio.StreamReader,
) -> tuple[str, str, dict[str, str], bytes] | None:
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    if not head:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip():
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return method, path, headers, body


def _write_chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def _write_event(writer: asyncio.StreamWriter, obj: dict) -> None:
    _write_chunk(writer, b"data: " + json.dumps(obj).encode() + b"\n\n")


def _send_json(writer: asyncio.StreamWriter, status: int, obj: dict) -> None:
    body = json.dumps(obj).encode()
    reason = {200: "OK", 401: "Unauthorized", 404: "Not Found", 500: "Internal Server Error",
              503: "Service Unavailable"}[status]  # fmt: skip
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    writer.write(head.encode() + body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--itl-ms", type=float, default=10.0)
    args = parser.parse_args()
    server = StubServer(
        StubConfig(ttft_s=args.ttft_ms / 1000, itl_s=args.itl_ms / 1000), port=args.port
    )

    async def run() -> None:
        await server._open()
        print(server.port, flush=True)
        assert server._server is not None
        async with server._server:
            await server._server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":
    main()
