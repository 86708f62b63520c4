"""`rocmkit infer`: LLM inference benchmarks, local (transformers) and against OpenAI-compatible servers."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import math
from pathlib import Path
from typing import Any

from rocmkit.errors import UserError

_RESULT_NOTE = "saved {path}"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "infer", help="LLM inference benchmarks: a local model, or an OpenAI-compatible server"
    )
    modes = parser.add_subparsers(dest="infer_mode", metavar="MODE", parser_class=type(parser))
    _add_local(modes)
    _add_serve(modes)
    parser.set_defaults(handler=run)


def _add_local(modes: argparse._SubParsersAction) -> None:
    p = modes.add_parser(
        "local", help="time transformers generate() on a local Hugging Face model directory"
    )
    p.add_argument("model_dir", metavar="MODEL_DIR", help="directory with config.json and weights")
    p.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default="bf16")
    p.add_argument("--batch-sizes", default="1", help="comma list, e.g. 1,8,32")
    p.add_argument("--prompt-lens", default="128", help="prompt lengths in tokens, comma list")
    p.add_argument("--output-lens", default="32", help="output lengths in tokens, comma list")
    p.add_argument("--iters", type=int, default=3, help="timed generate() calls per shape (median)")
    p.add_argument("--warmup", type=int, default=1, help="untimed generate() calls per shape")
    p.add_argument("--compile", action="store_true", help="torch.compile the model's forward")
    p.add_argument(
        "--sdpa-backend", choices=("auto", "math", "flash", "efficient", "cudnn"), default="auto"
    )
    p.add_argument(
        "--continuous-batching",
        action="store_true",
        help="send each batch row as a request through transformers' continuous batching",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--no-power", action="store_true", help="do not sample GPU power (energy per token)"
    )
    p.add_argument("--out", type=Path, default=None, help="run directory for result.json")
    _config_file_option(p)


def _add_serve(modes: argparse._SubParsersAction) -> None:
    p = modes.add_parser(
        "serve", help="benchmark an OpenAI-compatible server (vLLM, SGLang, llama.cpp...)"
    )
    p.add_argument("--url", help="base URL with /v1, e.g. http://127.0.0.1:8000/v1 (required)")
    p.add_argument("--model", help="model name the server expects (default: the first it lists)")
    p.add_argument("--api", choices=("completions", "chat"), default="completions")
    p.add_argument("--api-key", help="sent as a Bearer token (default: $OPENAI_API_KEY)")
    p.add_argument(
        "--header", action="append", metavar="NAME:VALUE", help="extra request header (repeat)"
    )
    p.add_argument(
        "--extra-body", help="JSON object merged into every request, e.g. '{\"seed\": 1}'"
    )
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument(
        "--no-stream", action="store_true", help="non-streamed answers (TTFT = whole latency)"
    )
    p.add_argument(
        "--workload",
        choices=("random", "jsonl", "sharegpt", "shared-prefix", "trace"),
        default="random",
    )
    p.add_argument(
        "--prompts",
        type=Path,
        help="file for --workload jsonl, sharegpt or trace (BurstGPT .csv, Mooncake .jsonl)",
    )
    p.add_argument(
        "--random-range-ratio",
        type=float,
        default=0.0,
        help="random workload: lengths uniform in [len*(1-r), len*(1+r)]",
    )
    p.add_argument(
        "--trace-time-scale", type=float, default=1.0, help="trace: 0.5 replays twice as fast"
    )
    p.add_argument(
        "--ramp-up", type=float, default=0.0, help="seconds over which the rate climbs from 0"
    )
    p.add_argument(
        "--wait-ready",
        type=float,
        default=0.0,
        help="wait up to this many seconds for the server to answer at /models",
    )
    p.add_argument("--tokenizer", type=Path, help="local tokenizer directory for token counts")
    p.add_argument("--num-prompts", type=int, default=100)
    p.add_argument("--input-len", type=int, default=128, help="random workload prompt length")
    p.add_argument("--output-len", type=int, default=128, help="tokens to generate per request")
    p.add_argument("--num-conversations", type=int, default=8, help="shared-prefix workload")
    p.add_argument("--num-turns", type=int, default=4, help="shared-prefix workload")
    p.add_argument("--prefix-len", type=int, default=512, help="shared-prefix system prompt length")
    p.add_argument(
        "--rate", default="inf", help="requests/s (Poisson), comma list to sweep; inf = all at once"
    )
    p.add_argument(
        "--burstiness", type=float, default=1.0, help="gamma shape: 1 Poisson, <1 burstier"
    )
    p.add_argument(
        "--concurrency", default="none", help="max requests in flight, comma list to sweep"
    )
    p.add_argument(
        "--warmup", type=int, default=1, help="warm-up requests per point (not measured)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=120.0, help="per-request timeout in seconds")
    p.add_argument("--run-timeout", type=float, default=None, help="whole-run limit in seconds")
    p.add_argument("--slo", default=None, help="goodput SLOs, e.g. ttft=200ms,tpot=50ms,e2e=5s")
    p.add_argument(
        "--ignore-eos", action="store_true", help="ask the server for exactly --output-len tokens"
    )
    p.add_argument(
        "--max-error-rate",
        type=float,
        default=1.0,
        help="exit 1 when a point's share of failed requests is above this (all failed always fails)",
    )
    p.add_argument(
        "--unreachable-timeout",
        type=float,
        default=10.0,
        help="stop sending once the server refused connections for this many seconds",
    )
    p.add_argument(
        "--power",
        choices=("none", "local"),
        default="none",
        help="local: the server runs on this machine, sample its GPU power for energy per token",
    )
    p.add_argument(
        "--save-requests",
        action="store_true",
        help="also write requests.jsonl: one line per request (times, token counts, error)",
    )
    p.add_argument("--out", type=Path, default=None, help="run directory for result.json")
    _config_file_option(p)


def _config_file_option(parser: argparse.ArgumentParser) -> None:
    """Add --config FILE.toml: the same options as keys (num_prompts = 200, rate = [1, 2]).

    Every option's default is moved into a table and replaced by SUPPRESS, so after parsing the
    namespace holds only what was typed; `_apply_config_file` then fills the rest from the file,
    then from the defaults: flags beat the file, the file beats the defaults.
    """
    parser.add_argument(
        "--config", type=Path, help="TOML file with these options as keys; flags given here win"
    )
    table = {}
    for action in parser._actions:
        if action.option_strings and action.dest not in ("help", "config"):
            table[action.dest] = (action.default, action)
            if action.default is not None and action.default is not False:
                action.help = f"{action.help or ''} (default: {action.default})".strip()
            action.default = argparse.SUPPRESS
    parser.set_defaults(option_table=table)


def _apply_config_file(args: argparse.Namespace) -> None:
    from rocmkit.config import load_toml

    data = load_toml(args.config) if getattr(args, "config", None) else {}
    table = args.option_table
    for key, value in data.items():
        dest = key.replace("-", "_")
        if dest not in table:
            known = ", ".join(sorted(table))
            raise UserError(f"unknown setting '{key}' in {args.config}; known: {known}")
        if not hasattr(args, dest):
            setattr(args, dest, _option_value(value, table[dest][1], f"{args.config}: {key}"))
    for dest, (default, _) in table.items():
        if not hasattr(args, dest):
            setattr(args, dest, default)


def _option_value(value: Any, action: argparse.Action, where: str) -> Any:
    """A TOML value as if typed on the command line (lists become comma lists)."""
    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise UserError(f"{where} must be true or false")
        return value
    if isinstance(value, list):
        value = ",".join(str(item) for item in value)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise UserError(f"{where} must be a string, a number or a list")
    convert: Any = action.type if callable(action.type) else str
    try:
        value = convert(value)
    except (TypeError, ValueError):
        raise UserError(f"{where} has an invalid value {value!r}") from None
    if action.choices is not None and value not in action.choices:
        raise UserError(f"{where} must be one of {', '.join(map(str, action.choices))}")
    return value


def run(args: argparse.Namespace) -> int:
    if hasattr(args, "option_table"):
        _apply_config_file(args)
    if args.infer_mode == "local":
        return _run_local(args)
    if args.infer_mode == "serve":
        return _run_serve(args)
    raise UserError(
        "choose a mode: rocmkit infer local MODEL_DIR | rocmkit infer serve --url URL --model NAME"
    )


def _run_local(args: argparse.Namespace) -> int:
    from rocmkit.infer.local import LocalConfig, benchmark_local, local_measurements
    from rocmkit.platform import detect

    config = LocalConfig(
        model_dir=Path(args.model_dir),
        precision=args.precision,
        batch_sizes=tuple(_int_list(args.batch_sizes, "--batch-sizes")),
        prompt_lengths=tuple(_int_list(args.prompt_lens, "--prompt-lens")),
        output_lengths=tuple(_int_list(args.output_lens, "--output-lens")),
        num_warmup=args.warmup,
        num_iters=args.iters,
        compile=args.compile,
        sdpa_backend=args.sdpa_backend,
        continuous_batching=args.continuous_batching,
        seed=args.seed,
        power=not args.no_power,
    )
    platform = detect()
    result = benchmark_local(config, platform)
    rows = local_measurements(result, config)
    environment = {**platform.record(), "power_reader": result.power_reader}
    _save_and_print("infer-local", rows, _config_dict(config), environment, args.out, result.notes)
    return 0


def _run_serve(args: argparse.Namespace) -> int:
    from rocmkit.infer.client import Endpoint, api_key_from_env
    from rocmkit.infer.metrics import parse_slo
    from rocmkit.infer.serve import ServeConfig, benchmark_server, serve_measurements
    from rocmkit.infer.workloads import token_counter
    from rocmkit.platform import detect

    if not args.url:
        raise UserError("--url is required (on the command line or in --config)")
    config = ServeConfig(
        endpoint=Endpoint(
            base_url=args.url,
            model=args.model or "",
            api=args.api,
            timeout_s=args.timeout,
            ignore_eos=args.ignore_eos,
            stream=not args.no_stream,
            api_key=args.api_key or api_key_from_env(),
            headers=_header_dict(args.header or []),
            extra_body=_json_object(args.extra_body, "--extra-body"),
            temperature=args.temperature,
            top_p=args.top_p,
            top_k=args.top_k,
        ),
        ramp_up_s=args.ramp_up,
        wait_ready_s=args.wait_ready,
        request_rates=tuple(_rate_list(args.rate)),
        max_concurrencies=tuple(_concurrency_list(args.concurrency)),
        burstiness=args.burstiness,
        num_warmup=args.warmup,
        seed=args.seed,
        run_timeout_s=args.run_timeout,
        slo=parse_slo(args.slo) if args.slo else None,
        power=args.power,
        max_error_rate=args.max_error_rate,
        unreachable_timeout_s=args.unreachable_timeout,
    )
    tokenizer = _tokenizer(args.tokenizer)
    workload = _workload(args, tokenizer)
    platform = detect()
    result = benchmark_server(
        config, workload, token_counter(tokenizer), on_point=_print_point, platform=platform
    )
    rows = serve_measurements(result, config, workload)
    notes = list(workload.notes)
    skipped = {p.energy_skipped for p in result.points if p.energy_skipped}
    notes += [f"energy per token is n/a: {why}" for why in sorted(skipped)]
    for point in result.points:
        if point.summary.num_failed:
            top = max(point.summary.errors.items(), key=lambda item: item[1])
            notes.append(
                f"{point.summary.num_failed} requests failed, most often: {top[0]} ({top[1]}x)"
            )
    if result.stopped:
        notes.append(f"run ended early ({result.stopped}): partial result")
    environment = {**platform.record(), "power_reader": result.power_reader}
    if result.failure:
        notes.append(f"run failed: {result.failure}")
    used = dataclasses.replace(config, endpoint=result.endpoint or config.endpoint)
    inputs = {**_config_dict(used), "workload": _workload_inputs(args, workload)}
    out = _save_and_print("infer-serve", rows, inputs, environment, args.out, notes)
    if args.save_requests:
        _save_requests(result, out.parent / "requests.jsonl")
    if result.stopped == "interrupted":
        return 130
    return 1 if result.failure else 0


def _workload(args: argparse.Namespace, tokenizer: Any) -> Any:
    from rocmkit.infer import workloads

    if args.workload in ("jsonl", "sharegpt", "trace") and args.prompts is None:
        raise UserError(f"--workload {args.workload} needs --prompts FILE")
    if args.workload == "trace":
        from rocmkit.infer.traces import trace_workload

        return trace_workload(
            args.prompts,
            num_prompts=args.num_prompts,
            time_scale=args.trace_time_scale,
            seed=args.seed,
            tokenizer=tokenizer,
        )
    if args.workload == "jsonl":
        return workloads.jsonl_workload(
            args.prompts, output_len=args.output_len, tokenizer=tokenizer
        )
    if args.workload == "sharegpt":
        return workloads.sharegpt_workload(
            args.prompts, num_prompts=args.num_prompts, seed=args.seed, tokenizer=tokenizer
        )
    if args.workload == "shared-prefix":
        return workloads.shared_prefix_workload(
            num_conversations=args.num_conversations,
            num_turns=args.num_turns,
            prefix_len=args.prefix_len,
            turn_len=args.input_len,
            output_len=args.output_len,
            seed=args.seed,
            tokenizer=tokenizer,
        )
    return workloads.random_workload(
        num_prompts=args.num_prompts,
        input_len=args.input_len,
        output_len=args.output_len,
        seed=args.seed,
        tokenizer=tokenizer,
        range_ratio=args.random_range_ratio,
    )


def _header_dict(items: list[str]) -> dict[str, str]:
    headers = {}
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise UserError(f"--header takes NAME:VALUE (got {item!r})")
        headers[name.strip()] = value.strip()
    return headers


def _json_object(text: str | None, flag: str) -> dict[str, Any]:
    if not text:
        return {}
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{flag} is not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise UserError(f"{flag} must be a JSON object, e.g. '{{\"seed\": 1}}'")
    return value


def _workload_inputs(args: argparse.Namespace, workload: Any) -> dict[str, Any]:
    """Every setting that shaped the prompts, for result.json."""
    keys = ["workload", "num_prompts", "input_len", "output_len", "prompts", "tokenizer", "seed",
            "random_range_ratio", "trace_time_scale"]  # fmt: skip
    if args.workload == "shared-prefix":
        keys += ["num_conversations", "num_turns", "prefix_len"]
    inputs = {key: getattr(args, key) for key in keys}
    inputs["num_prompts"] = len(workload.prompts)
    inputs["length_unit"] = workload.length_unit
    return {k: str(v) if isinstance(v, Path) else v for k, v in inputs.items()}


def _save_requests(result: Any, path: Path) -> None:
    import json

    from rocmkit.atomic import atomic_write_text
    from rocmkit.infer.serve import request_lines

    lines = [json.dumps(line) for point in result.points for line in request_lines(point)]
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    _console().print(f"saved {path}")


def _console() -> Any:
    from rocmkit.cli.console import make_console

    return make_console()


def _tokenizer(path: Path | None) -> Any:
    if path is None:
        return None
    from rocmkit.infer.workloads import Tokenizer

    return Tokenizer(path)


def _int_list(text: str, flag: str) -> list[int]:
    try:
        return [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise UserError(f"{flag} takes comma-separated integers (got {text!r})") from None


def _rate_list(text: str) -> list[float]:
    try:
        rates = [
            math.inf if item.strip() == "inf" else float(item)
            for item in text.split(",")
            if item.strip()
        ]
    except ValueError:
        raise UserError(f"--rate takes numbers or inf, comma-separated (got {text!r})") from None
    if not rates or any(not r > 0 for r in rates):
        raise UserError(f"--rate values must be > 0 (got {text!r})")
    return rates


def _concurrency_list(text: str) -> list[int | None]:
    values: list[int | None] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        if item == "none":
            values.append(None)
            continue
        try:
            values.append(int(item))
        except ValueError:
            raise UserError(
                f"--concurrency takes integers or none, comma-separated (got {text!r})"
            ) from None
    return values or [None]


def _config_dict(config: Any) -> dict[str, Any]:
    """The config as JSON, secrets masked (the API key, header values)."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and math.isinf(value):
            return "inf"
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return str(value) if isinstance(value, Path) else value

    data = clean(dataclasses.asdict(config))
    endpoint = data.get("endpoint")
    if isinstance(endpoint, dict):
        if endpoint.get("api_key"):
            endpoint["api_key"] = "***"
        endpoint["headers"] = dict.fromkeys(endpoint.get("headers") or {}, "***")
    return data


def _print_point(point: Any) -> None:
    from rocmkit.cli.console import make_console

    s = point.summary
    rate = "inf" if math.isinf(point.request_rate) else f"{point.request_rate:g}"
    make_console().print(
        f"rate={rate} concurrency={point.max_concurrency or 'none'}: "
        f"{s.num_completed} ok, {s.num_failed} failed in {s.duration_s:.1f} s"
    )


def _save_and_print(
    suite: str,
    rows: list[Any],
    config: dict[str, Any],
    environment: dict[str, Any],
    out: Path | None,
    notes: list[str],
) -> Path:
    from rich.table import Table

    from rocmkit.cli.console import make_console
    from rocmkit.results import RunResult

    if out is None:
        out = Path("runs") / f"{suite}-{_dt.datetime.now(_dt.timezone.utc):%Y%m%d-%H%M%S}"
    result = RunResult(kind=suite, environment=environment, config=config, measurements=rows)
    path = result.save(out)
    names = list(dict.fromkeys(m.name for m in rows))
    metrics = list(dict.fromkeys(m.metric for m in rows))
    table = Table(title=suite)
    table.add_column("metric")
    for name in names:
        table.add_column(name, justify="right")
    cells = {(m.name, m.metric): m.value for m in rows}
    for metric in metrics:
        table.add_row(metric, *(_fmt(cells.get((name, metric))) for name in names))
    console = make_console()
    console.print(table)
    for note in notes:
        console.print(f"note: {note}")
    console.print(_RESULT_NOTE.format(path=path))
    return path


def _fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    return (
        f"{value:.0f}"
        if float(value).is_integer()
        else f"{value:.3g}"
        if abs(value) < 10
        else f"{value:.1f}"
    )
