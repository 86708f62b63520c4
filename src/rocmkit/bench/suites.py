"""The bench suite registry, sized for the device found, and `run_bench(config, platform) -> RunResult`.

A suite is one module that ends in `BENCH_SUITE = register_suite(Suite(...))`: its name, config
type, device-sized defaults, runner, figure count (for the progress bar), report layout (title,
column order, plot) and whether `--quick`/`--full` run it by default. The built-in modules are
`BUILTIN_SUITES`; other packages add theirs through the `rocmkit.bench_suites` entry point group.
Both load on the first look at the registry (`get_suite`, `suite_names`), not at import.
Sizes scale with the device: a 2-core CPU gets tiny problems, a GPU gets sizes that fill it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rocmkit.bench import fleet
from rocmkit.bench.floors import apply_floors, check_floors, check_fraction
from rocmkit.bench.sizing import Mode
from rocmkit.bench.sustained import with_telemetry
from rocmkit.config import check_settings, flatten_dotted, from_dict, merge_dotted, to_dict
from rocmkit.errors import UserError
from rocmkit.extensions import BENCH_SUITES, load_group
from rocmkit.measure.noise import prepare_cpu
from rocmkit.measure.power import PowerSampler, average_watts, platform_power_reader
from rocmkit.measure.ticks import listening
from rocmkit.platform import Platform
from rocmkit.results import Measurement, RunResult

if TYPE_CHECKING:
    from rocmkit.report import SuiteLayout

Device = Literal["auto", "cpu", "gpu"]
# The modules of the suites rocmkit ships, in the order they run; each registers its suite.
BUILTIN_SUITES = (
    "rocmkit.bench.gemm",
    "rocmkit.bench.bandwidth",
    "rocmkit.bench.collectives",
    "rocmkit.bench.attention",
    "rocmkit.bench.train_precision",
    "rocmkit.bench.links",
    "rocmkit.bench.burnin",
)
# Environment variables that change what a benchmark measures; recorded with every run.
ENV_PREFIXES = (
    "HIP_",
    "ROCR_",
    "HSA_",
    "CUDA_",
    "NCCL_",
    "RCCL_",
    "HIPBLASLT_",
    "PYTORCH_",
    "TORCH_",
    "OMP_",
    "MIOPEN_",
)


@dataclass(kw_only=True)
class BenchConfig:
    """What to run. Suite configs left as None are sized for the device by `sized_for`.

    The built-in suites have a typed section each (`--gemm.sizes 256,512`; these fields keep
    result.json's `config` as it always was); a registered suite's settings go in
    `suite_configs[section]` (`--suite_configs.mysuite.size 64`).
    """

    suites: list[str] = field(default_factory=lambda: default_suites("quick"))
    mode: Mode = "quick"
    label: str | None = None
    power: bool = True
    device: Device = "auto"  # cpu: measure the CPU even when a GPU is there
    threads: int | None = None  # torch CPU threads; None: as many as there are free cores
    gemm: GemmConfig | None = None
    bandwidth: BandwidthConfig | None = None
    collectives: CollectivesConfig | None = None
    attention: AttentionConfig | None = None
    train_precision: TrainPrecisionConfig | None = None
    suite_configs: dict[str, Any] = field(default_factory=dict)
    expect: float | None = None  # every pct_of_peak figure must reach this fraction of peak
    floors: dict[str, float] = field(default_factory=dict)  # "suite/name/metric" -> minimum
    # under torchrun: a rank's figure this much worse than the fleet median is an OUTLIER
    outlier_threshold: float = fleet.DEFAULT_THRESHOLD

    def __post_init__(self) -> None:
        for name in self.suites:
            get_suite(name)
        if self.expect is not None:
            check_fraction(self.expect)
        self.floors = check_floors(self.floors)
        if not 0 < self.outlier_threshold < 1:
            raise UserError(f"outlier_threshold must be in (0, 1) (got {self.outlier_threshold})")
        if self.mode not in ("quick", "full"):
            raise UserError(f"bench mode must be quick or full (got {self.mode!r})")
        if self.device not in ("auto", "cpu", "gpu"):
            raise UserError(f"bench device must be auto, cpu or gpu (got {self.device!r})")
        if self.threads is not None and self.threads < 1:
            raise UserError(f"bench threads must be at least 1 (got {self.threads})")


# (the suite's sized config or None, platform, power sampler or None) -> its measurements
SuiteRunner = Callable[[Any, Platform, "PowerSampler | None"], list[Measurement]]


@dataclass(frozen=True, kw_only=True)
class Suite:
    """A registered bench suite: everything rocmkit needs to run, size, count and report it.

    `run(suite_config, platform, sampler)` gets the suite's own config, sized for the device
    (None when the suite has no `config_type`). `section` is where that config lives in a
    BenchConfig (default: the name with - as _); `defaults(platform, mode)` gives it as a dict
    under the user's settings; `num_figures(suite_config, platform)` counts the figures it will
    report, for the progress bar. A suite that cannot run here raises one of `unavailable`: the
    run goes on and the suite reports why it was skipped. `layout` is how `rocmkit report` shows
    its rows (`rocmkit.report.SuiteLayout`: title, metrics first, columns, plot); without one the
    generic table. `quick`/`full`: run when `rocmkit bench` / `--full` names no `--suite`.
    """

    name: str
    description: str
    run: SuiteRunner
    config_type: type | None = None
    section: str | None = None
    defaults: Callable[[Platform, Mode], dict[str, Any]] | None = None
    num_figures: Callable[[Any, Platform], int] | None = None
    needs_torchrun: bool = False
    unavailable: tuple[type[Exception], ...] = ()
    layout: SuiteLayout | None = None
    quick: bool = False
    full: bool = False

    @property
    def config_section(self) -> str:
        return self.section or self.name.replace("-", "_")


SUITES: dict[str, Suite] = {}
# The suites the built-in modules and entry points gave, found once (see `discovered`).
_DISCOVERED: list[Suite] = []


def register_suite(suite: Suite) -> Suite:
    """Register (or replace) `suite`; BenchConfig(suites=[...]) and `rocmkit bench` accept it."""
    if suite.config_section in _GENERAL_SETTINGS:
        raise UserError(f"bench suite {suite.name!r}: section {suite.config_section!r} is taken")
    SUITES[suite.name] = suite
    return suite


def discovered() -> dict[str, Suite]:
    """Every known suite, by name: the built-in ones, then other packages' (entry point group
    `rocmkit.bench_suites`, loaded on the first call), then any `register_suite` made since.

    An entry point names a module whose import registers its suite (its `BENCH_SUITE`), or a
    `Suite` object itself (`mysuites.copy:SUITE`)."""
    if not _DISCOVERED:
        found = [_module_suite(importlib.import_module(name), name) for name in BUILTIN_SUITES]
        builtin = {suite.name for suite in found}
        for name, loaded in load_group(BENCH_SUITES):
            suite = loaded if isinstance(loaded, Suite) else _module_suite(loaded, name)
            if suite.name in builtin:  # an installed package must not silently swap a figure
                raise UserError(
                    f"the bench suite of entry point {name!r} is called {suite.name!r}, like a "
                    "built-in one; rename it"
                )
            found.append(suite)
        _DISCOVERED.extend(found)
    for suite in _DISCOVERED:
        SUITES.setdefault(suite.name, suite)  # a later register_suite of the name wins
    ordered = {s.name: SUITES[s.name] for s in _DISCOVERED}  # built-in order, not import order
    return ordered | SUITES


def _module_suite(module: Any, name: str) -> Suite:
    suite = getattr(module, "BENCH_SUITE", None)
    if not isinstance(suite, Suite):
        raise UserError(
            f"bench suite entry {name!r}: module {getattr(module, '__name__', module)} has no "
            "BENCH_SUITE = register_suite(Suite(...)); point the entry at the Suite object"
        )
    return suite


def get_suite(name: str) -> Suite:
    suites = discovered()
    if name not in suites:
        raise UserError(f"unknown bench suite {name!r}; choose from {', '.join(suites)}")
    return suites[name]


def default_suites(mode: Mode) -> list[str]:
    """The suites a run with no `--suite` runs, in registry order."""
    return [s.name for s in discovered().values() if (s.quick if mode == "quick" else s.full)]


def suite_help() -> str:
    """The `--suite` help of `rocmkit bench`, from the registry (external suites included)."""
    quick, full = default_suites("quick"), default_suites("full")
    added = [name for name in full if name not in quick]
    more = f"; --full adds {', '.join(added)}" if added else ""
    return (
        f"suite to run (repeat or comma-separate): {', '.join(discovered())} "
        f"(default: {','.join(quick)}{more})"
    )


# BenchConfig's own settings; its other fields are the typed sections of the built-in suites.
_GENERAL_SETTINGS = {
    "suites",
    "mode",
    "label",
    "power",
    "device",
    "threads",
    "suite_configs",
    "expect",
    "floors",
    "outlier_threshold",
}
_TYPED_SECTIONS = {f.name for f in dataclasses.fields(BenchConfig)} - _GENERAL_SETTINGS


def suite_config(config: BenchConfig, suite: Suite) -> Any:
    """The settings of `suite` in `config`: its typed section, or its `suite_configs` entry."""
    section = suite.config_section
    if section in _TYPED_SECTIONS:
        return getattr(config, section)
    return config.suite_configs.get(section)


def check_sections(data: dict[str, Any]) -> None:
    """Check the suite sections of a BenchConfig-shaped dict (typed sections and
    `suite_configs.<section>`) without sizing the config for the device, and remove them from
    `data` (the rest is the general settings). An unknown section raises UserError."""
    mode = data.get("mode", "quick")
    by_section = {s.config_section: s for s in discovered().values()}
    sections = {name: data.pop(name) for name in sorted(set(data) & _TYPED_SECTIONS)}
    extra = data.pop("suite_configs", None) or {}
    if not isinstance(extra, Mapping):
        raise UserError("'suite_configs' must be a table of suite sections")
    for section in extra:
        if section not in by_section:
            known = ", ".join(sorted(by_section)) or "none"
            raise UserError(f"no suite has settings 'suite_configs.{section}'; known: {known}")
    for prefix, section, value in [
        *((f"{name}.", name, value) for name, value in sections.items()),
        *((f"suite_configs.{name}.", name, value) for name, value in extra.items()),
    ]:
        suite = by_section.get(section)
        if value is not None and suite is not None and suite.config_type is not None:
            _check_section(suite, value, prefix, mode)


def _check_section(suite: Suite, value: Any, prefix: str, mode: Mode) -> None:
    """Names and types of the user's settings; then the section's own value checks
    (`gemm.dtypes fp64`, `timing` min <= max) on them over the suite's sizes for a CPU, which
    need no torch (a stand-in: the run sizes the whole config for its device, once)."""
    assert suite.config_type is not None
    check_settings(suite.config_type, value, prefix=prefix)
    cpu = Platform(backend="cpu", torch_version=None)
    base = suite.defaults(cpu, mode) if suite.defaults else {}
    from_dict(suite.config_type, merge_dotted(base, flatten_dotted(value)), prefix=prefix)


def device_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    """Every registered suite's config (as dicts) sized for this device and mode, shaped like a
    BenchConfig: the base under user overrides."""
    shaped: dict[str, Any] = {"suite_configs": {}}
    for suite in discovered().values():
        if suite.defaults is None:
            continue
        section = suite.config_section
        where = shaped if section in _TYPED_SECTIONS else shaped["suite_configs"]
        where[section] = suite.defaults(platform, mode)
    if not shaped["suite_configs"]:
        del shaped["suite_configs"]
    return shaped


def sized_for(config: BenchConfig, platform: Platform) -> BenchConfig:
    """Give every selected suite a typed config: the user's settings over the device defaults."""
    typed: dict[str, Any] = {}
    extra = dict(config.suite_configs)
    for name in config.suites:
        suite = get_suite(name)
        if suite.config_type is None:
            continue
        section, current = suite.config_section, suite_config(config, suite)
        typed_section = section in _TYPED_SECTIONS
        if not isinstance(current, suite.config_type):
            base = suite.defaults(platform, config.mode) if suite.defaults else {}
            settings = merge_dotted(base, flatten_dotted(current or {}))
            prefix = f"{section}." if typed_section else f"suite_configs.{section}."
            current = from_dict(suite.config_type, settings, prefix=prefix)
        if typed_section:
            typed[section] = current
        else:
            extra[section] = current
    return dataclasses.replace(config, **typed, suite_configs=extra)


def on_device(platform: Platform, device: Device) -> Platform:
    """The platform a run with `device` sees: `cpu` hides the GPU from the suites."""
    if device == "cpu":
        return dataclasses.replace(platform, gpu_available=False)
    if device == "gpu" and not platform.gpu_available:
        raise UserError("device gpu asked for, but torch sees no usable GPU here; use cpu or auto")
    return platform


def environment_record(platform: Platform) -> dict[str, Any]:
    """platform.record() plus the environment variables and thread count that change results."""
    import torch

    record = platform.record()
    record.setdefault(
        "env_vars", {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}
    )
    record["torch_num_threads"] = torch.get_num_threads()
    return record


def run_bench(
    config: BenchConfig,
    platform: Platform,
    *,
    power_reader: Callable[[], float | None] | None = None,
    on_suite: Callable[[str, int], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    on_figure: Callable[[], None] | None = None,
) -> RunResult:
    """Run the configured suites on `platform` and return one RunResult.

    `on_suite(name, num_figures)` is called as each suite starts and `on_figure()` as each of its
    figures (or training runs) is done: enough for a progress bar with an ETA per suite.

    Ctrl-C (KeyboardInterrupt) stops at once: the suites that finished are returned, and the
    result says `partial` and which suite was interrupted (outcome "interrupted"). A figure whose
    check failed (`extra["correct"]` False: every figure checks the output of its timed work, see
    bench.checks) or under its `--expect` floor (`extra["below_floor"]`) makes it "failed".
    """
    import torch

    _check_launch(config)
    platform = on_device(platform, config.device)
    config = sized_for(config, platform)
    reader, reader_name = (
        (power_reader, "injected")
        if power_reader
        else platform_power_reader(platform, enabled=config.power)
    )
    measurements: list[Measurement] = []
    load: dict[str, Any] = {}
    interrupted = None
    saved_threads = torch.get_num_threads()
    world_size = fleet.launched_world_size()
    # under torchrun every rank measures its own device (ensure_process_group picks it)
    created_group = False
    if world_size > 1:
        from rocmkit.bench.collectives import ensure_process_group

        created_group = ensure_process_group(platform)
    try:
        for name in config.suites:
            interrupted = name
            load[name] = prepare_cpu(
                config.threads, on_cpu=not platform.gpu_available, on_note=on_note
            )
            if on_suite is not None:
                on_suite(name, _num_figures(get_suite(name), config, platform))
            with listening(on_figure):
                measurements.extend(
                    with_telemetry(
                        name,
                        platform,
                        functools.partial(_run_suite, get_suite(name), config, platform, reader),
                        enabled=config.power,
                    )
                )
            interrupted = None
    except KeyboardInterrupt:
        if on_note is not None:
            on_note(f"interrupted during {interrupted}: keeping the suites that finished")
    finally:
        environment = environment_record(platform)
        torch.set_num_threads(saved_threads)
    if reader is None:
        measurements.append(_no_sensor(reader_name))
    measurements += apply_floors(measurements, config.expect, config.floors)
    identity = row_identity(platform)
    for m in measurements:
        for key, value in identity.items():
            m.extra.setdefault(key, value)
    fleet_record = None
    if world_size > 1 and interrupted is None:
        measurements, fleet_record = _gather_fleet(measurements, config)
    if created_group:
        import torch.distributed as dist

        dist.destroy_process_group()
    result = RunResult(
        kind="bench",
        environment=environment,
        config=to_dict(config),
        measurements=measurements,
        label=config.label,
    )
    result.environment["power_reader"] = reader_name if reader else None
    result.environment["load"] = load
    if fleet_record is not None:
        result.environment["fleet"] = fleet_record
    if interrupted is not None:
        result.partial = f"interrupted (Ctrl-C) during the {interrupted} suite"
        result.outcome = "interrupted"
    elif any(m.extra.get("correct") is False or m.extra.get("below_floor") for m in measurements):
        result.outcome = "failed"  # a wrong result or a figure under its floor, as in nccl-tests
    return result


def _gather_fleet(
    measurements: list[Measurement], config: BenchConfig
) -> tuple[list[Measurement], dict[str, Any] | None]:
    """Rank 0 gets every rank's rows (suites that do not span ranks) and flags the outliers."""
    import torch.distributed as dist

    per_rank_suites = [n for n in config.suites if not get_suite(n).needs_torchrun]
    rows = fleet.gather(measurements, [*per_rank_suites, "power", "floors"])
    if dist.get_rank() != 0:
        return rows, None
    num_outliers = fleet.flag_outliers(rows, config.outlier_threshold)
    hosts = sorted({str(m.params["host"]) for m in rows if "host" in m.params})
    record = {
        "world_size": dist.get_world_size(),
        "hosts": hosts,
        "outlier_threshold": config.outlier_threshold,
        "num_outliers": num_outliers,
    }
    return rows, record


def row_identity(platform: Platform) -> dict[str, Any]:
    """What every figure carries to say where it was measured: host, device index, PCI bus id
    (BDF) and UUID of the device, and the rank under torchrun."""
    identity: dict[str, Any] = {"host": os.environ.get("ROCMKIT_HOSTNAME") or socket.gethostname()}
    if platform.gpu_available:
        index = int(os.environ.get("LOCAL_RANK", "0"))
        device = next((d for d in platform.devices if d.index == index), None)
        identity["device_index"] = index
        identity["device_bdf"] = device.pci_bus_id if device else None
        identity["device_uuid"] = device.uuid if device else None
    else:
        identity["device_index"] = "cpu"
    if "RANK" in os.environ:
        identity["rank"] = int(os.environ["RANK"])
    return identity


def _num_figures(suite: Suite, config: BenchConfig, platform: Platform) -> int:
    settings = suite_config(config, suite)
    if suite.num_figures is None or (suite.config_type is not None and settings is None):
        return 0  # progress shows only the suite's start
    return suite.num_figures(settings, platform)


def _no_sensor(reader_name: str) -> Measurement:
    return Measurement(
        suite="power",
        name="sensor",
        metric="avg_power",
        value=None,
        unit="W",
        extra={"skipped": reader_name},
    )


def _check_launch(config: BenchConfig) -> None:
    """Fail before any suite runs when one needs torchrun and this process was not started by it."""
    import torch.distributed as dist

    from rocmkit.bench.collectives import TORCHRUN_HINT

    launched = "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ
    for name in config.suites:
        if get_suite(name).needs_torchrun and not launched and not dist.is_initialized():
            raise UserError(f"the {name} suite runs under torchrun: {TORCHRUN_HINT}")


def _run_suite(
    suite: Suite, config: BenchConfig, platform: Platform, reader: Callable[[], float | None] | None
) -> list[Measurement]:
    sampler = PowerSampler(reader).start() if reader else None
    start = sampler.now() if sampler else time.monotonic()
    try:
        rows = suite.run(suite_config(config, suite), platform, sampler)
    except suite.unavailable as exc:
        rows = [
            Measurement(
                suite=suite.name,
                name="(suite)",
                metric="throughput",
                value=None,
                unit="",
                extra={"skipped": str(exc)},
            )
        ]
    finally:
        if sampler is not None:
            sampler.stop()
    if sampler is None:
        return rows
    end = sampler.now()
    samples = sampler.samples()
    energy = sampler.energy_j(start, end)
    watts = average_watts(samples, start, end)
    common: dict[str, Any] = {
        "suite": "power",
        "name": suite.name,
        "params": {"suite": suite.name},
        "extra": {"num_samples": len(samples), "duration_s": end - start},
    }
    return [
        *rows,
        Measurement(metric="avg_power", value=watts, unit="W", **common),
        Measurement(metric="energy", value=energy, unit="J", **common),
    ]


# BenchConfig's typed sections name the built-in suites' config types (so result.json's `config`
# keeps its `gemm`, `bandwidth`... keys); their modules import this one to register themselves,
# so they load last, once Suite and register_suite exist.
from rocmkit.bench.attention import AttentionConfig  # noqa: E402
from rocmkit.bench.bandwidth import BandwidthConfig  # noqa: E402
from rocmkit.bench.collectives import CollectivesConfig  # noqa: E402
from rocmkit.bench.gemm import GemmConfig  # noqa: E402
from rocmkit.bench.train_precision import TrainPrecisionConfig  # noqa: E402
