"""Local inference benchmark: transformers `generate` on a Hugging Face model directory.

No inference engine of our own: each measurement is one `model.generate` call with a streamer
that timestamps every step. The first new token marks the prefill latency (TTFT); the gaps
after it are decode steps (TPOT = (E2E - TTFT) / (output tokens - 1), as in the server
benchmark). Prompts are random token ids, so no tokenizer is needed, and
`min_new_tokens = max_new_tokens` makes every run generate exactly the requested length.
Where a GPU power sensor can be read, bench's power sampler runs through the whole benchmark and
each shape's timed calls are one energy window: average watts, joules per output token, tokens
per joule.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.errors import UserError, require_extra
from rocmkit.infer.continuous import continuous_runs, pad_id
from rocmkit.infer.measurements import energy_values, measurement_rows
from rocmkit.infer.settings import LocalSettings, SdpaBackend
from rocmkit.measure.power import (
    EnergyWindow,
    PowerReader,
    PowerSampler,
    energy_window,
    platform_power_reader,
)
from rocmkit.platform import Platform
from rocmkit.results import Measurement

if TYPE_CHECKING:
    import torch

_SDPA_NAMES = {
    "math": "MATH",
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
}


# The one config of `infer local` is its settings (the CLI's flags are generated from them);
# LocalConfig is its name as a library call.
LocalConfig = LocalSettings


@dataclass(kw_only=True, frozen=True, slots=True)
class LocalPoint:
    """Medians over the timed iterations of one (batch, prompt, output) shape."""

    batch_size: int
    prompt_len: int
    output_len: int
    decode: str  # "eager" (transformers' default generate) or "fast" (static cache + compile)
    ttft_s: float  # prefill: generate call to the first new token
    tpot_s: float | None  # decode time per output token; None when output_len is 1
    e2e_s: float
    output_tokens_per_s: float  # batch * output_len / E2E
    prefill_tokens_per_s: float  # batch * prompt_len / TTFT
    peak_memory_bytes: int | None  # device memory high-water mark; None on CPU
    num_timed_tokens: int  # output tokens of all timed calls: batch * output_len * iters
    energy_j: float | None = None  # board energy over the timed calls; None without a sensor
    energy_window_s: float = 0.0  # wall time of the timed calls, the energy window
    energy_skipped: str | None = None  # why energy_j is None


@dataclass(kw_only=True, slots=True)
class LocalResult:
    model: str
    device: str
    points: list[LocalPoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    power_reader: str | None = None  # which reader sampled power; None when none did


class _StepClock:
    """A generate() streamer that records when each new token reaches the host."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._prompt_seen = False

    def put(self, value: Any) -> None:
        if not self._prompt_seen:  # the first put is the prompt itself
            self._prompt_seen = True
            return
        self.times.append(time.perf_counter())  # tokens arrive via .cpu(): already synchronised

    def end(self) -> None:
        pass


def load_model(config: LocalConfig, device: str) -> Any:
    """Load the model directory at the requested precision onto `device`."""
    torch = require_extra("torch", "llm")
    transformers = require_extra("transformers", "llm")
    transformers.utils.logging.disable_progress_bar()
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[config.precision]
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(config.model_dir), dtype=dtype, attn_implementation="sdpa", local_files_only=True
        )
    except (OSError, ValueError, KeyError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"cannot load a causal LM from {config.model_dir}: {first_line}") from None
    model.to(device).eval()
    if config.compile:
        model.forward = torch.compile(model.forward, dynamic=True)
    return model


def benchmark_local(
    config: LocalConfig, platform: Platform, *, power_reader: PowerReader | None = None
) -> LocalResult:
    """Time generate() for every batch x prompt x output shape of `config`.

    `power_reader` (watts, e.g. a fake in tests) replaces the sensor found on `platform`.
    """
    if config.model_dir is None:
        raise UserError("give the model directory: rocmkit infer local MODEL_DIR")
    torch = require_extra("torch", "llm")
    device = platform.torch_device
    model = load_model(config, device)
    result = LocalResult(model=Path(config.model_dir).name, device=device)
    if device == "cpu":
        result.notes.append("peak memory is reported for GPUs only")
    reader, reader_name = (
        (power_reader, "injected")
        if power_reader is not None
        else platform_power_reader(platform, enabled=config.power)
    )
    sampler = None if reader is None else PowerSampler(reader, interval_s=config.power_interval_s)
    result.power_reader = reader_name if reader is not None else None
    if reader is None:
        result.notes.append(f"energy per token is n/a: {reader_name}")
    generator = torch.Generator().manual_seed(config.seed)
    variants = _variants(model, config, device)
    shapes = itertools.product(config.batch_sizes, config.prompt_lens, config.output_lens)
    with (
        torch.inference_mode(),
        _sdpa_backend(config.sdpa_backend),
        sampler or contextlib.nullcontext(),
    ):
        for batch, prompt_len, output_len in shapes:
            ids = torch.randint(
                0, model.config.vocab_size, (batch, prompt_len), generator=generator
            ).to(device)
            for decode in variants:
                # a compiled forward compiles (on a GPU also records its graphs) in its first
                # calls: those are warm-up, never timed
                compiled = decode == "fast" or config.compile
                warm = max(config.warmup, 2) if compiled else config.warmup
                with variants[decode]:
                    point = _measure(
                        model, ids, output_len, config, device, sampler, reader_name, warm
                    )
                result.points.append(dataclasses.replace(point, decode=decode))
    return result


def _variants(model: Any, config: LocalConfig, device: str) -> dict[str, Any]:
    """How each decode variant runs: a context manager that sets the model up for it."""
    variants: dict[str, Any] = {"eager": contextlib.nullcontext()}
    if config.fast:
        variants["fast"] = _FastDecode(model, device)
    return variants


class _FastDecode:
    """Static KV cache (fixed shapes) and a compiled forward; on a GPU, mode "reduce-overhead"
    replays the decode step as one CUDA/HIP graph. transformers' eager generate launches every
    kernel of every step from Python, which leaves a GPU idle at batch 1."""

    def __init__(self, model: Any, device: str) -> None:
        torch = require_extra("torch", "llm")
        self._model = model
        self._eager = model.forward
        mode = "reduce-overhead" if device == "cuda" else None  # graphs exist on GPUs only
        self._compiled = torch.compile(model.forward, mode=mode, dynamic=False)
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> None:
        generation = self._model.generation_config
        self._saved = {"cache_implementation": generation.cache_implementation}
        generation.cache_implementation = "static"
        if hasattr(generation, "disable_compile"):  # we compile ourselves, on every device
            self._saved["disable_compile"] = generation.disable_compile
            generation.disable_compile = True
        self._model.forward = self._compiled

    def __exit__(self, *exc_info: object) -> None:
        self._model.forward = self._eager
        for name, value in self._saved.items():
            setattr(self._model.generation_config, name, value)


def _measure(
    model: Any,
    ids: torch.Tensor,
    output_len: int,
    config: LocalConfig,
    device: str,
    sampler: PowerSampler | None = None,
    no_sampler_reason: str = "no power sensor",
    num_warmup: int | None = None,
) -> LocalPoint:
    num_warmup = config.warmup if num_warmup is None else num_warmup
    torch = require_extra("torch", "llm")
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    if config.continuous_batching:
        runs, window = continuous_runs(model, ids, output_len, config, sampler)
    else:
        for _ in range(num_warmup):
            _generate(model, ids, output_len)
        with energy_window(sampler) as window:
            runs = [_generate(model, ids, output_len) for _ in range(config.iters)]
    ttft = statistics.median(r[0] for r in runs)
    e2e = statistics.median(r[2] for r in runs)
    tpots = [r[1] for r in runs if r[1] is not None]
    batch, prompt_len = ids.shape
    return LocalPoint(
        batch_size=batch,
        prompt_len=prompt_len,
        output_len=output_len,
        decode="eager",
        ttft_s=ttft,
        tpot_s=statistics.median(tpots) if tpots else None,
        e2e_s=e2e,
        output_tokens_per_s=batch * output_len / e2e,
        prefill_tokens_per_s=batch * prompt_len / ttft,
        peak_memory_bytes=int(torch.cuda.max_memory_allocated()) if device == "cuda" else None,
        num_timed_tokens=batch * output_len * len(runs),
        energy_j=window.energy_j,
        energy_window_s=window.duration_s,
        energy_skipped=_no_energy(sampler, window, no_sampler_reason),
    )


def _no_energy(
    sampler: PowerSampler | None, window: EnergyWindow, no_sampler_reason: str
) -> str | None:
    if window.energy_j is not None:
        return None
    return no_sampler_reason if sampler is None else sampler.why_no_energy(window)


def _generate(model: Any, ids: torch.Tensor, output_len: int) -> tuple[float, float | None, float]:
    """One generate call: (TTFT, TPOT, E2E to the last token), seconds from the call."""
    torch = require_extra("torch", "llm")
    clock = _StepClock()
    start = time.perf_counter()
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=output_len,
        min_new_tokens=output_len,
        do_sample=False,
        pad_token_id=pad_id(model),
        streamer=clock,
    )
    generated = out.shape[1] - ids.shape[1]
    if generated != output_len or len(clock.times) != output_len:
        raise RuntimeError(f"generate produced {generated} tokens, expected {output_len}")
    ttft, e2e = clock.times[0] - start, clock.times[-1] - start
    return ttft, (e2e - ttft) / (output_len - 1) if output_len > 1 else None, e2e


@contextlib.contextmanager
def _sdpa_backend(name: SdpaBackend) -> Iterator[None]:
    if name == "auto":
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([getattr(SDPBackend, _SDPA_NAMES[name])]):
        try:
            yield
        except RuntimeError as exc:
            if "No available kernel" in str(exc) or "No viable backend" in str(exc):
                raise UserError(
                    f"SDPA backend '{name}' cannot run here (device, dtype or shape): choose another --sdpa-backend"
                ) from None
            raise


def local_measurements(result: LocalResult, config: LocalConfig) -> list[Measurement]:
    """One Measurement per metric and shape, suite "infer-local"."""
    rows: list[Measurement] = []
    for point in result.points:
        decode = "" if point.decode == "eager" else f" {point.decode}"
        name = f"{result.model} {config.precision} b{point.batch_size} in{point.prompt_len} out{point.output_len}{decode}"
        params = {
            "decode": point.decode,
            "model": result.model,
            "precision": config.precision,
            "batch_size": point.batch_size,
            "prompt_len": point.prompt_len,
            "output_len": point.output_len,
            "device": result.device,
            "compile": config.compile,
            "sdpa_backend": config.sdpa_backend,
            "continuous_batching": config.continuous_batching,
            "num_iters": config.iters,
        }
        values: list[tuple[str, float | None, str]] = [
            ("ttft_ms", point.ttft_s * 1e3, "ms"),
            ("tpot_ms", None if point.tpot_s is None else point.tpot_s * 1e3, "ms"),
            ("e2e_ms", point.e2e_s * 1e3, "ms"),
            ("output_tokens_per_s", point.output_tokens_per_s, "tokens/s"),
            ("prefill_tokens_per_s", point.prefill_tokens_per_s, "tokens/s"),
            (
                "peak_memory_mib",
                None if point.peak_memory_bytes is None else point.peak_memory_bytes / 2**20,
                "MiB",
            ),
        ]
        extra: dict[str, Any] = {
            "energy_window_s": point.energy_window_s,
            "num_timed_tokens": point.num_timed_tokens,
        }
        if point.energy_skipped:
            extra["skipped"] = point.energy_skipped
        energy = energy_values(point.energy_j, point.energy_window_s, point.num_timed_tokens)
        tagged: list[tuple[str, float | None, str, dict[str, Any]]] = [
            *((*v, {}) for v in values),
            *((*v, extra) for v in energy),
        ]
        rows += measurement_rows("infer-local", name, params, tagged)
    return rows
