"""Trace replay: send requests at the times and with the lengths a recorded trace gives.

Two public formats are read:
- BurstGPT (CSV, https://github.com/HPMLL/BurstGPT): columns `Timestamp` (seconds),
  `Request tokens`, `Response tokens`; rows with 0 response tokens (failed requests in the
  original service) are skipped.
- Mooncake (JSON lines, https://github.com/kvcache-ai/Mooncake traces): `timestamp` (milliseconds),
  `input_length`, `output_length`, optional `hash_ids` (one id per 512-token block; requests that
  share a block id share that block's text here too, so prefix caching behaves as in the trace).
Prompt text is random words or tokens of the given length (the traces hold no text); times are
shifted so the first request goes at 0.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocmkit.errors import UserError
from rocmkit.infer.workloads import (
    Tokenizer,
    Workload,
    _read_text,
    counted_workload,
    random_text_maker,
    user_prompt,
)

MOONCAKE_BLOCK_TOKENS = 512
Row = tuple[float, int, int, list[int] | None]  # (time s, input tokens, output tokens, block ids)


def trace_workload(
    path: str | Path,
    *,
    num_prompts: int | None = None,
    time_scale: float = 1.0,
    seed: int = 0,
    tokenizer: Tokenizer | None = None,
) -> Workload:
    """Prompts with `arrival_s` from a BurstGPT CSV or Mooncake JSONL trace (the first
    `num_prompts` requests); `time_scale` 0.5 replays twice as fast."""
    if time_scale <= 0:
        raise UserError(f"--trace-time-scale must be positive (got {time_scale})")
    text = _read_text(path)
    rows = _csv_rows(text, path) if Path(path).suffix.lower() == ".csv" else _jsonl_rows(text, path)
    rows = sorted(rows, key=lambda row: row[0])[:num_prompts]
    if not rows:
        raise UserError(f"{path} holds no requests")
    first = rows[0][0]
    rng = random.Random(seed)
    make = random_text_maker(rng, tokenizer)
    blocks: dict[int, str] = {}
    prompts = []
    for when, num_in, num_out, block_ids in rows:
        arrival = (when - first) * time_scale
        content = _block_text(block_ids, num_in, blocks, make) if block_ids else make(num_in)
        prompts.append(user_prompt(content, num_out, tokenizer, arrival_s=arrival))
    return counted_workload(f"trace:{Path(path).name}", prompts, tokenizer)


def _block_text(
    block_ids: list[int], num_tokens: int, blocks: dict[int, str], make: Callable[[int], str]
) -> str:
    parts = []
    remaining = num_tokens
    for block_id in block_ids:
        if remaining <= 0:
            break
        if block_id not in blocks:
            blocks[block_id] = make(MOONCAKE_BLOCK_TOKENS)
        size = min(remaining, MOONCAKE_BLOCK_TOKENS)
        text = blocks[block_id]
        parts.append(text if size == MOONCAKE_BLOCK_TOKENS else " ".join(text.split()[:size]))
        remaining -= size
    if remaining > 0:  # more tokens than blocks: the rest is unshared
        parts.append(make(remaining))
    return " ".join(parts)


def _csv_rows(text: str, path: str | Path) -> list[Row]:
    reader = csv.DictReader(io.StringIO(text))
    rows: list[Row] = []
    needed = {"Timestamp", "Request tokens", "Response tokens"}
    if not reader.fieldnames or not needed <= set(reader.fieldnames):
        raise UserError(f"{path}: a BurstGPT CSV needs the columns {', '.join(sorted(needed))}")
    for number, item in enumerate(reader, start=2):
        where = f"{path}:{number}"
        when = _number(item["Timestamp"], where, float)
        num_in = _number(item["Request tokens"], where, int)
        num_out = _number(item["Response tokens"], where, int)
        if num_out > 0 and num_in > 0:
            rows.append((when, num_in, num_out, None))
    return rows


def _jsonl_rows(text: str, path: str | Path) -> list[Row]:
    rows: list[Row] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(item, dict) or not {"timestamp", "input_length", "output_length"} <= set(
            item
        ):
            raise UserError(
                f"{where}: a Mooncake trace line needs timestamp, input_length, output_length"
            )
        block_ids = item.get("hash_ids")
        rows.append(
            (
                _number(item["timestamp"], where, float) / 1000.0,  # milliseconds
                max(1, _number(item["input_length"], where, int)),
                max(1, _number(item["output_length"], where, int)),
                [int(b) for b in block_ids] if isinstance(block_ids, list) else None,
            )
        )
    return rows


def _number(value: Any, where: str, kind: type) -> Any:
    try:
        return kind(float(value)) if kind is int else kind(value)
    except (TypeError, ValueError):
        raise UserError(f"{where}: {value!r} is not a number") from None
