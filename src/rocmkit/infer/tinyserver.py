"""An OpenAI-compatible server of the random tiny model, so `rocmkit infer serve` can be tried
offline: `python -m rocmkit.infer.tinyserver --port 8000`, then
`rocmkit infer serve --url http://127.0.0.1:8000/v1 --num-prompts 8`.

It serves GET /v1/models, POST /v1/completions and /v1/chat/completions, streamed (SSE, with
`stream_options.include_usage`) or whole, from the 2-layer model of `infer local --tiny` with
transformers on the CPU, one request at a time. The model has no tokenizer: a prompt's token ids
are its UTF-8 bytes modulo the vocabulary, and token id k is answered as the word "tk". It never
stops early: every answer is `max_tokens` tokens. It exists to try the client, its tables and its
result file; its latencies say nothing about a real inference engine.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from rocmkit.errors import UserError, require_extra
from rocmkit.infer.tiny import TINY_DIR, tiny_model

SERVED_NAME = "rocmkit-tiny"
_DEFAULT_MAX_TOKENS = 16
_log = logging.getLogger(__name__)


class TinyModel:
    """The tiny causal LM behind a lock (one generation at a time), greedy unless asked to sample."""

    def __init__(self, directory: Path = TINY_DIR) -> None:
        transformers = require_extra("transformers", "llm")
        import torch

        self._torch = torch
        self.model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model(directory))
        self.model.eval()
        self.vocab_size = int(self.model.config.vocab_size)
        self.max_positions = int(self.model.config.max_position_embeddings)
        self._lock = threading.Lock()

    def encode(self, text: str) -> list[int]:
        return [byte % self.vocab_size for byte in text.encode("utf-8")] or [0]

    def generate(self, prompt_ids: list[int], max_tokens: int, temperature: float) -> Iterator[int]:
        """Yield `max_tokens` token ids; the prompt keeps its last tokens when it would not fit."""
        torch = self._torch
        keep = max(1, self.max_positions - max_tokens)
        ids = torch.tensor([prompt_ids[-keep:]])
        with self._lock, torch.inference_mode():
            past = None
            for _ in range(max_tokens):
                out = self.model(input_ids=ids, past_key_values=past, use_cache=True)
                past, logits = out.past_key_values, out.logits[0, -1].float()
                if temperature > 0:
                    probs = torch.softmax(logits / temperature, dim=-1)
                    token = int(torch.multinomial(probs, 1))
                else:
                    token = int(logits.argmax())
                yield token
                ids = torch.tensor([[token]])


def _prompt_text(payload: dict[str, Any]) -> str:
    if "messages" in payload:
        messages = payload["messages"]
        if not isinstance(messages, list):
            raise ValueError("'messages' must be a list")
        return "\n".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))
    prompt = payload.get("prompt", "")
    return " ".join(map(str, prompt)) if isinstance(prompt, list) else str(prompt)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the client expects of a real server
    server: _TinyHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug(format, *args)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            data = [{"id": self.server.served_name, "object": "model", "owned_by": "rocmkit"}]
            self._send_json(200, {"object": "list", "data": data})
        elif self.path in ("/health", "/v1/health"):
            self._send_json(200, {"status": "ok"})
        else:
            self._send_json(404, {"error": {"message": f"no route GET {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        chat = self.path == "/v1/chat/completions"
        if not chat and self.path != "/v1/completions":
            return self._send_json(404, {"error": {"message": f"no route POST {self.path}"}})
        try:
            payload = json.loads(body or b"{}")
            prompt_ids = self.server.model.encode(_prompt_text(payload))
            max_tokens = int(payload.get("max_tokens") or payload.get("max_completion_tokens")
                             or _DEFAULT_MAX_TOKENS)  # fmt: skip
            temperature = float(payload.get("temperature") or 0.0)
        except (ValueError, TypeError, AttributeError) as error:
            return self._send_json(400, {"error": {"message": f"bad request: {error}"}})
        model = str(payload.get("model") or self.server.served_name)
        if model != self.server.served_name:
            message = f"The model `{model}` does not exist; served: {self.server.served_name}"
            return self._send_json(404, {"error": {"message": message}})
        if not 1 <= max_tokens < self.server.model.max_positions:
            limit = self.server.model.max_positions - 1
            return self._send_json(400, {"error": {"message": f"max_tokens must be 1..{limit}"}})
        tokens = self.server.model.generate(prompt_ids, max_tokens, temperature)
        usage = {"prompt_tokens": len(prompt_ids), "completion_tokens": max_tokens,
                 "total_tokens": len(prompt_ids) + max_tokens}  # fmt: skip
        if payload.get("stream"):
            want_usage = bool((payload.get("stream_options") or {}).get("include_usage"))
            self._stream(tokens, chat, model, usage if want_usage else None)
        else:
            text = "".join(f"t{token} " for token in tokens)
            choice: dict[str, Any] = {"index": 0, "finish_reason": "length"}
            choice |= _piece(chat, text, whole=True)
            answer = _envelope(chat, model, stream=False)
            self._send_json(200, answer | {"choices": [choice], "usage": usage})

    def _stream(
        self, tokens: Iterator[int], chat: bool, model: str, usage: dict[str, int] | None
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        head = _envelope(chat, model, stream=True)
        if chat:
            self._event(head | {"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
        for token in tokens:
            piece = _piece(chat, f"t{token} ", whole=False)
            self._event(head | {"choices": [{"index": 0, **piece, "finish_reason": None}]})
        last: dict[str, Any] = {"delta": {}} if chat else {"text": ""}
        self._event(head | {"choices": [{"index": 0, **last, "finish_reason": "length"}]})
        if usage is not None:
            self._event(head | {"choices": [], "usage": usage})
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _event(self, obj: dict[str, Any]) -> None:
        self._chunk(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def _chunk(self, data: bytes) -> None:
        # one write and flush per token, so the client times tokens as they are made
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _piece(chat: bool, text: str, *, whole: bool) -> dict[str, Any]:
    """Text as a choice carries it: completions' "text", chat's "message" or stream "delta"."""
    if not chat:
        return {"text": text}
    return (
        {"message": {"role": "assistant", "content": text}}
        if whole
        else {"delta": {"content": text}}
    )


def _envelope(chat: bool, model: str, *, stream: bool) -> dict[str, Any]:
    kind = "chat.completion" if chat else "text_completion"
    return {"id": f"tiny-{time.monotonic_ns()}", "object": kind + (".chunk" if stream and chat
            else ""), "created": int(time.time()), "model": model}  # fmt: skip


class _TinyHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], model: TinyModel, served_name: str) -> None:
        super().__init__(address, _Handler)
        self.model, self.served_name = model, served_name


class TinyServer:
    """The server on `host:port` (0: a free port); `start()` serves from a thread, `stop()` ends it."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        directory: Path = TINY_DIR,
        served_name: str = SERVED_NAME,
    ) -> None:
        try:
            self._http = _TinyHTTPServer((host, port), TinyModel(directory), served_name)
        except OSError as error:
            raise UserError(f"cannot listen on {host}:{port} ({error.strerror}); "
                            "pick another --port") from None  # fmt: skip
        self.host, self.port = host, int(self._http.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> TinyServer:
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._http.serve_forever()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rocmkit.infer.tinyserver",
        description="An OpenAI-compatible server of a random tiny model, to try "
        "`rocmkit infer serve` offline (not to measure a real engine).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0: any free port")
    parser.add_argument("--model-dir", type=Path, default=TINY_DIR,
                        help="the tiny model's directory (built there when absent)")  # fmt: skip
    parser.add_argument("--served-name", default=SERVED_NAME)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        server = TinyServer(host=args.host, port=args.port, directory=args.model_dir,
                            served_name=args.served_name)  # fmt: skip
    except UserError as error:
        _log.error("error: %s", error)
        return 2
    _log.info("serving %s at %s (Ctrl-C stops)", args.served_name, server.base_url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
