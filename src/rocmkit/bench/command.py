"""`rocmkit bench` as a command of the one driver: `build` turns the parsed flags into a
`BenchRequest` (its settings checked by name and type, before torch loads and with no device
sizes), `run(config, ctx)` sizes it for the device found, once,
runs the suites and returns the `RunResult`. From Python:
`rocmkit.bench.command.run(BenchRequest(suites=("gemm",)))`, or `run(BenchConfig(...))`.

Layers of the config, later wins: the sizes `device_defaults` picks for the device and mode, the
command's own flags, dotted overrides (`--gemm.sizes 256,512`), and the short train flags of the
train-precision suite (`--micro-batch 2`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocmkit.bench.sizing import Mode
from rocmkit.bench.suites import BenchConfig, Device, default_suites, device_defaults
from rocmkit.bench.train_precision import with_train_shortcuts
from rocmkit.config import from_dict, load_config
from rocmkit.driver import Command, Context
from rocmkit.platform import Platform
from rocmkit.results import RunResult

if TYPE_CHECKING:
    from rocmkit.console import ProgressHandle


def _settings(
    *,
    mode: Mode,
    suites: Sequence[str],
    label: str | None,
    threads: int | None,
    device: Device,
    power: bool,
    expect: float | None,
    floors: Mapping[str, float] | None,
    outlier_threshold: float | None,
) -> dict[str, object]:
    """The general settings the user gave, shaped like a BenchConfig (no suite sections)."""
    base: dict[str, object] = {"mode": mode, "power": power, "device": device}
    # no suites named: the ones registered to run in this mode (collectives need torchrun)
    base["suites"] = list(suites) if suites else default_suites(mode)
    optional = {"label": label, "threads": threads, "expect": expect}
    base.update({k: v for k, v in optional.items() if v is not None and v != ""})
    if floors:
        base["floors"] = dict(floors)
    if outlier_threshold is not None:
        base["outlier_threshold"] = outlier_threshold
    return base


def bench_config(
    platform: Platform,
    *,
    mode: Mode = "quick",
    suites: Sequence[str] = (),
    label: str | None = None,
    threads: int | None = None,
    device: Device = "auto",
    power: bool = True,
    overrides: Mapping[str, str] | None = None,
    train_shortcuts: Mapping[str, str] | None = None,
    expect: float | None = None,
    floors: Mapping[str, float] | None = None,
    outlier_threshold: float | None = None,
) -> BenchConfig:
    """The run's config: device-sized defaults <- these settings <- dotted `overrides` <- the
    train-precision suite's `train_shortcuts` (rocmkit.train.shortcuts overrides)."""
    base: dict[str, object] = dict(device_defaults(platform, mode))
    base.update(
        _settings(
            mode=mode,
            suites=suites,
            label=label,
            threads=threads,
            device=device,
            power=power,
            expect=expect,
            floors=floors,
            outlier_threshold=outlier_threshold,
        )
    )
    config = load_config(BenchConfig, base=base, overrides=dict(overrides or {}))
    if config.train_precision is not None and train_shortcuts:
        config.train_precision = with_train_shortcuts(config.train_precision, train_shortcuts)
    return config


@dataclass(frozen=True, kw_only=True)
class BenchRequest:
    """What a bench run asks for; `config(platform)` sizes it into a BenchConfig once the device
    is known (the sizes depend on it)."""

    mode: Mode = "quick"
    suites: tuple[str, ...] = ()
    label: str | None = None
    threads: int | None = None
    device: Device = "auto"
    power: bool = True
    overrides: Mapping[str, str] = field(default_factory=dict)  # dotted: {"gemm.sizes": "256"}
    train_shortcuts: Mapping[str, str] = field(default_factory=dict)
    expect: float | None = None  # fraction of peak every pct_of_peak figure must reach
    floors: Mapping[str, float] = field(default_factory=dict)  # "suite/name/metric" -> minimum
    outlier_threshold: float | None = None  # None: BenchConfig's default

    def check(self) -> None:
        """Check the settings without sizing them (no device, no torch): unknown suites, keys
        and sections, values of the wrong type and bad general settings raise UserError."""
        from rocmkit.bench.suites import check_sections
        from rocmkit.config import merge_dotted

        general = _settings(**self._general())
        data = merge_dotted(general, dict(self.overrides))
        check_sections(data)  # the suites' sections, checked by name and type; removed from data
        from_dict(BenchConfig, data)  # the general settings and the suite names

    def config(self, platform: Platform) -> BenchConfig:
        """The BenchConfig sized for `platform` (built once, when the run starts)."""
        return bench_config(
            platform,
            **self._general(),
            overrides=self.overrides,
            train_shortcuts=self.train_shortcuts,
        )

    def _general(self) -> dict[str, Any]:
        """The general settings (everything but the dotted overrides and train shortcuts)."""
        return {
            "mode": self.mode,
            "suites": self.suites,
            "label": self.label,
            "threads": self.threads,
            "device": self.device,
            "power": self.power,
            "expect": self.expect,
            "floors": self.floors,
            "outlier_threshold": self.outlier_threshold,
        }


def build(args: argparse.Namespace) -> BenchRequest:
    """The request the flags make. Bad suites, flags and overrides fail here in a fraction of a
    second, before torch loads and before the run directory exists; the config is sized for the
    device once, in `run`."""
    from rocmkit.bench.floors import parse_expect
    from rocmkit.config import parse_overrides
    from rocmkit.measure.noise import use_passive_wait_policy
    from rocmkit.train.shortcuts import shortcut_overrides

    use_passive_wait_policy()  # before anything imports torch and starts its OpenMP pool
    expect, floors = parse_expect(args.expect) if getattr(args, "expect", None) else (None, {})
    request = BenchRequest(
        mode=args.mode,
        suites=tuple(s.strip() for item in args.suite or [] for s in item.split(",") if s.strip()),
        label=args.label,
        threads=args.threads,
        device=args.device,
        power=not args.no_power,
        overrides=parse_overrides(getattr(args, "overrides", None) or []),
        train_shortcuts=shortcut_overrides(vars(args), getattr(args, "train_shortcuts", ())),
        expect=expect,
        floors=floors,
        outlier_threshold=getattr(args, "outlier_threshold", None),
    )
    request.check()
    return request


def run(config: BenchRequest | BenchConfig, ctx: Context | None = None) -> RunResult:
    """Detect the device, size the config for it and run the suites (under the memory monitor
    when asked). Outcome (see `run_bench`): "interrupted" by Ctrl-C, with the suites that
    finished; "failed" when a figure's correctness check failed or a figure is under its
    `--expect` floor; else "ok"."""
    from rocmkit.bench.suites import on_device, run_bench
    from rocmkit.platform import detect

    ctx = ctx or Context()
    platform = on_device(detect(), config.device)
    bench = config.config(platform) if isinstance(config, BenchRequest) else config
    with (
        ctx.memory(device=platform.torch_device, name="bench run"),
        ctx.progress("bench", total=None) as bar,
    ):
        result = run_bench(
            bench,
            platform,
            on_suite=_suite_started(bar, ctx, len(bench.suites)),
            on_note=lambda text: _say(bar, ctx, f"[yellow]note:[/yellow] {text}"),
            on_figure=bar.advance,
        )
    return result


def _say(bar: ProgressHandle, ctx: Context, text: str) -> None:
    """A line above the bar on a terminal, else a plain line on stderr."""
    if bar.live:
        bar.print(text)
    else:
        ctx.say(text)


def _suite_started(
    bar: ProgressHandle, ctx: Context, num_suites: int
) -> Callable[[str, int], None]:
    started = iter(range(1, num_suites + 1))

    def on_suite(name: str, num_figures: int) -> None:
        label = f"{name} ({next(started)}/{num_suites})"
        bar.stage(label, total=num_figures or None)
        if not bar.live:  # logs and CI get one line per suite instead of a bar
            ctx.say(f"[bold]running {label}...[/bold]")

    return on_suite


COMMAND = Command(name="bench", build=build, run=run, saves="always", reports=True)
