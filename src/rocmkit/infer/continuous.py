"""`infer local --continuous-batching`: each batch row one request through transformers'
continuous-batching manager (the engine behind `generate_batch` and `transformers serve
--continuous-batching`), timed from its per-token timestamps."""

from __future__ import annotations

import inspect
import statistics
from typing import TYPE_CHECKING, Any

from rocmkit.errors import UserError, require_extra
from rocmkit.measure.power import EnergyWindow, PowerSampler, energy_window

if TYPE_CHECKING:
    import torch

    from rocmkit.infer.local import LocalConfig


def pad_id(model: Any) -> int:
    """The pad token id generation needs (the eos id when the model has no pad token)."""
    pad = model.generation_config.pad_token_id
    if pad is None:
        pad = model.generation_config.eos_token_id or 0
    return int(pad[0] if isinstance(pad, list) else pad)


def continuous_runs(
    model: Any,
    ids: torch.Tensor,
    output_len: int,
    config: LocalConfig,
    sampler: PowerSampler | None = None,
) -> tuple[list[tuple[float, float | None, float]], EnergyWindow]:
    """Warm-up and timed rounds through transformers' continuous-batching manager, started once
    per shape so its start-up is not timed; each batch row is one request."""
    transformers = require_extra("transformers", "llm")
    if not hasattr(model, "continuous_batching_context_manager"):
        raise UserError(
            "this transformers has no continuous batching: upgrade it or drop --continuous-batching"
        )
    batch, prompt_len = ids.shape
    # eos -1 disables stopping, so every request generates exactly output_len tokens
    generation = transformers.GenerationConfig(
        max_new_tokens=output_len, do_sample=False, pad_token_id=pad_id(model), eos_token_id=-1
    )
    cache = transformers.ContinuousBatchingConfig()  # sized from free GPU memory
    if ids.device.type == "cpu":  # no GPU to size from: just what this batch needs
        cache = _continuous_batching_config(
            transformers.ContinuousBatchingConfig,
            num_blocks=batch * (prompt_len + output_len) // 16 + batch + 1,
            page_size=16,
            max_batch_tokens=batch * prompt_len,  # the whole prefill in one step
        )
    inputs = ids.tolist()
    with model.continuous_batching_context_manager(
        generation_config=generation, continuous_batching_config=cache, timeout=60, warmup=False
    ) as manager:
        for _ in range(config.warmup):
            _continuous_round(manager, inputs, output_len)
        with energy_window(sampler) as window:
            runs = [_continuous_round(manager, inputs, output_len) for _ in range(config.iters)]
    return runs, window


def _continuous_batching_config(cls: Any, *, page_size: int, **kwargs: Any) -> Any:
    """Build transformers' ContinuousBatchingConfig across versions: the KV page size has been
    called `block_size` and `page_size`; arguments a version does not take are left out."""
    accepted = inspect.signature(cls.__init__).parameters
    size_name = next((n for n in ("page_size", "block_size") if n in accepted), None)
    if size_name is not None:
        kwargs[size_name] = page_size
    return cls(**{name: value for name, value in kwargs.items() if name in accepted})


def _continuous_round(
    manager: Any, inputs: list[list[int]], output_len: int
) -> tuple[float, float | None, float]:
    """(median per-request TTFT, median per-request TPOT, first request queued to last token)."""
    request_ids = manager.add_requests(
        inputs=inputs, max_new_tokens=output_len, record_timestamps=True
    )
    done: dict[str, Any] = {}
    while len(done) < len(request_ids):
        result = manager.get_result(timeout=1)
        if result is None and not manager.is_running():
            raise RuntimeError("the continuous-batching loop stopped before finishing")
        if result is not None and result.is_finished():
            done[result.request_id] = result
    requests = list(done.values())
    failed = [r.error for r in requests if r.error or len(r.timestamps or ()) != output_len]
    if failed:
        raise RuntimeError(f"continuous batching did not generate {output_len} tokens: {failed[0]}")
    ttfts = [r.timestamps[0] - r.created_time for r in requests]
    tpots = [
        (r.timestamps[-1] - r.timestamps[0]) / (len(r.timestamps) - 1)
        for r in requests
        if len(r.timestamps) > 1
    ]
    span = max(r.timestamps[-1] for r in requests) - min(r.created_time for r in requests)
    return statistics.median(ttfts), statistics.median(tpots) if tpots else None, span
