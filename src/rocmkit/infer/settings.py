"""The configs of `rocmkit infer serve` and `infer local`, through `rocmkit.config` like train and bench.

One flat dataclass per mode holds every option and is also what the benchmark runs
(`ServeConfig` is `ServeSettings`, `LocalConfig` is `LocalSettings`); a preset
(`infer/presets/<mode>/<name>.toml`), a `--config` TOML file (the option names as keys, dashes or
underscores), dotted overrides (`--serve.num_prompts 200`) and the flags typed on the command line
fill it, later sources winning, and `rocmkit.config` coerces each value once. The CLI's flags are
generated from these fields by `rocmkit.options.add_flags`, so a setting's flag, help text and
default are written once, here. What the serve runner reads in another shape (the `endpoint`
requests go to, the SLOs in seconds, the ramp, the sweep points) is derived from the fields here,
once, and checked when the config is made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rocmkit.config import from_dict, load_toml
from rocmkit.errors import UserError
from rocmkit.infer.guards import DEFAULT_MAX_ERROR_RATE, DEFAULT_WARMUP_RETRIES
from rocmkit.infer.metrics import PERCENTILES
from rocmkit.options import option

if TYPE_CHECKING:
    from rocmkit.infer.client import Endpoint
    from rocmkit.infer.loadgen import Ramp

PRESET_PACKAGE = "rocmkit.infer.presets"


@dataclass(kw_only=True, frozen=True)
class ServeSettings:
    """Every option of `rocmkit infer serve`, and the config `benchmark_server` runs (also known
    as `ServeConfig`): checked once, here. Frozen, so the derived views below stay true."""

    url: str | None = option(None, "base URL with /v1, e.g. http://127.0.0.1:8000/v1 (required)")
    model: str | None = option(None, "model name the server expects (default: the first it lists)")
    api: Literal["completions", "chat"] = option("completions", "completions or chat")
    api_key: str | None = option(None, "sent as a Bearer token (default: $OPENAI_API_KEY)")
    header: list[str] = option((), "extra request header NAME:VALUE (repeat)", repeat=True)
    extra_body: dict[str, Any] | str | None = option(None, "JSON object merged into every request")
    temperature: float = option(0.0, "sampling temperature")
    top_p: float | None = option(None, "nucleus sampling")
    top_k: int | None = option(None, "top-k sampling (vLLM/SGLang extension)")
    ignore_eos: bool = option(False, "ask the server for exactly --output-len tokens")
    stream: bool = option(
        True,
        "streamed answers (default true)",
        off="ask for whole answers instead of streams (TTFT = latency; TPOT n/a)",
    )
    workload: str = option(  # a registered kind (rocmkit.infer.workload_kinds), checked there
        "random", "random, jsonl, sharegpt, shared-prefix, trace or a registered one"
    )
    prompts: Path | None = option(
        None, "file for jsonl, sharegpt or trace (BurstGPT .csv, Mooncake .jsonl)"
    )
    tokenizer: Path | None = option(None, "local tokenizer directory for token counts")
    num_prompts: int = option(100, "requests per point (trace: the first N)")
    input_len: int = option(128, "random workload prompt length")
    output_len: int = option(128, "tokens to generate per request")
    random_range_ratio: float = option(0.0, "random lengths uniform in [len*(1-r), len*(1+r)]")
    num_conversations: int = option(8, "shared-prefix workload")
    num_turns: int = option(4, "shared-prefix workload")
    prefix_len: int | None = option(
        None,
        "shared prefix length: random workload, a fixed random prefix before every prompt "
        "(default 0); shared-prefix workload, the system prompt (default 512)",
    )
    prefix_groups: int = option(
        1, "random workload: N different --prefix-len prefixes, round robin"
    )
    trace_time_scale: float = option(1.0, "trace: 0.5 replays twice as fast")
    rate: tuple[float, ...] = option(
        (float("inf"),), "requests/s (Poisson), comma list; inf = all at once"
    )
    burstiness: float = option(1.0, "gamma shape of arrival gaps: 1 Poisson, <1 burstier")
    concurrency: tuple[int | None, ...] = option((None,), "max requests in flight, comma list")
    ramp_up: Literal["none", "linear", "exponential"] = option(
        "none", "the rate moves from --ramp-up-start-rate to --ramp-up-end-rate over the requests"
    )
    ramp_up_start_rate: float | None = option(None, "requests/s at the first request of --ramp-up")
    ramp_up_end_rate: float | None = option(None, "requests/s at the last request of --ramp-up")
    ramp_up_time: float = option(0.0, "seconds over which the rate climbs from 0 (finite --rate)")
    warmup: int = option(1, "warm-up requests per point (not measured)")
    warmup_retries: int = option(
        DEFAULT_WARMUP_RETRIES, "retries of a warm-up request that failed (not with HTTP 4xx)"
    )
    seed: int = option(0, "prompts and arrival times")
    timeout: float = option(120.0, "per-request timeout in seconds")
    run_timeout: float | None = option(None, "whole-run limit in seconds")
    wait_ready: float = option(0.0, "wait up to this many seconds for the server to answer")
    slo: str | None = option(None, "goodput SLOs, e.g. ttft=200ms,tpot=50ms,e2e=5s")
    percentiles: tuple[float, ...] = option(
        PERCENTILES, "latency percentiles to report, comma list, e.g. 50,90,99,99.9"
    )
    max_error_rate: float = option(
        DEFAULT_MAX_ERROR_RATE, "error budget: exit 1 above this share of failed requests"
    )
    unreachable_timeout: float = option(10.0, "stop sending after this long without a connection")
    power: Literal["none", "local"] = option("none", "local: sample this machine's GPU power")
    save_requests: bool = option(False, "also write requests.jsonl, one line per request")
    label: str | None = option(None, "name of this run in reports (result.json's label)")
    metadata: list[str] = option((), "KEY=VALUE recorded in the result (repeat)", repeat=True)
    append_results: Path | None = option(
        None, "also append one JSON line per sweep point to this .jsonl file"
    )
    power_interval_s: float = option(0.1, "sampling period of the power reader", cli=False)

    def __post_init__(self) -> None:
        from rocmkit.infer.metrics import parse_percentiles

        if not self.url:
            raise UserError("--url is required (on the command line or in --config)")
        if not self.rate:
            raise UserError("--rate needs at least one value, e.g. 1,4,inf")
        if not 0.0 <= self.max_error_rate <= 1.0:
            raise UserError(f"--max-error-rate must be between 0 and 1 (got {self.max_error_rate})")
        for name, value in _POSITIVE_SECONDS.items():
            if getattr(self, value) is not None and not getattr(self, value) > 0:
                raise UserError(f"{name} must be positive")
        if self.wait_ready < 0:
            raise UserError("--wait-ready must be >= 0 seconds")
        if self.warmup_retries < 0:
            raise UserError("--warmup-retries must be >= 0")
        # the sorted, distinct percentiles are what the run reports and result.json records
        object.__setattr__(self, "percentiles", parse_percentiles(self.percentiles))
        metadata_dict(self.metadata)
        endpoint = self.endpoint  # made here so a bad URL, header or extra body fails now
        if self.slo_seconds and "tpot" in self.slo_seconds and not endpoint.stream:
            raise UserError("--slo tpot needs streamed answers: TPOT is n/a with --no-stream")
        self._check_points()

    @cached_property
    def endpoint(self) -> Endpoint:
        """Where and how requests go (the API key falls back to $OPENAI_API_KEY; an empty model
        is the first one the server lists, filled in when the run starts)."""
        from rocmkit.infer.client import Endpoint, api_key_from_env

        extra = self.extra_body
        return Endpoint(
            base_url=str(self.url),
            model=self.model or "",
            api=self.api,
            timeout_s=self.timeout,
            ignore_eos=self.ignore_eos,
            stream=self.stream,
            api_key=self.api_key or api_key_from_env(),
            headers=header_dict(self.header),
            extra_body=json_object(extra, "--extra-body")
            if isinstance(extra, str)
            else extra or {},
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
        )

    @cached_property
    def slo_seconds(self) -> dict[str, float] | None:
        """`--slo` as seconds per metric (`ttft`, `tpot`, `e2e`); None without one."""
        from rocmkit.infer.metrics import parse_slo

        return parse_slo(self.slo) if self.slo else None

    @cached_property
    def ramp(self) -> Ramp | None:
        """`--ramp-up linear|exponential` between the two rates; None without it."""
        from rocmkit.infer.loadgen import Ramp

        start, end = self.ramp_up_start_rate, self.ramp_up_end_rate
        if self.ramp_up == "none":
            if start is not None or end is not None:
                raise UserError(
                    "--ramp-up-start-rate and --ramp-up-end-rate need --ramp-up linear|exponential"
                )
            return None
        if start is None or end is None:
            raise UserError(
                f"--ramp-up {self.ramp_up} needs --ramp-up-start-rate and --ramp-up-end-rate"
            )
        return Ramp(strategy=self.ramp_up, start_rate=start, end_rate=end)

    def points(self) -> list[tuple[float, int | None]]:
        """(rate, concurrency) of every sweep point, concurrency-major."""
        return [(rate, conc) for conc in self.concurrency or (None,) for rate in self.rate]

    def _check_points(self) -> None:
        """Each sweep point is a load the generator accepts (rates, ramps, concurrency)."""
        from rocmkit.infer.loadgen import LoadConfig

        for rate, concurrency in self.points():
            LoadConfig(
                ramp=self.ramp,
                ramp_up_s=self.ramp_up_time,
                request_rate=rate,
                max_concurrency=concurrency,
                burstiness=self.burstiness,
                num_warmup=self.warmup,
            )


ServeConfig = ServeSettings  # its name as a library call, beside LocalConfig

_POSITIVE_SECONDS = {
    "--run-timeout": "run_timeout",
    "--unreachable-timeout": "unreachable_timeout",
    "the power sampling interval": "power_interval_s",
}


def header_dict(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`--header NAME:VALUE` items as a dict; a malformed one is a UserError."""
    headers = {}
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise UserError(f"--header takes NAME:VALUE (got {item!r})")
        headers[name.strip()] = value.strip()
    return headers


def metadata_dict(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`--metadata KEY=VALUE` items as a dict (later items win); a malformed one is a UserError."""
    metadata = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--metadata takes KEY=VALUE (got {item!r})")
        metadata[key.strip()] = value.strip()
    return metadata


def json_object(text: str | None, flag: str) -> dict[str, Any]:
    """A JSON object given on the command line (`--extra-body`); anything else is a UserError."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{flag} is not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise UserError(f"{flag} must be a JSON object, e.g. '{{\"seed\": 1}}'")
    return value


Precision = Literal["fp32", "fp16", "bf16"]
SdpaBackend = Literal["auto", "math", "flash", "efficient", "cudnn"]


@dataclass(kw_only=True)
class LocalSettings:
    """Every option of `rocmkit infer local` (the model directory is the positional argument),
    and the config `benchmark_local` runs (also known as `LocalConfig`): checked once, here."""

    model_dir: Path | None = option(None, "directory with config.json and weights", positional=True)
    tiny: bool = option(
        False,
        "no model at hand? time a random 2-layer model built here, nothing downloaded "
        "(saved once in runs/tiny-model)",
    )
    precision: Precision = option("bf16", "fp32, fp16 or bf16")
    batch_sizes: tuple[int, ...] = option((1,), "comma list, e.g. 1,8,32")
    prompt_lens: tuple[int, ...] = option((128,), "prompt lengths in tokens, comma list")
    output_lens: tuple[int, ...] = option((32,), "output lengths in tokens, comma list")
    iters: int = option(3, "timed generate() calls per shape (median)")
    warmup: int = option(1, "untimed generate() calls per shape")
    compile: bool = option(False, "torch.compile the model's forward")
    fast: bool = option(False, "also time static KV cache + compiled decode, next to eager")
    sdpa_backend: SdpaBackend = option(
        "auto", "restrict scaled_dot_product_attention to one kernel"
    )
    continuous_batching: bool = option(False, "each batch row a request via continuous batching")
    seed: int = option(0, "random prompt ids")
    power: bool = option(
        True,
        "sample GPU power for energy per token (default true)",
        off="do not sample GPU power (no energy figures)",
    )
    label: str | None = option(None, "name of this run in reports (result.json's label)")
    metadata: list[str] = option((), "KEY=VALUE recorded in the result (repeat)", repeat=True)
    power_interval_s: float = option(0.1, "sampling period of the power reader", cli=False)

    def __post_init__(self) -> None:
        for name, flag in _LENGTH_FLAGS.items():
            values = getattr(self, name)
            if not values or min(values) < 1:
                shown = ",".join(map(str, values)) or "nothing"
                raise UserError(f"{flag} takes positive integers, e.g. 1,8 (got {shown})")
        if self.fast and self.continuous_batching:
            raise UserError("--fast times generate(): drop --continuous-batching (or --fast)")
        if self.iters < 1 or self.warmup < 0:
            raise UserError("--iters must be >= 1 and --warmup >= 0")
        if not self.power_interval_s > 0:
            raise UserError("the power sampling interval must be positive")
        metadata_dict(self.metadata)
        if self.model_dir is not None and not self.tiny:  # --tiny's model is rocmkit's own
            _check_model_dir(Path(self.model_dir))


_LENGTH_FLAGS = {
    "batch_sizes": "--batch-sizes",
    "prompt_lens": "--prompt-lens",
    "output_lens": "--output-lens",
}


def _check_model_dir(model_dir: Path) -> None:
    if not model_dir.exists():
        raise UserError(f"no such model directory: {model_dir}")
    if not model_dir.is_dir():
        raise UserError(f"{model_dir} is a file: give a Hugging Face model directory")
    if not (model_dir / "config.json").is_file():
        raise UserError(f"{model_dir} has no config.json: give a Hugging Face model directory")


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
