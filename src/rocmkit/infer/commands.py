"""The two `rocmkit infer` commands as library calls: settings in, one `RunResult` out.

`run_serve(ServeSettings, platform)` and `run_local(LocalSettings, platform)` turn the flat
settings (filled by `rocmkit.config` from a preset, TOML, dotted overrides and flags) into the
capability's config, run it, and build the result document that `rocmkit.infer.command` hands to
the driver, which saves it and prints it through the report layouts, so `rocmkit infer serve` and
`rocmkit report RUN` show the same figures. Notes a reader needs (how lengths were counted, why a figure is n/a, why the run failed)
go to `result.data["notes"]`; why a serve run failed to `result.data["failure"]`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.errors import UserError
from rocmkit.results import RunResult

if TYPE_CHECKING:
    from rocmkit.infer.loadgen import Ramp
    from rocmkit.infer.serve import ServeConfig, ServePoint, ServeResult
    from rocmkit.infer.settings import LocalSettings, ServeSettings
    from rocmkit.infer.workloads import Tokenizer, Workload
    from rocmkit.measure.power import PowerReader
    from rocmkit.platform import Platform

REQUESTS_FILENAME = "requests.jsonl"


@dataclass(kw_only=True, frozen=True, slots=True)
class ServePlan:
    """A serve run ready to start: its settings, config, prompts and token counter, all checked."""

    settings: ServeSettings
    config: ServeConfig
    workload: Workload
    tokenizer: Tokenizer | None


def plan_serve(settings: ServeSettings) -> ServePlan:
    """Check the settings and build the workload; every bad input is a UserError, before any
    request is sent or any run directory made."""
    config = serve_config(settings)
    metadata_dict(settings.metadata)
    if settings.append_results is not None:
        from rocmkit.atomic import check_writable_file

        check_writable_file(settings.append_results, what="--append-results file")
    tokenizer = _tokenizer(settings.tokenizer)
    workload = serve_workload(settings, tokenizer)
    return ServePlan(settings=settings, config=config, workload=workload, tokenizer=tokenizer)


def run_serve(
    plan: ServePlan | ServeSettings,
    platform: Platform,
    *,
    out: Path | None = None,
    on_point: Callable[[ServePoint], None] | None = None,
    power_reader: PowerReader | None = None,
) -> RunResult:
    """Benchmark the server the settings name; with `save_requests`, also write
    `out/requests.jsonl` (one line per request, so every figure can be recomputed)."""
    from rocmkit.infer.serve import benchmark_server, serve_measurements
    from rocmkit.infer.workloads import token_counter

    if not isinstance(plan, ServePlan):
        plan = plan_serve(plan)
    settings, config, workload = plan.settings, plan.config, plan.workload
    if settings.save_requests and out is None:
        raise UserError("--save-requests needs a run directory (--out DIR)")
    served = benchmark_server(
        config,
        workload,
        token_counter(plan.tokenizer),
        on_point=on_point,
        platform=platform,
        power_reader=power_reader,
    )
    used = dataclasses.replace(settings, model=(served.endpoint or config.endpoint).model)
    result = RunResult(
        kind="infer-serve",
        environment={**platform.record(), "power_reader": served.power_reader},
        config={**settings_record(used), "num_prompts_sent": len(workload.prompts)},
        measurements=serve_measurements(served, config, workload),
        label=settings.label,
        partial=served.stopped,
        outcome=serve_outcome(served.stopped, served.failure),
        data={
            "notes": serve_notes(served, workload),
            "failure": served.failure,
            "metadata": metadata_dict(settings.metadata),
        },
    )
    if settings.save_requests and out is not None:
        write_requests(served, out / REQUESTS_FILENAME)
    if settings.append_results is not None:
        from rocmkit.infer.appended import append_points

        append_points(settings.append_results, result)
    return result


def serve_outcome(stopped: str | None, failure: str | None) -> str:
    """How a serve run ended (`RunResult.outcome`, the exit code through `rocmkit.driver`):
    interrupted by Ctrl-C (130); failed when all or too many requests of a point failed or the
    server went away (1); else ok (0), a run cut short by --run-timeout included."""
    if stopped == "interrupted":
        return "interrupted"
    return "failed" if failure else "ok"


def serve_notes(served: ServeResult, workload: Workload) -> list[str]:
    """What a reader of the table needs to know: length units, n/a energy, errors, early end."""
    notes = list(workload.notes)
    skipped = {p.energy_skipped for p in served.points if p.energy_skipped}
    notes += [f"energy per token is n/a: {why}" for why in sorted(skipped)]
    if served.endpoint is not None and not served.endpoint.stream:
        notes.append("TPOT and ITL are n/a: with --no-stream each answer comes whole")
    unsent = sum(p.summary.num_unsent for p in served.points)
    if unsent:
        notes.append(f"{unsent} requests were never sent (the run stopped first): not failures")
    for point in served.points:
        if point.summary.num_failed:
            top = max(point.summary.errors.items(), key=lambda item: item[1])
            notes.append(
                f"{point.summary.num_failed} requests failed, most often: {top[0]} ({top[1]}x)"
            )
    if served.failure:
        notes.append(f"run failed: {served.failure}")
    return notes


def write_requests(served: ServeResult, path: Path) -> Path:
    """requests.jsonl: one JSON line per request of every point (atomic)."""
    from rocmkit.atomic import atomic_write_text
    from rocmkit.infer.serve import request_lines

    lines = [json.dumps(line) for point in served.points for line in request_lines(point)]
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return path


def serve_config(settings: ServeSettings) -> ServeConfig:
    """The ServeConfig the settings describe; the API key falls back to $OPENAI_API_KEY."""
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
            headers=header_dict(settings.header),
            extra_body=json_object(extra, "--extra-body")
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
        ramp_up_s=settings.ramp_up_time,
        ramp=_ramp(settings),
        warmup_retries=settings.warmup_retries,
        percentiles=settings.percentiles,
        wait_ready_s=settings.wait_ready,
    )


def _ramp(settings: ServeSettings) -> Ramp | None:
    """`--ramp-up linear|exponential` between the two rates; None without it."""
    from rocmkit.infer.loadgen import Ramp

    start, end = settings.ramp_up_start_rate, settings.ramp_up_end_rate
    if settings.ramp_up == "none":
        if start is not None or end is not None:
            raise UserError(
                "--ramp-up-start-rate and --ramp-up-end-rate need --ramp-up linear|exponential"
            )
        return None
    if start is None or end is None:
        raise UserError(
            f"--ramp-up {settings.ramp_up} needs --ramp-up-start-rate and --ramp-up-end-rate"
        )
    return Ramp(strategy=settings.ramp_up, start_rate=start, end_rate=end)


def serve_workload(settings: ServeSettings, tokenizer: Tokenizer | None) -> Workload:
    """The prompts the settings ask for, made by the registered `--workload` kind
    (`rocmkit.infer.workload_kinds`: random, jsonl, sharegpt, shared-prefix, trace, or a package's)."""
    from rocmkit.infer.workload_kinds import make_workload

    return make_workload(settings, tokenizer)


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


def settings_record(settings: ServeSettings | LocalSettings) -> dict[str, Any]:
    """The settings as result.json keeps them, secrets masked (the API key, header values)."""
    from rocmkit.config import to_dict

    data = to_dict(settings)
    if data.get("api_key"):
        data["api_key"] = "***"
    if data.get("header"):
        data["header"] = [str(item).partition(":")[0] + ":***" for item in data["header"]]
    return data


def _tokenizer(path: Path | None) -> Tokenizer | None:
    if path is None:
        return None
    from rocmkit.infer.workloads import Tokenizer

    return Tokenizer(path)


def local_config(settings: LocalSettings) -> LocalSettings:
    """The settings, which are the config `benchmark_local` runs, once a model directory is set."""
    if settings.model_dir is None:
        raise UserError("give the model directory: rocmkit infer local MODEL_DIR")
    return settings


def run_local(
    settings: LocalSettings, platform: Platform, *, power_reader: PowerReader | None = None
) -> RunResult:
    """Time generate() on the local model `settings` names, every shape (eager, and `--fast`
    next to it), as one result document."""
    from rocmkit.infer.local import benchmark_local, local_measurements

    config = local_config(settings)
    metadata = metadata_dict(settings.metadata)
    local = benchmark_local(config, platform, power_reader=power_reader)
    return RunResult(
        kind="infer-local",
        environment={**platform.record(), "power_reader": local.power_reader},
        config=settings_record(settings),
        measurements=local_measurements(local, config),
        label=settings.label,
        data={"notes": list(local.notes), "metadata": metadata},
    )
