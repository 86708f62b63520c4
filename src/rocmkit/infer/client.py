"""Async streaming client for OpenAI-compatible servers (/v1/completions, /v1/chat/completions).

One `httpx.AsyncClient` drives every request of a run from one process. A request never raises:
HTTP errors, non-200 answers, broken streams and timeouts become a `RequestRecord` with `ok=False`
and a short error text, so one bad request cannot end a run. The SSE parsing is a pure function.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rocmkit.errors import UserError, require_extra
from rocmkit.infer.metrics import RequestRecord
from rocmkit.infer.workloads import Prompt

if TYPE_CHECKING:
    import httpx

Api = Literal["completions", "chat"]
_ERROR_TEXT_CHARS = 160


@dataclass(kw_only=True, frozen=True, slots=True)
class Endpoint:
    """Where and how to send requests."""

    base_url: str  # e.g. http://127.0.0.1:8000/v1
    model: str
    api: Api = "completions"
    timeout_s: float = 120.0  # per request, from send to the end of the stream
    ignore_eos: bool = False  # vLLM/SGLang extension: generate exactly max_tokens
    extra_body: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise UserError(f"--url must start with http:// or https:// (got {self.base_url!r})")
        if self.timeout_s <= 0:
            raise UserError("--timeout must be positive")

    @property
    def url(self) -> str:
        path = "chat/completions" if self.api == "chat" else "completions"
        return f"{self.base_url.rstrip('/')}/{path}"

    def body(self, prompt: Prompt) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": prompt.max_tokens,
            "temperature": 0.0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.api == "chat":
            body["messages"] = list(prompt.messages)
        else:
            body["prompt"] = prompt.text
        if self.ignore_eos:
            body["ignore_eos"] = True
        body.update(self.extra_body)
        return body


@dataclass(kw_only=True, frozen=True, slots=True)
class StreamEvent:
    """What one SSE `data:` line carried."""

    text: str | None = None  # generated text in this chunk (None: no choice in it)
    usage: dict[str, Any] | None = None
    error: str | None = None
    done: bool = False


def parse_sse_line(line: str) -> StreamEvent | None:
    """Parse one line of an OpenAI-style SSE stream; None for blank, comment and non-data lines."""
    if not line.startswith("data:"):
        return None
    payload = line[5:].strip()
    if payload == "[DONE]":
        return StreamEvent(done=True)
    try:
        data = json.loads(payload)
    except json.JSONDecodeError:
        return StreamEvent(error="malformed stream chunk (not JSON)")
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
    delta = choice.get("delta") or {}
    # reasoning models stream their thinking in a separate field; it is generated output too
    return (delta.get("content") or "") + (delta.get("reasoning_content") or "")


def make_client(*, timeout_s: float = 120.0, verify: Any = True) -> httpx.AsyncClient:
    """An AsyncClient holding one connection, with no proxy from the environment (a benchmark
    must talk to the server directly)."""
    httpx = require_extra("httpx", "serve")
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    return httpx.AsyncClient(
        limits=limits, timeout=httpx.Timeout(timeout_s), trust_env=False, verify=verify
    )


class ClientPool:
    """One single-connection AsyncClient per request in flight, reused last-in first-out.

    httpcore's connection pool rescans every connection for every idle one whenever a request
    starts or ends, which at ~100 kept-alive connections costs more CPU than the streams
    themselves; single-connection clients keep connections alive at constant cost.
    """

    def __init__(self, *, timeout_s: float = 120.0) -> None:
        self._timeout_s = timeout_s
        self._verify = require_extra(
            "httpx", "serve"
        ).create_ssl_context()  # built once, shared: each costs milliseconds
        self._free: list[httpx.AsyncClient] = []
        self._all: list[httpx.AsyncClient] = []

    @contextlib.asynccontextmanager
    async def lease(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._free:
            client = self._free.pop()
        else:
            client = make_client(timeout_s=self._timeout_s, verify=self._verify)
            self._all.append(client)
        try:
            yield client
        finally:
            self._free.append(client)

    async def send(
        self, endpoint: Endpoint, prompt: Prompt, count_tokens: Callable[[str], int] | None = None
    ) -> RequestRecord:
        """`send_request` on a leased connection."""
        async with self.lease() as client:
            return await send_request(client, endpoint, prompt, count_tokens)

    async def __aenter__(self) -> ClientPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for client in self._all:
            await client.aclose()


async def send_request(
    client: httpx.AsyncClient,
    endpoint: Endpoint,
    prompt: Prompt,
    count_tokens: Callable[[str], int] | None = None,
) -> RequestRecord:
    """Stream one request and time it; never raises (except on cancellation)."""
    record = RequestRecord(ok=False, start_s=time.perf_counter(), prompt_tokens=prompt.input_tokens)
    try:
        await asyncio.wait_for(
            _stream(client, endpoint, prompt, record, count_tokens), endpoint.timeout_s
        )
    except asyncio.TimeoutError:
        record.ok, record.error = False, f"timeout after {endpoint.timeout_s:g} s"
    except Exception as exc:  # any transport failure is this request's error, not the run's
        record.ok, record.error = False, _describe(exc)
        record.unreachable = _is_connect_failure(exc)
    return record


async def _stream(
    client: httpx.AsyncClient,
    endpoint: Endpoint,
    prompt: Prompt,
    record: RequestRecord,
    count_tokens: Callable[[str], int] | None,
) -> None:
    pieces: list[str] = []
    usage: dict[str, Any] | None = None

    async def on_sent(event: str, info: dict[str, Any]) -> None:
        # The clock starts when the request is on the wire, so time spent building it and queueing
        # in this busy event loop is not charged to the server (see docs/infer.md).
        if event == "http11.send_request_body.complete":
            record.start_s = time.perf_counter()

    extensions = {"trace": on_sent}
    async with client.stream(
        "POST", endpoint.url, json=endpoint.body(prompt), extensions=extensions
    ) as response:
        start = record.start_s
        last = start
        record.http_status = response.status_code
        if response.status_code != 200:
            body = (await response.aread()).decode("utf-8", "replace").strip().replace("\n", " ")
            record.error = f"HTTP {response.status_code}: {body[:_ERROR_TEXT_CHARS]}"
            return
        async for line in response.aiter_lines():
            now = time.perf_counter()  # before parsing: the chunk is here now
            event = parse_sse_line(line)
            if event is None:
                continue
            if event.error is not None:
                record.error = event.error
                return
            if event.done:  # read on to the end of the body so the connection can be reused
                continue
            if event.usage is not None:
                usage = event.usage
            if event.text:  # chunks without text (role-only, usage-only) do not count as tokens
                if record.ttft_s is None:
                    record.ttft_s = now - start
                else:
                    record.itl_s.append(now - last)
                last = now
                pieces.append(event.text)
    _finish(record, last - start, pieces, usage, count_tokens)


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
    else:
        record.output_tokens = len(
            pieces
        )  # one streamed chunk per token, the usual server behaviour


def _is_connect_failure(exc: Exception) -> bool:
    """True when no connection to the server could be made (as opposed to a broken answer)."""
    httpx = require_extra("httpx", "serve")
    return isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | ConnectionRefusedError)


def _describe(exc: Exception) -> str:
    name = type(exc).__name__
    text = str(exc).strip()
    return f"{name}: {text[:_ERROR_TEXT_CHARS]}" if text else name


async def check_reachable(base_url: str, *, timeout_s: float = 5.0) -> None:
    """Raise UserError when nothing answers at `base_url` (any HTTP answer counts as alive)."""
    httpx = require_extra("httpx", "serve")
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), trust_env=False) as client:
        try:
            await client.get(f"{base_url.rstrip('/')}/models")
        except httpx.HTTPError as exc:
            raise UserError(
                f"cannot reach the server at {base_url}: {_describe(exc)} (is it running?)"
            ) from None
