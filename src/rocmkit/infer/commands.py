"""The two `rocmkit infer` commands as library calls: a config in, one `RunResult` out.

`run_serve(ServeSettings, platform)` and `run_local(LocalSettings, platform)` run the config the
flags, a preset, TOML and dotted overrides filled (`rocmkit.infer.settings`: the same class the
benchmark reads, no copy in between) and build the result document that `rocmkit.infer.command`
hands to the driver, which saves it and prints it through the report layouts, so `rocmkit infer serve` and
`rocmkit report RUN` show the same figures. Notes a reader needs (how lengths were counted, why a figure is n/a, why the run failed)
go to `result.data["notes"]`; why a serve run failed to `result.data["failure"]`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.errors import UserError
from rocmkit.infer.settings import LocalSettings, ServeSettings, metadata_dict
from rocmkit.results import RunResult

if TYPE_CHECKING:
    from rocmkit.infer.serve import ServePoint, ServeResult
    from rocmkit.infer.workloads import Tokenizer, Workload
    from rocmkit.measure.power import PowerReader
    from rocmkit.platform import Platform

REQUESTS_FILENAME = "requests.jsonl"


@dataclass(kw_only=True, frozen=True, slots=True)
class ServePlan:
    """A serve run ready to start: its config (checked when made), prompts and token counter."""

    config: ServeSettings
    workload: Workload
    tokenizer: Tokenizer | None


def plan_serve(config: ServeSettings) -> ServePlan:
    """Read the files the config names and build the workload; every bad input is a UserError,
    before any request is sent or any run directory made."""
    if config.append_results is not None:
        from rocmkit.atomic import check_writable_file

        check_writable_file(config.append_results, what="--append-results file")
    tokenizer = _tokenizer(config.tokenizer)
    workload = serve_workload(config, tokenizer)
    return ServePlan(config=config, workload=workload, tokenizer=tokenizer)


def run_serve(
    plan: ServePlan | ServeSettings,
    platform: Platform,
    *,
    out: Path | None = None,
    on_point: Callable[[ServePoint], None] | None = None,
    power_reader: PowerReader | None = None,
) -> RunResult:
    """Benchmark the server the config names; with `save_requests`, also write
    `out/requests.jsonl` (one line per request, so every figure can be recomputed)."""
    from rocmkit.infer.serve import benchmark_server, serve_measurements
    from rocmkit.infer.workloads import token_counter

    if not isinstance(plan, ServePlan):
        plan = plan_serve(plan)
    config, workload = plan.config, plan.workload
    if config.save_requests and out is None:
        raise UserError("--save-requests needs a run directory (--out DIR)")
    served = benchmark_server(
        config,
        workload,
        token_counter(plan.tokenizer),
        on_point=on_point,
        platform=platform,
        power_reader=power_reader,
    )
    used = (served.endpoint or config.endpoint).model  # the discovered one when none was given
    result = RunResult(
        kind="infer-serve",
        environment={**platform.record(), "power_reader": served.power_reader},
        config={
            **settings_record(config),
            "model": used,
            "num_prompts_sent": len(workload.prompts),
        },
        measurements=serve_measurements(served, config, workload),
        label=config.label,
        partial=served.stopped,
        outcome=serve_outcome(served.stopped, served.failure),
        data={
            "notes": serve_notes(served, workload),
            "failure": served.failure,
            "metadata": metadata_dict(config.metadata),
        },
    )
    if config.save_requests and out is not None:
        write_requests(served, out / REQUESTS_FILENAME)
    if config.append_results is not None:
        from rocmkit.infer.appended import append_points

        append_points(config.append_results, result)
    return result


def serve_outcome(stopped: str | None, failure: str | None) -> str:
    """How a serve run ended (`RunResult.outcome`, the exit code through `rocmkit.driver`):
    interrupted by Ctrl-C (130) or stopped by SIGTERM (143), what finished saved; failed when all
    or too many requests of a point failed or the server went away (1); else ok (0), a run cut
    short by --run-timeout included."""
    if stopped in ("interrupted", "terminated"):
        return stopped
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


def serve_workload(settings: ServeSettings, tokenizer: Tokenizer | None) -> Workload:
    """The prompts the settings ask for, made by the registered `--workload` kind
    (`rocmkit.infer.workload_kinds`: random, jsonl, sharegpt, shared-prefix, trace, or a package's)."""
    from rocmkit.infer.workload_kinds import make_workload

    return make_workload(settings, tokenizer)


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
