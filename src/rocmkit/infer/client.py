"""Client for OpenAI-compatible servers (/v1/completions, /v1/chat/completions), streamed or not.

One `Client` drives every request of a run from one process over kept-alive connections
(`rocmkit.infer.http`). A request never raises: HTTP errors, non-200 answers, broken streams and
timeouts become a `RequestRecord` with `ok=False` and a short error text, so one bad request
cannot end a run. The SSE parsing is a pure function of the bytes received.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rocmkit.errors import UserError
from rocmkit.infer.http import Answer, ConnectFailure, HttpPool
from rocmkit.infer.metrics import RequestRecord
from rocmkit.infer.workloads import Prompt

try:  # orjson parses a stream chunk about 3x faster; the client's CPU goes mostly to that
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads = json.loads  # type: ignore[assignment]

Api = Literal["completions", "chat"]
_ERROR_TEXT_CHARS = 160
_FORBIDDEN_HEADERS = {"host", "content-length", "transfer-encoding", "connection"}


@dataclass(kw_only=True, frozen=True, slots=True)
class Endpoint:
    """Where and how to send requests."""

    base_url: str  # e.g. http://127.0.0.1:8000/v1
    model: str = ""  # empty: the first model the server lists (prepare_endpoint)
    api: Api = "completions"
    timeout_s: float = 120.0  # per request, from send to the end of the answer
    stream: bool = True  # False: one JSON answer per request (TTFT is then the whole latency)
    api_key: str | None = None  # sent as "Authorization: Bearer ..."
    headers: dict[str, str] = field(default_factory=dict)  # extra request headers
    temperature: float = 0.0
    top_p: float | None = None
    top_k: int | None = None  # vLLM/SGLang extension
    ignore_eos: bool = False  # vLLM/SGLang extension: generate exactly max_tokens
    extra_body: dict[str, Any] = field(default_factory=dict)  # merged into every request body

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise UserError(f"--url must start with http:// or https:// (got {self.base_url!r})")
        if self.timeout_s <= 0:
            raise UserError("--timeout must be positive")
        if self.temperature < 0 or (self.top_p is not None and not 0 < self.top_p <= 1):
            raise UserError("--temperature must be >= 0 and --top-p in (0, 1]")
        bad = [name for name in self.headers if name.lower() in _FORBIDDEN_HEADERS]
        if bad:
            raise UserError(f"--header {bad[0]} is set by the client itself; drop it")

    @property
    def path(self) -> str:
        """The request path under the base URL."""
        return "/chat/completions" if self.api == "chat" else "/completions"

    @property
    def url(self) -> str:
        return f"{self.base_url.rstrip('/')}{self.path}"

    def request_headers(self) -> dict[str, str]:
        """Content type, authorization (when a key is set) and the extra headers."""
        headers = {"Content-Type": "application/json", "User-Agent": "rocmkit-infer"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        headers.update(self.headers)
        return headers

    def body(self, prompt: Prompt) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": prompt.max_tokens,
            "temperature": self.temperature,
            "stream": self.stream,
        }
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        if self.api == "chat":
            body["messages"] = list(prompt.messages)
        else:
            body["prompt"] = prompt.text
        if self.top_p is not None:
            body["top_p"] = self.top_p
        if self.top_k is not None:
            body["top_k"] = self.top_k
        if self.ignore_eos:
            body["ignore_eos"] = True
        body.update(self.extra_body)
        return body


def api_key_from_env() -> str | None:
    """OPENAI_API_KEY, the variable every OpenAI-compatible client reads."""
    return os.environ.get("OPENAI_API_KEY") or None


@dataclass(kw_only=True, frozen=True, slots=True)
class StreamEvent:
    """What one SSE `data:` payload carried."""

    text: str | None = None  # generated text in this chunk (None: no choice in it)
    usage: dict[str, Any] | None = None
    error: str | None = None
    done: bool = False


def parse_sse_line(line: str) -> StreamEvent | None:
    """Parse one line of an OpenAI-style SSE stream; None for blank, comment and non-data lines."""
    if not line.startswith("data:"):
        return None
    return parse_sse_data(line[5:].strip())


def parse_sse_data(payload: str | bytes) -> StreamEvent:
    """Parse the payload of one `data:` field (a JSON chunk or `[DONE]`)."""
    if payload in ("[DONE]", b"[DONE]"):
        return StreamEvent(done=True)
    try:
        data = _loads(payload)
    except ValueError:  # also UnicodeDecodeError; orjson's error is a ValueError too
        return StreamEvent(error="malformed stream chunk (not JSON)")
    return _event_of(data)


def _event_of(data: Any) -> StreamEvent:
    if not isinstance(data, dict):
        return StreamEvent(error="malformed stream chunk (not an object)")
    if "error" in data or data.get("object") == "error":
        detail = data.get("error", data.get("message"))
        if isinstance(detail, dict):
            detail = detail.get("message", detail)
        return StreamEvent(error=f"server error in stream: {str(detail)[:_ERROR_TEXT_CHARS]}")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
    return StreamEvent(text=_choice_text(data.get("choices")), usage=usage)


def _choice_text(choices: Any) -> str | None:
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    choice = choices[0]
    if "text" in choice:  # completions
        return choice.get("text") or ""
    delta = choice.get("delta") or choice.get("message") or {}
    # reasoning models stream their thinking in a separate field; it is generated output too
    return (delta.get("content") or "") + (delta.get("reasoning_content") or "")


class SseReader:
    """Turns body bytes into timed text chunks; fed by the connection as bytes arrive.

    `feed` gets what one network read brought and the time it arrived: every event in it shares
    that time (tokens that arrive together are timed together: the first of them closes the gap
    since the previous read, the others have an inter-token latency of 0).
    """

    __slots__ = ("_buffer", "error", "first_s", "itl_s", "last_s", "pieces", "usage")

    def __init__(self) -> None:
        self._buffer = b""
        self.pieces: list[str] = []
        self.itl_s: list[float] = []
        self.first_s: float | None = None
        self.last_s = 0.0
        self.usage: dict[str, Any] | None = None
        self.error: str | None = None

    def feed(self, data: bytes, now: float) -> None:
        """Parse the complete events in `data` (plus what was left over), all arrived at `now`."""
        if self.error is not None:
            return  # read on to the end of the body so the connection can be reused
        buffer = self._buffer + data if self._buffer else data
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        events = buffer.split(b"\n\n")  # split once per read, not once per line
        self._buffer = events.pop()
        pieces = self.pieces
        before = len(pieces)
        for event in events:
            if event.startswith(b"data: ") and b"\n" not in event:
                payload = event[6:]  # the usual one-line event
            else:
                lines = [ln[5:].strip() for ln in event.split(b"\n") if ln.startswith(b"data:")]
                if not lines:
                    continue  # a comment or a field other than data
                payload = b"\n".join(lines)
            if payload == b"[DONE]":
                continue
            try:
                chunk = _loads(payload)
            except ValueError:
                self.error = "malformed stream chunk (not JSON)"
                return
            text = _plain_text(chunk)  # the common chunk, without building a StreamEvent
            if text is None:
                text = self._special(chunk)
                if self.error is not None:
                    return
            if text:  # chunks without text (role-only, usage-only) do not count as tokens
                pieces.append(text)
        if len(pieces) > before:
            self._stamp(len(pieces) - before, now)

    def _special(self, chunk: Any) -> str | None:
        """An error, usage or reasoning chunk: note what it carries, return its text."""
        event = _event_of(chunk)
        if event.error is not None:
            self.error = event.error
        elif event.usage is not None:
            self.usage = event.usage
        return event.text

    def _stamp(self, count: int, now: float) -> None:
        """Time `count` tokens that arrived together at `now`."""
        if self.first_s is None:
            self.first_s = now
        else:
            self.itl_s.append(now - self.last_s)
        if count > 1:
            self.itl_s.extend([0.0] * (count - 1))
        self.last_s = now


def _plain_text(data: Any) -> str | None:
    """The text of an ordinary chunk (a choice with "text" or "delta.content", no usage, no
    error, no reasoning field); None for anything else, which `_event_of` handles in full."""
    try:
        choice = data["choices"][0]
        text = choice["text"] if "text" in choice else choice["delta"]["content"]
    except (LookupError, TypeError):
        return None
    if (
        type(text) is not str
        or data.get("usage") is not None
        or "error" in data
        or ("delta" in choice and choice["delta"].get("reasoning_content"))
    ):
        return None
    return text


class Client:
    """Sends the requests of one `Endpoint` over kept-alive connections."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._pool = HttpPool(endpoint.base_url, connect_timeout_s=min(10.0, endpoint.timeout_s))
        self._headers = endpoint.request_headers()

    async def send(
        self, prompt: Prompt, count_tokens: Callable[[str], int] | None = None
    ) -> RequestRecord:
        """Send one request and time it; never raises (except on cancellation)."""
        record = RequestRecord(
            ok=False, start_s=time.perf_counter(), prompt_tokens=prompt.input_tokens
        )
        try:
            await asyncio.wait_for(
                self._exchange(prompt, record, count_tokens), self.endpoint.timeout_s
            )
        except asyncio.TimeoutError:
            record.ok, record.error = False, f"timeout after {self.endpoint.timeout_s:g} s"
        except Exception as exc:  # any transport failure is this request's error, not the run's
            record.ok, record.error = False, describe_error(exc)
            record.unreachable = isinstance(exc, ConnectFailure)
        return record

    async def _exchange(
        self, prompt: Prompt, record: RequestRecord, count_tokens: Callable[[str], int] | None
    ) -> None:
        body = json.dumps(self.endpoint.body(prompt)).encode()
        request = self._pool.head("POST", self.endpoint.path, self._headers, len(body)) + body
        reader = SseReader() if self.endpoint.stream else None
        answer = await self._pool.request(request, reader.feed if reader else None)
        record.start_s = answer.sent_s  # the clock starts when the request is on the wire
        record.http_status = answer.status
        if answer.status != 200:
            record.error = f"HTTP {answer.status}: {_first_lines(answer.body)}"
        elif reader is None:
            _finish_whole(record, answer, count_tokens)
        elif reader.error is not None:
            record.error = reader.error
        elif reader.first_s is not None:
            record.ttft_s = reader.first_s - answer.sent_s
            record.itl_s = reader.itl_s
            _finish(
                record, reader.last_s - answer.sent_s, reader.pieces, reader.usage, count_tokens
            )
        else:
            _finish(record, 0.0, [], None, count_tokens)

    async def get_json(self, path: str) -> tuple[int, Any]:
        """GET `path` under the base URL: (status, parsed JSON or None)."""
        headers = {k: v for k, v in self._headers.items() if k != "Content-Type"}
        answer = await self._pool.request(self._pool.head("GET", path, headers, 0))
        try:
            return answer.status, json.loads(answer.body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return answer.status, None

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._pool.close()


def _finish_whole(
    record: RequestRecord, answer: Answer, count_tokens: Callable[[str], int] | None
) -> None:
    """A non-streamed answer: one JSON object; TTFT is the whole latency (as vLLM reports it),
    and there is no TPOT (vLLM's 0 would read as an infinitely fast decode)."""
    record.streamed = False
    try:
        data = _loads(answer.body)
    except ValueError:
        record.error = "the answer is not JSON"
        return
    text = _choice_text(data.get("choices")) if isinstance(data, dict) else None
    usage = data.get("usage") if isinstance(data, dict) else None
    latency = answer.received_s - answer.sent_s
    record.ttft_s = latency
    _finish(record, latency, [text] if text else [], usage if isinstance(usage, dict) else None,
            count_tokens)  # fmt: skip
    if record.ok and not record.tokens_from_usage and count_tokens is None:
        record.output_tokens = len((text or "").split())  # no usage, no tokenizer: words


def _finish(
    record: RequestRecord,
    e2e_s: float,
    pieces: list[str],
    usage: dict[str, Any] | None,
    count_tokens: Callable[[str], int] | None,
) -> None:
    if not pieces:
        record.error = "no streamed text in the answer (empty output, or no SSE stream)"
        return
    record.ok = True
    record.e2e_s = e2e_s  # as vLLM: send to last text chunk
    completion = usage.get("completion_tokens") if usage else None
    if isinstance(completion, int) and completion > 0:
        record.output_tokens = completion
        record.tokens_from_usage = True
        prompt_tokens = usage.get("prompt_tokens") if usage else None
        if isinstance(prompt_tokens, int):
            record.prompt_tokens = prompt_tokens
    elif count_tokens is not None:
        record.output_tokens = count_tokens("".join(pieces))
    else:  # one streamed chunk per token, the usual server behaviour
        record.output_tokens = len(pieces)


def _first_lines(body: bytes, num_lines: int = 3) -> str:
    """The first lines of an error body, on one line."""
    lines = [ln.strip() for ln in body.decode("utf-8", "replace").splitlines() if ln.strip()]
    return " | ".join(lines[:num_lines])[:_ERROR_TEXT_CHARS]


def describe_error(exc: Exception) -> str:
    """`Type: message` of an exception, short enough for one line."""
    name = type(exc).__name__
    text = str(exc).strip()
    return f"{name}: {text[:_ERROR_TEXT_CHARS]}" if text else name
