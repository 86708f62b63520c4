"""A lean HTTP/1.1 client for load generation: asyncio protocols over httptools' C parser.

Why not httpx or aiohttp: a streamed token costs them a task wake-up, a line iterator and (httpx)
a pure-Python HTTP parser; at one token per network chunk that is most of the client's CPU, and a
client short of CPU timestamps late. Here each connection is an `asyncio.Protocol`: the parser
(httptools, uvicorn's) calls back with body bytes inside `data_received`, which stamps the arrival
time before anything else runs, and the request's task wakes once, when the answer is complete.
benchmarks/infer_client_overhead.py measures this against httpx and aiohttp.

Connections are kept alive and reused last-in first-out, one request at a time each; no proxies
from the environment (a benchmark talks to the server directly), no redirects, no compression.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rocmkit.errors import UserError, require_extra

# Receives each piece of the answer's body with the perf_counter time its bytes arrived.
BodySink = Callable[[bytes, float], None]
_MAX_KEPT_BODY = 64 * 1024  # non-streamed answers (errors, model lists) kept up to this size


class ConnectFailure(ConnectionError):
    """No connection could be made (refused, unknown host, connect timeout)."""


@dataclass(kw_only=True, slots=True)
class Answer:
    """What came back: status, and the body unless a sink consumed it."""

    status: int
    body: bytes
    sent_s: float  # perf_counter right after the request was handed to the socket
    received_s: float  # perf_counter when the answer's last bytes arrived


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; one request at a time."""

    def __init__(self) -> None:
        parser_type = require_extra("httptools", "serve").HttpResponseParser
        self._parser_type = parser_type
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._done: asyncio.Future[None] | None = None
        self._sink: BodySink | None = None
        self._body: list[bytes] = []
        self._kept = 0
        self._now = 0.0
        self._parser: Any = None
        self._keep_alive = False
        self.received = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._done is not None and not self._done.done():
            self._done.set_exception(ConnectionResetError("the server closed the connection"))

    def data_received(self, data: bytes) -> None:
        self._now = time.perf_counter()  # first: the bytes are here now
        self.received = True
        try:
            self._parser.feed_data(data)
        except Exception as exc:  # a parser error or a failing sink ends this request only
            if self._done is not None and not self._done.done():
                self._done.set_exception(exc)

    # httptools callbacks
    def on_body(self, body: bytes) -> None:
        if self._sink is not None and self._parser.get_status_code() == 200:
            self._sink(body, self._now)
        elif self._kept < _MAX_KEPT_BODY:
            self._body.append(body)
            self._kept += len(body)

    def on_message_complete(self) -> None:
        self._keep_alive = self._parser.should_keep_alive()  # read now: the parser resets after
        if self._done is not None and not self._done.done():
            self._done.set_result(None)

    async def exchange(self, request: bytes, sink: BodySink | None) -> Answer:
        """Send `request`, return when the whole answer arrived; stream the body to `sink`."""
        assert self.transport is not None
        self._done = asyncio.get_running_loop().create_future()
        self._sink, self._body, self._kept = sink, [], 0
        self.received = False  # no byte of this answer yet
        self._parser = self._parser_type(self)
        self.transport.write(request)
        sent = time.perf_counter()
        self._keep_alive = False
        await self._done
        if not self._keep_alive:
            self.close()
        status = self._parser.get_status_code()
        return Answer(status=status, body=b"".join(self._body), sent_s=sent, received_s=self._now)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class HttpPool:
    """Keep-alive connections to one origin (scheme://host:port), reused last-in first-out."""

    def __init__(self, base_url: str, *, connect_timeout_s: float = 10.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UserError(f"--url must look like http://host:port/v1 (got {base_url!r})")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self._ssl = ssl.create_default_context() if parts.scheme == "https" else None
        self._authority = parts.netloc.rsplit("@", 1)[-1]
        self._connect_timeout_s = connect_timeout_s
        self._free: list[_Connection] = []
        self._all: set[_Connection] = set()

    def head(self, method: str, path: str, headers: dict[str, str], body_len: int) -> bytes:
        """The request line and headers for `path` under the base URL's path."""
        lines = [f"{method} {self.prefix}{path} HTTP/1.1", f"Host: {self._authority}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {body_len}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def request(self, request: bytes, sink: BodySink | None = None) -> Answer:
        """Send a prepared request on a free connection; a broken exchange drops the connection.

        A kept-alive connection the server closed just as the request went out fails before any
        answer byte; that request is sent once more on a new connection (as httpx does).
        """
        connection, reused = await self._lease()
        try:
            return await self._exchange(connection, request, sink)
        except ConnectionResetError:
            if not reused or connection.received:
                raise
        connection, _ = await self._lease()
        return await self._exchange(connection, request, sink)

    async def _exchange(
        self, connection: _Connection, request: bytes, sink: BodySink | None
    ) -> Answer:
        clean = False
        try:
            answer = await connection.exchange(request, sink)
            clean = True
            return answer
        finally:
            if clean and not connection.closed:
                self._free.append(connection)
            else:  # cancelled or failed mid-answer: the connection's state is unknown
                connection.close()
                self._all.discard(connection)

    async def _lease(self) -> tuple[_Connection, bool]:
        """A connection, and whether it served an earlier request."""
        while self._free:
            connection = self._free.pop()
            if not connection.closed:
                return connection, True
            self._all.discard(connection)
        loop = asyncio.get_running_loop()
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(
                    _Connection,
                    self.host,
                    self.port,
                    ssl=self._ssl,
                    server_hostname=self.host if self._ssl else None,
                ),
                self._connect_timeout_s,
            )
        except (OSError, asyncio.TimeoutError) as exc:
            reason = "connect timeout" if isinstance(exc, asyncio.TimeoutError) else str(exc)
            raise ConnectFailure(f"cannot connect to {self.host}:{self.port}: {reason}") from None
        self._all.add(connection)
        return connection, False

    def close(self) -> None:
        for connection in self._all:
            connection.close()
        self._all.clear()
        self._free.clear()
