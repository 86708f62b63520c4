"""`rocmkit infer serve` and `rocmkit infer local` as commands of the one driver (`SERVE`, `LOCAL`).

`build_serve` / `build_local` turn the parsed flags into the checked config (preset <- `--config`
TOML <- dotted overrides <- flags; `ServeSettings` / `LocalSettings`, the very classes the flags are
generated from and the benchmarks run): every bad option, prompts file or model directory is
refused there, before any run directory. `run(config, ctx)` benchmarks and returns the `RunResult` with its
`outcome` (failed: the server failed the run; interrupted: Ctrl-C), which the driver saves, prints
and turns into the exit code. From Python:
`rocmkit.infer.command.run(ServeSettings(url=..., model=...))` or `run(LocalSettings(model_dir=...))`.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import TYPE_CHECKING, Any

from rocmkit.driver import Command, Context
from rocmkit.errors import UserError
from rocmkit.infer.commands import ServePlan, local_config, plan_serve, run_local, run_serve
from rocmkit.infer.settings import LocalSettings, ServeSettings
from rocmkit.results import RunResult

if TYPE_CHECKING:
    from rocmkit.infer.serve import ServePoint


def settings_from_args(args: argparse.Namespace, mode: str) -> Any:
    """The mode's settings from the parsed command line (only the flags typed are set)."""
    from rocmkit.config import parse_overrides
    from rocmkit.infer.settings import SETTINGS, load_settings
    from rocmkit.options import typed_values

    return load_settings(
        mode,
        preset=getattr(args, "preset", None),
        path=getattr(args, "config", None),
        dotted=parse_overrides(getattr(args, "overrides", None) or []),
        flags=typed_values(SETTINGS[mode], args),
    )


def build_serve(args: argparse.Namespace) -> ServePlan:
    """The config (its endpoint, SLOs and sweep points checked) and the prompts; the server is
    not contacted yet."""
    return plan_serve(settings_from_args(args, "serve"))


def build_local(args: argparse.Namespace) -> LocalSettings:
    settings: LocalSettings = settings_from_args(args, "local")
    if settings.tiny:
        if settings.model_dir is not None:
            raise UserError("--tiny builds its own model: drop MODEL_DIR (or --tiny)")
        from rocmkit.infer.tiny import tiny_model

        settings = dataclasses.replace(settings, model_dir=tiny_model())
    local_config(settings)  # a missing model directory is refused here
    return settings


def run(config: ServePlan | ServeSettings | LocalSettings, ctx: Context | None = None) -> RunResult:
    """Benchmark the server (serve settings or plan) or the local model (local settings)."""
    ctx = ctx or Context()
    if isinstance(config, LocalSettings):
        return _local(config, ctx)
    return _serve(config, ctx)


def _serve(config: ServePlan | ServeSettings, ctx: Context) -> RunResult:
    from rocmkit.platform import detect

    # run_serve sets the outcome: failed (the server failed the run) or interrupted (Ctrl-C).
    return run_serve(config, detect(), out=ctx.out, on_point=lambda p: ctx.say(point_line(p)))


def _local(settings: LocalSettings, ctx: Context) -> RunResult:
    from rocmkit.platform import detect

    platform = detect()
    with ctx.memory(device=platform.torch_device, name="infer local"):
        return run_local(settings, platform)


def point_line(point: ServePoint) -> str:
    """One progress line per finished sweep point."""
    s = point.summary
    rate = "inf" if math.isinf(point.request_rate) else f"{point.request_rate:g}"
    if point.ramp is not None:
        rate = point.ramp.label()
    return (
        f"rate={rate} concurrency={point.max_concurrency or 'none'}: "
        f"{s.num_completed} ok, {s.num_failed} failed"
        + (f", {s.num_unsent} unsent" if s.num_unsent else "")
        + f" in {s.duration_s:.1f} s"
    )


SERVE = Command(name="infer-serve", build=build_serve, run=run, saves="always")
LOCAL = Command(name="infer-local", build=build_local, run=run, saves="always")
