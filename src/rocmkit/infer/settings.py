"""The settings of `rocmkit infer serve` and `infer local`, through `rocmkit.config` like train and bench.

One flat dataclass per mode holds every option; a preset (`infer/presets/<mode>/<name>.toml`), a
`--config` TOML file (the option names as keys, dashes or underscores), dotted overrides
(`--serve.num_prompts 200`) and the flags typed on the command line fill it, later sources winning,
and `rocmkit.config` coerces and checks each value once. The CLI builds its flags from these
fields, so a setting's help text is written once, here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from rocmkit.config import from_dict, load_toml
from rocmkit.errors import UserError
from rocmkit.infer.guards import DEFAULT_MAX_ERROR_RATE, DEFAULT_WARMUP_RETRIES
from rocmkit.infer.metrics import PERCENTILES

PRESET_PACKAGE = "rocmkit.infer.presets"


def _opt(default: Any, help: str, **extra: Any) -> Any:
    return field(default=default, metadata={"help": help, **extra})


@dataclass(kw_only=True)
class ServeSettings:
    """Every option of `rocmkit infer serve`."""

    url: str | None = _opt(None, "base URL with /v1, e.g. http://127.0.0.1:8000/v1 (required)")
    model: str | None = _opt(None, "model name the server expects (default: the first it lists)")
    api: Literal["completions", "chat"] = _opt("completions", "completions or chat")
    api_key: str | None = _opt(None, "sent as a Bearer token (default: $OPENAI_API_KEY)")
    header: list[str] = _opt((), "extra request header NAME:VALUE (repeat)", repeat=True)  # noqa: RUF009 (a Field)
    extra_body: dict[str, Any] | str | None = _opt(None, "JSON object merged into every request")  # noqa: RUF009 (a Field)
    temperature: float = _opt(0.0, "sampling temperature")
    top_p: float | None = _opt(None, "nucleus sampling")
    top_k: int | None = _opt(None, "top-k sampling (vLLM/SGLang extension)")
    ignore_eos: bool = _opt(False, "ask the server for exactly --output-len tokens")
    stream: bool = _opt(
        True,
        "streamed answers (default true)",
        off="ask for whole answers instead of streams (TTFT = latency; TPOT n/a)",
    )
    workload: str = _opt(  # a registered kind (rocmkit.infer.workloads), checked there
        "random", "random, jsonl, sharegpt, shared-prefix, trace or a registered one"
    )
    prompts: Path | None = _opt(  # noqa: RUF009 (a Field)
        None, "file for jsonl, sharegpt or trace (BurstGPT .csv, Mooncake .jsonl)"
    )
    tokenizer: Path | None = _opt(None, "local tokenizer directory for token counts")  # noqa: RUF009 (a Field)
    num_prompts: int = _opt(100, "requests per point (trace: the first N)")
    input_len: int = _opt(128, "random workload prompt length")
    output_len: int = _opt(128, "tokens to generate per request")
    random_range_ratio: float = _opt(0.0, "random lengths uniform in [len*(1-r), len*(1+r)]")
    num_conversations: int = _opt(8, "shared-prefix workload")
    num_turns: int = _opt(4, "shared-prefix workload")
    prefix_len: int | None = _opt(
        None,
        "shared prefix length: random workload, a fixed random prefix before every prompt "
        "(default 0); shared-prefix workload, the system prompt (default 512)",
    )
    prefix_groups: int = _opt(1, "random workload: N different --prefix-len prefixes, round robin")
    trace_time_scale: float = _opt(1.0, "trace: 0.5 replays twice as fast")
    rate: tuple[float, ...] = _opt(
        (float("inf"),), "requests/s (Poisson), comma list; inf = all at once"
    )
    burstiness: float = _opt(1.0, "gamma shape of arrival gaps: 1 Poisson, <1 burstier")
    concurrency: tuple[int | None, ...] = _opt((None,), "max requests in flight, comma list")
    ramp_up: Literal["none", "linear", "exponential"] = _opt(
        "none", "the rate moves from --ramp-up-start-rate to --ramp-up-end-rate over the requests"
    )
    ramp_up_start_rate: float | None = _opt(None, "requests/s at the first request of --ramp-up")
    ramp_up_end_rate: float | None = _opt(None, "requests/s at the last request of --ramp-up")
    ramp_up_time: float = _opt(0.0, "seconds over which the rate climbs from 0 (finite --rate)")
    warmup: int = _opt(1, "warm-up requests per point (not measured)")
    warmup_retries: int = _opt(
        DEFAULT_WARMUP_RETRIES, "retries of a warm-up request that failed (not with HTTP 4xx)"
    )
    seed: int = _opt(0, "prompts and arrival times")
    timeout: float = _opt(120.0, "per-request timeout in seconds")
    run_timeout: float | None = _opt(None, "whole-run limit in seconds")
    wait_ready: float = _opt(0.0, "wait up to this many seconds for the server to answer")
    slo: str | None = _opt(None, "goodput SLOs, e.g. ttft=200ms,tpot=50ms,e2e=5s")
    percentiles: tuple[float, ...] = _opt(
        PERCENTILES, "latency percentiles to report, comma list, e.g. 50,90,99,99.9"
    )
    max_error_rate: float = _opt(
        DEFAULT_MAX_ERROR_RATE, "error budget: exit 1 above this share of failed requests"
    )
    unreachable_timeout: float = _opt(10.0, "stop sending after this long without a connection")
    power: Literal["none", "local"] = _opt("none", "local: sample this machine's GPU power")
    save_requests: bool = _opt(False, "also write requests.jsonl, one line per request")
    label: str | None = _opt(None, "name of this run in reports (result.json's label)")
    metadata: list[str] = _opt((), "KEY=VALUE recorded in the result (repeat)", repeat=True)  # noqa: RUF009 (a Field)
    append_results: Path | None = _opt(  # noqa: RUF009 (a Field)
        None, "also append one JSON line per sweep point to this .jsonl file"
    )


@dataclass(kw_only=True)
class LocalSettings:
    """Every option of `rocmkit infer local` (the model directory is the positional argument)."""

    model_dir: Path | None = _opt(None, "directory with config.json and weights", positional=True)  # noqa: RUF009 (a Field)
    tiny: bool = _opt(
        False,
        "no model at hand? time a random 2-layer model built here, nothing downloaded "
        "(saved once in runs/tiny-model)",
    )
    precision: Literal["fp32", "fp16", "bf16"] = _opt("bf16", "fp32, fp16 or bf16")
    batch_sizes: tuple[int, ...] = _opt((1,), "comma list, e.g. 1,8,32")
    prompt_lens: tuple[int, ...] = _opt((128,), "prompt lengths in tokens, comma list")
    output_lens: tuple[int, ...] = _opt((32,), "output lengths in tokens, comma list")
    iters: int = _opt(3, "timed generate() calls per shape (median)")
    warmup: int = _opt(1, "untimed generate() calls per shape")
    compile: bool = _opt(False, "torch.compile the model's forward")
    fast: bool = _opt(False, "also time static KV cache + compiled decode, next to eager")
    sdpa_backend: Literal["auto", "math", "flash", "efficient", "cudnn"] = _opt(
        "auto", "restrict scaled_dot_product_attention to one kernel"
    )
    continuous_batching: bool = _opt(False, "each batch row a request via continuous batching")
    seed: int = _opt(0, "random prompt ids")
    power: bool = _opt(
        True,
        "sample GPU power for energy per token (default true)",
        off="do not sample GPU power (no energy figures)",
    )
    label: str | None = _opt(None, "name of this run in reports (result.json's label)")
    metadata: list[str] = _opt((), "KEY=VALUE recorded in the result (repeat)", repeat=True)  # noqa: RUF009 (a Field)


SETTINGS: dict[str, type] = {"serve": ServeSettings, "local": LocalSettings}


def available_presets(mode: str) -> list[str]:
    """Names of the presets shipped with rocmkit for `mode` (`--preset NAME`)."""
    folder = resources.files(PRESET_PACKAGE).joinpath(mode)
    if not folder.is_dir():
        return []
    names = (f.name for f in folder.iterdir() if f.name.endswith(".toml"))
    return sorted(name.removesuffix(".toml") for name in names)


def load_settings(
    mode: str,
    *,
    preset: str | None = None,
    path: str | Path | None = None,
    dotted: Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Any:
    """preset <- --config file <- dotted overrides (`serve.key`) <- typed flags; validated."""
    cls = SETTINGS[mode]
    data: dict[str, Any] = {}
    if preset is not None:
        known = available_presets(mode)
        if preset not in known:
            raise UserError(
                f"unknown preset '{preset}'; available for {mode}: {', '.join(known) or 'none'}"
            )
        preset_file = resources.files(PRESET_PACKAGE).joinpath(mode, f"{preset}.toml")
        with resources.as_file(preset_file) as file:
            data.update(_flat(load_toml(file), f"preset {preset}"))
    if path is not None:
        data.update(_flat(load_toml(path), str(path)))
    for key, value in (dotted or {}).items():
        section, _, name = key.partition(".")
        if section != mode:
            raise UserError(f"--{key}: settings of this command are --{mode}.NAME")
        data[name.replace("-", "_")] = value
    data.update(flags or {})
    return from_dict(cls, data)


def _flat(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Top-level keys with dashes as underscores; a [serve] or [local] table is read too."""
    flat = {}
    for key, value in data.items():
        if key in SETTINGS and isinstance(value, Mapping):
            flat.update(_flat(value, where))
        else:
            flat[key.replace("-", "_")] = value
    return flat


def setting_fields(mode: str) -> list[dataclasses.Field[Any]]:
    """The fields of a mode's settings, for building its command-line flags."""
    return list(dataclasses.fields(SETTINGS[mode]))
