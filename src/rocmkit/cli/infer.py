"""`rocmkit infer`: LLM inference benchmarks, local (transformers) and against OpenAI-compatible servers.

Flags are built from the settings dataclasses of `rocmkit.infer.settings`; a preset, `--config`
TOML file, dotted overrides (`--serve.num_prompts 200`) and typed flags fill them through
`rocmkit.config`, later sources winning.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import math
from pathlib import Path
from typing import Any

from rocmkit.errors import UserError

_RESULT_NOTE = "saved {path}"
_HELP = {
    "local": "time transformers generate() on a local Hugging Face model directory",
    "serve": "benchmark an OpenAI-compatible server (vLLM, SGLang, llama.cpp...)",
}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "infer", help="LLM inference benchmarks: a local model, or an OpenAI-compatible server"
    )
    modes = parser.add_subparsers(dest="infer_mode", metavar="MODE", parser_class=type(parser))
    for mode in ("local", "serve"):
        _add_mode(modes, mode)
    parser.set_defaults(handler=run, accepts_overrides=True)


def _add_mode(modes: argparse._SubParsersAction, mode: str) -> None:
    """One flag per settings field; absent flags stay absent so file and preset values hold."""
    from rocmkit.infer.settings import setting_fields

    p = modes.add_parser(mode, help=_HELP[mode], argument_default=argparse.SUPPRESS)
    for f in setting_fields(mode):
        text, default = f.metadata.get("help", ""), f.default
        if f.metadata.get("positional"):
            p.add_argument(f.name, metavar=f.name.upper(), help=text)
        elif default is True:
            p.add_argument(
                f"--no-{f.name.replace('_', '-')}", dest=f.name, action="store_false", help=text
            )
        elif default is False:
            p.add_argument(f"--{f.name.replace('_', '-')}", action="store_true", help=text)
        else:
            shown = ",".join(_shown(v) for v in default) if isinstance(default, tuple) else default
            note = "" if default in (None, ()) else f" (default: {_shown(shown)})"
            action = "append" if f.metadata.get("repeat") else "store"
            p.add_argument(f"--{f.name.replace('_', '-')}", action=action, help=text + note)
    p.add_argument("--preset", help="settings preset (see docs/infer.md)")
    p.add_argument("--config", type=Path, help="TOML file with these options as keys")
    p.add_argument("--out", type=Path, help="run directory for result.json")


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    return "inf" if isinstance(value, float) and math.isinf(value) else str(value)


def _settings(args: argparse.Namespace) -> Any:
    from rocmkit.config import parse_overrides
    from rocmkit.infer.settings import load_settings, setting_fields

    names = {f.name for f in setting_fields(args.infer_mode)}
    flags = {k: v for k, v in vars(args).items() if k in names}
    return load_settings(
        args.infer_mode,
        preset=getattr(args, "preset", None),
        path=getattr(args, "config", None),
        dotted=parse_overrides(getattr(args, "overrides", None) or []),
        flags=flags,
    )


def run(args: argparse.Namespace) -> int:
    if args.infer_mode not in ("local", "serve"):
        raise UserError(
            "choose a mode: rocmkit infer local MODEL_DIR | rocmkit infer serve --url URL --model NAME"
        )
    settings = _settings(args)
    out = getattr(args, "out", None)
    return _run_local(settings, out) if args.infer_mode == "local" else _run_serve(settings, out)


def _run_local(settings: Any, out: Path | None) -> int:
    from rocmkit.infer.local import LocalConfig, benchmark_local, local_measurements
    from rocmkit.platform import detect

    if settings.model_dir is None:
        raise UserError("give the model directory: rocmkit infer local MODEL_DIR")
    config = LocalConfig(
        model_dir=settings.model_dir,
        precision=settings.precision,
        batch_sizes=settings.batch_sizes,
        prompt_lengths=settings.prompt_lens,
        output_lengths=settings.output_lens,
        num_warmup=settings.warmup,
        num_iters=settings.iters,
        compile=settings.compile,
        fast=settings.fast,
        sdpa_backend=settings.sdpa_backend,
        continuous_batching=settings.continuous_batching,
        seed=settings.seed,
        power=settings.power,
    )
    platform = detect()
    result = benchmark_local(config, platform)
    rows = local_measurements(result, config)
    environment = {**platform.record(), "power_reader": result.power_reader}
    _save_and_print("infer-local", rows, _config_dict(settings), environment, out, result.notes)
    return 0


def _serve_config(settings: Any) -> Any:
    from rocmkit.infer.client import Endpoint, api_key_from_env
    from rocmkit.infer.metrics import parse_slo
    from rocmkit.infer.serve import ServeConfig

    if not settings.url:
        raise UserError("--url is required (on the command line or in --config)")
    extra = settings.extra_body
    return ServeConfig(
        endpoint=Endpoint(
            base_url=settings.url,
            model=settings.model or "",
            api=settings.api,
            timeout_s=settings.timeout,
            ignore_eos=settings.ignore_eos,
            stream=settings.stream,
            api_key=settings.api_key or api_key_from_env(),
            headers=_header_dict(settings.header),
            extra_body=_json_object(extra, "--extra-body")
            if isinstance(extra, str)
            else extra or {},
            temperature=settings.temperature,
            top_p=settings.top_p,
            top_k=settings.top_k,
        ),
        request_rates=settings.rate,
        max_concurrencies=settings.concurrency or (None,),
        burstiness=settings.burstiness,
        num_warmup=settings.warmup,
        seed=settings.seed,
        run_timeout_s=settings.run_timeout,
        slo=parse_slo(settings.slo) if settings.slo else None,
        power=settings.power,
        max_error_rate=settings.max_error_rate,
        unreachable_timeout_s=settings.unreachable_timeout,
        ramp_up_s=settings.ramp_up,
        wait_ready_s=settings.wait_ready,
    )


def _run_serve(settings: Any, out: Path | None) -> int:
    from rocmkit.infer.serve import benchmark_server, serve_measurements
    from rocmkit.infer.workloads import token_counter
    from rocmkit.platform import detect

    config = _serve_config(settings)
    tokenizer = _tokenizer(settings.tokenizer)
    workload = _workload(settings, tokenizer)
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
    used = dataclasses.replace(settings, model=(result.endpoint or config.endpoint).model)
    inputs = {**_config_dict(used), "num_prompts_sent": len(workload.prompts)}
    path = _save_and_print("infer-serve", rows, inputs, environment, out, notes)
    if settings.save_requests:
        _save_requests(result, path.parent / "requests.jsonl")
    if result.stopped == "interrupted":
        return 130
    return 1 if result.failure else 0


def _workload(settings: Any, tokenizer: Any) -> Any:
    from rocmkit.infer import workloads

    if settings.workload in ("jsonl", "sharegpt", "trace") and settings.prompts is None:
        raise UserError(f"--workload {settings.workload} needs --prompts FILE")
    if settings.workload == "trace":
        from rocmkit.infer.traces import trace_workload

        return trace_workload(
            settings.prompts,
            num_prompts=settings.num_prompts,
            time_scale=settings.trace_time_scale,
            seed=settings.seed,
            tokenizer=tokenizer,
        )
    if settings.workload == "jsonl":
        return workloads.jsonl_workload(
            settings.prompts, output_len=settings.output_len, tokenizer=tokenizer
        )
    if settings.workload == "sharegpt":
        return workloads.sharegpt_workload(
            settings.prompts,
            num_prompts=settings.num_prompts,
            seed=settings.seed,
            tokenizer=tokenizer,
        )
    if settings.workload == "shared-prefix":
        return workloads.shared_prefix_workload(
            num_conversations=settings.num_conversations,
            num_turns=settings.num_turns,
            prefix_len=settings.prefix_len,
            turn_len=settings.input_len,
            output_len=settings.output_len,
            seed=settings.seed,
            tokenizer=tokenizer,
        )
    return workloads.random_workload(
        num_prompts=settings.num_prompts,
        input_len=settings.input_len,
        output_len=settings.output_len,
        seed=settings.seed,
        tokenizer=tokenizer,
        range_ratio=settings.random_range_ratio,
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


def _config_dict(settings: Any) -> dict[str, Any]:
    """The settings as JSON, secrets masked (the API key, header values)."""
    from rocmkit.config import to_dict

    data = _clean(to_dict(settings))
    if data.get("api_key"):
        data["api_key"] = "***"
    if data.get("header"):
        data["header"] = [item.partition(":")[0] + ":***" for item in data["header"]]
    return data


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isinf(value):
        return "inf"  # JSON has no infinity
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


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
