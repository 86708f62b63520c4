"""A lean HTTP/1.1 client for load generation: httptools' C parser over non-blocking sockets.

Why not httpx or aiohttp: a streamed token costs them a task wake-up, a line iterator and (httpx)
a pure-Python HTTP parser; at one token per network chunk that is most of the client's CPU, and a
client short of CPU timestamps late. Here the parser (httptools, uvicorn's) calls back with body
bytes inside the socket's read callback, and the request's task wakes once, when the answer is
complete. benchmarks/infer_client_overhead.py measures this against httpx and aiohttp.

Arrival times. On Linux, plain-HTTP sockets ask the kernel to stamp received data
(SO_TIMESTAMPNS): each read carries the time its newest bytes reached the socket, so a client
that waits for a CPU (a busy machine, a long callback) still times tokens by their arrival, not by
when it got round to reading them. Elsewhere, and over TLS, a read is stamped when the client
reads it. Either way every event in one read shares that read's stamp: tokens that arrive
together are timed together (their inter-token latency is 0, the gap before them carries the
wait), which keeps mean ITL and TTFT exact.

Connections are kept alive and reused last-in first-out, one request at a time each; no proxies
from the environment (a benchmark talks to the server directly), no redirects, no compression.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from rocmkit.errors import UserError, require_extra

# Receives each piece of the answer's body with the perf_counter time its bytes arrived.
BodySink = Callable[[bytes, float], None]
_MAX_KEPT_BODY = 64 * 1024  # non-streamed answers (errors, model lists) kept up to this size
_READ_SIZE = 256 * 1024  # as asyncio's transports read
_SO_TIMESTAMPNS = 35  # Linux's value; the socket module does not export it
_STAMP_SPACE = socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 0
_KERNEL_STAMPS = sys.platform == "linux" and _STAMP_SPACE > 0
_MAX_STAMP_AGE_NS = 60_000_000_000  # an older kernel stamp means the wall clock stepped: ignore it
_TIMESPEC = struct.Struct("@qq")  # struct timespec on 64-bit Linux: seconds, nanoseconds


T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on uvloop's event loop when it is installed, else on asyncio's.

    uvloop's loop is C: each network read costs the client less CPU (the overhead benchmark
    measures both). Timing does not depend on the loop where the kernel stamps arrivals.
    """
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


class ConnectFailure(ConnectionError):
    """No connection could be made (refused, unknown host, connect timeout)."""


@dataclass(kw_only=True, slots=True)
class Answer:
    """What came back: status, and the body unless a sink consumed it."""

    status: int
    body: bytes
    sent_s: float  # perf_counter right after the request was handed to the socket
    received_s: float  # perf_counter when the answer's last bytes arrived


def kernel_stamp_s(ancdata: list[tuple[int, int, bytes]], now_s: float) -> float:
    """The perf_counter time of an SO_TIMESTAMPNS stamp in `ancdata`; `now_s` when none.

    The kernel stamps with the wall clock; perf_counter (CLOCK_MONOTONIC) is reached through the
    offset between the two clocks, read back to back here, so only a clock step between the bytes'
    arrival and this read could bend it, and a stamp from the future or over a minute old is not
    trusted.
    """
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(data) >= 16:
            seconds, nanoseconds = _TIMESPEC.unpack_from(data)
            wall_ns, mono_s = time.time_ns(), time.perf_counter()
            age_ns = wall_ns - (seconds * 1_000_000_000 + nanoseconds)
            if 0 <= age_ns < _MAX_STAMP_AGE_NS:
                return float(mono_s - age_ns * 1e-9)
    return now_s


class _Exchange:
    """One keep-alive HTTP/1.1 connection, one request at a time; subclasses move the bytes."""

    def __init__(self) -> None:
        self._parser_type = require_extra("httptools", "serve").HttpResponseParser
        self.closed = False
        self.received = False  # whether any byte of the current answer arrived
        self._done: asyncio.Future[None] | None = None
        self._sink: BodySink | None = None
        self._body: list[bytes] = []
        self._pieces: list[bytes] = []  # streamed body bytes of the read being parsed
        self._streaming = False  # the answer is a 200 and goes to the sink
        self._kept = 0
        self._now = 0.0
        self._parser: Any = None
        self._keep_alive = False

    def _feed(self, data: bytes, now: float) -> None:
        """Parse bytes that arrived at `now` (perf_counter seconds)."""
        self._now = now
        self.received = True
        try:
            self._parser.feed_data(data)
            if self._pieces:  # one sink call per read: its events share one arrival time
                pieces, self._pieces = self._pieces, []
                assert self._sink is not None
                self._sink(pieces[0] if len(pieces) == 1 else b"".join(pieces), now)
        except Exception as exc:  # a parser error or a failing sink ends this request only
            self._pieces = []
            if self._done is not None and not self._done.done():
                self._done.set_exception(exc)

    def _lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._done is not None and not self._done.done():
            self._done.set_exception(ConnectionResetError("the server closed the connection"))

    # httptools callbacks
    def on_headers_complete(self) -> None:
        self._streaming = self._sink is not None and self._parser.get_status_code() == 200

    def on_body(self, body: bytes) -> None:
        if self._streaming:
            self._pieces.append(body)
        elif self._kept < _MAX_KEPT_BODY:
            self._body.append(body)
            self._kept += len(body)

    def on_message_complete(self) -> None:
        self._keep_alive = self._parser.should_keep_alive()  # read now: the parser resets after
        if self._done is not None and not self._done.done():
            self._done.set_result(None)

    async def exchange(self, request: bytes, sink: BodySink | None) -> Answer:
        """Send `request`, return when the whole answer arrived; stream the body to `sink`."""
        self._done = asyncio.get_running_loop().create_future()
        self._sink, self._body, self._kept = sink, [], 0
        self._streaming, self.received = False, False
        self._parser = self._parser_type(self)
        self._keep_alive = False
        await self._write(request)
        sent = time.perf_counter()
        await self._done
        if not self._keep_alive:
            self.close()
        status = self._parser.get_status_code()
        return Answer(status=status, body=b"".join(self._body), sent_s=sent, received_s=self._now)

    async def _write(self, data: bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _SocketConnection(_Exchange):
    """Plain HTTP on a non-blocking socket read by the loop's reader callback, kernel-stamped."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(sock.fileno(), self._on_readable)

    def _on_readable(self) -> None:
        try:
            data, ancdata, _, _ = self._sock.recvmsg(_READ_SIZE, _STAMP_SPACE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.close()
            self._lost(exc)
            return
        if not data:  # the server closed its end
            self.close()
            self._lost(None)
            return
        now = time.perf_counter()  # used when the kernel gave no stamp
        self._feed(data, kernel_stamp_s(ancdata, now) if ancdata else now)

    async def _write(self, data: bytes) -> None:
        try:
            sent = self._sock.send(data)
            if sent < len(data):  # the socket buffer is full: let the loop wait for room
                await self._loop.sock_sendall(self._sock, data[sent:])
        except (BlockingIOError, InterruptedError):
            await self._loop.sock_sendall(self._sock, data)
        except OSError:
            self.close()
            raise ConnectionResetError("the server closed the connection") from None

    def close(self) -> None:
        if self._sock.fileno() >= 0:
            self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
        self.closed = True


class _ProtocolConnection(_Exchange, asyncio.Protocol):
    """Over an asyncio transport (TLS, other platforms): stamped when the client reads."""

    def __init__(self) -> None:
        super().__init__()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost(exc)

    def data_received(self, data: bytes) -> None:
        self._feed(data, time.perf_counter())

    async def _write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


async def _open_socket(host: str, port: int) -> socket.socket:
    """A connected non-blocking TCP socket that asks for kernel receive stamps."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    error: OSError = OSError(f"no address for {host}")
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            await loop.sock_connect(sock, address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
        except BaseException:  # cancelled (connect timeout): do not leak the socket
            sock.close()
            raise
    raise error


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
        self._free: list[_Exchange] = []
        self._all: set[_Exchange] = set()

    @property
    def kernel_stamps(self) -> bool:
        """Whether arrivals are stamped by the kernel (plain HTTP on Linux)."""
        return _KERNEL_STAMPS and self._ssl is None

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
        self, connection: _Exchange, request: bytes, sink: BodySink | None
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

    async def _lease(self) -> tuple[_Exchange, bool]:
        """A connection, and whether it served an earlier request."""
        while self._free:
            connection = self._free.pop()
            if not connection.closed:
                return connection, True
            self._all.discard(connection)
        try:
            new = await asyncio.wait_for(self._connect(), self._connect_timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            reason = "connect timeout" if isinstance(exc, asyncio.TimeoutError) else str(exc)
            raise ConnectFailure(f"cannot connect to {self.host}:{self.port}: {reason}") from None
        self._all.add(new)
        return new, False

    async def _connect(self) -> _Exchange:
        if self.kernel_stamps:
            return _SocketConnection(await _open_socket(self.host, self.port))
        _, connection = await asyncio.get_running_loop().create_connection(
            _ProtocolConnection,
            self.host,
            self.port,
            ssl=self._ssl,
            server_hostname=self.host if self._ssl else None,
        )
        return connection

    def close(self) -> None:
        for connection in self._all:
            connection.close()
        self._all.clear()
        self._free.clear()
