"""Benchmark results as files: every figure a doc quotes comes from one of these (issue 27).

A benchmark script builds a `ResultRun` when it starts (the load average is read then), adds each
figure with every run's value, and writes `benchmarks/results/<script>.json` at the end (the load
average is read again). The file holds the commit, the command, the machine (CPU and GPU model,
cores, threads), the versions of the libraries that matter, each figure's runs, median and spread,
and the figure it was measured against in the same run. `scripts/check_figures.py` resolves the
citations of README.md and docs/*.md against these files.

Rules the scripts follow (docs/architecture.md, "Figures and result files"): at least 3 runs per
figure, the compared sides alternated in one process; process CPU time where the machine is shared;
a run whose 1-minute load average exceeded the number of cores before or after is flagged
`"under_load": true` (the figure is kept, the reader is told).

    run = ResultRun.start("port_speed", args)   # after parse_args; args may hold --result
    run.add("port_files_per_cpu_s", rates, unit="files/CPU-s", clock="process")
    run.add("port_vs_parse", ratios, unit="x", baseline="ast.parse of every file")
    run.finish()
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
SCHEMA_VERSION = 1
MIN_RUNS = 3
# Libraries whose version can move a figure; the ones installed are recorded.
PACKAGES = (
    "torch",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "transformers",
    "numpy",
    "httpx",
    "aiohttp",
    "uvloop",
    "tensorboard",
)
CLOCKS = ("process", "wall", "device")

if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))


def add_result_args(parser: argparse.ArgumentParser, name: str) -> None:
    """--result PATH (default benchmarks/results/<name>.json) and --no-result for ad-hoc runs."""
    parser.add_argument(
        "--result",
        type=Path,
        default=RESULTS / f"{name}.json",
        help=f"result file (default: benchmarks/results/{name}.json, {name}-<gpu>.json on a GPU)",
    )
    parser.add_argument(
        "--no-result", action="store_true", help="write no result file (an ad-hoc run)"
    )


def default_path(name: str) -> Path:
    """benchmarks/results/<name>.json on a CPU; <name>-<gpu>.json where the script's torch sees a
    GPU, so that a GPU run does not overwrite the CPU figures the docs cite."""
    gpu = _gpu_model()
    if gpu is None:
        return RESULTS / f"{name}.json"
    slug = "-".join("".join(c if c.isalnum() else " " for c in gpu.lower()).split())
    return RESULTS / f"{name}-{slug}.json"


def spread(runs: list[float]) -> dict[str, float]:
    """Median, min, max and (max - min) / median in percent of a figure's runs."""
    median = statistics.median(runs)
    low, high = min(runs), max(runs)
    spread_pct = 100.0 * (high - low) / abs(median) if median else 0.0
    return {"median": median, "min": low, "max": high, "spread_pct": spread_pct}


def load_average() -> list[float]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:  # not on this platform
        return []


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), for every benchmark's machine record."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_model() -> str | None:
    """The GPU torch sees, only if the script already imported torch (no import for a client)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if torch.cuda.is_available():
            return str(torch.cuda.get_device_name(0))
    except Exception:  # a broken driver must not lose the result
        return None
    return None


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def commit() -> dict[str, Any]:
    """The commit measured, and whether the measured code (src/, benchmarks/ but their results)
    differed from it: a doc being edited meanwhile does not make a figure dirty."""
    status = _git(
        "status", "--porcelain", "--untracked-files=no", "--", "src", "benchmarks",
        ":!benchmarks/results",
    )  # fmt: skip
    return {"sha": _git("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None}


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    try:
        import rocmkit

        found["rocmkit"] = rocmkit.__version__
    except ImportError:
        pass
    return found


def threads() -> dict[str, Any]:
    record: dict[str, Any] = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}
    torch = sys.modules.get("torch")
    if torch is not None:
        record["torch_threads"] = torch.get_num_threads()
    return record


def environment() -> dict[str, Any]:
    """What a reader needs to know to re-run a figure: where, on what, with which versions."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return {
        "commit": commit(),
        "command": [Path(sys.executable).name, *sys.argv],
        "machine": {
            "hostname": platform.node(),
            "platform": platform.platform(),
            "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(),
            "cores_available": cores,
            "gpu_model": _gpu_model(),
        },
        "threads": threads(),
        "versions": versions(),
    }


@dataclass
class ResultRun:
    """One benchmark run: its environment, the load around it, and its figures."""

    name: str
    path: Path | None
    parameters: dict[str, Any]
    started: str
    load_before: list[float]
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # the commit measured, read when the run starts (a commit made meanwhile must not be credited)
    started_at: dict[str, Any] = field(default_factory=commit)

    @classmethod
    def start(cls, name: str, args: argparse.Namespace | None = None) -> ResultRun:
        """Read the load average now; `args` gives the parameters, --result and --no-result."""
        params = {k: _plain(v) for k, v in vars(args).items()} if args is not None else {}
        path = None if params.pop("no_result", False) else params.pop("result", None)
        params.pop("result", None)
        if path is not None and Path(path) == RESULTS / f"{name}.json":
            path = default_path(name)
        return cls(
            name=name,
            path=Path(path) if path is not None else None,
            parameters=params,
            started=_now(),
            load_before=load_average(),
        )

    def add(
        self,
        key: str,
        runs: list[float],
        *,
        unit: str,
        clock: str = "process",
        baseline: str | None = None,
        higher_is_better: bool = True,
        note: str | None = None,
    ) -> dict[str, Any]:
        """Record one figure: every run's value (>= 3, alternated with its baseline)."""
        if len(runs) < MIN_RUNS:
            raise ValueError(f"{key}: {len(runs)} runs; a figure needs at least {MIN_RUNS}")
        if clock not in CLOCKS:
            raise ValueError(f"{key}: clock {clock!r} is not one of {CLOCKS}")
        figure: dict[str, Any] = {
            "unit": unit,
            "clock": clock,
            "runs": [float(v) for v in runs],
            **spread([float(v) for v in runs]),
            "higher_is_better": higher_is_better,
        }
        if baseline is not None:
            figure["baseline"] = baseline
        if note is not None:
            figure["note"] = note
        self.figures[key] = figure
        return figure

    def count(self, key: str, value: float, *, unit: str, note: str | None = None) -> None:
        """Record a deterministic figure (files that compile, tokens left): one run is exact."""
        figure: dict[str, Any] = {"unit": unit, "clock": None, "runs": [value], "median": value,
                                  "min": value, "max": value, "spread_pct": 0.0,
                                  "deterministic": True}  # fmt: skip
        if note is not None:
            figure["note"] = note
        self.figures[key] = figure

    def record(self, load_after: list[float] | None = None) -> dict[str, Any]:
        """The JSON document of this run (load read again now unless given)."""
        after = load_average() if load_after is None else load_after
        env = {**environment(), "commit": self.started_at}
        # the load average is the whole machine's: compare it with all its cores, not with the
        # cores this process pinned itself to
        cores = env["machine"]["cpu_count"] or env["machine"]["cores_available"]
        peak = max([*self.load_before[:1], *after[:1]], default=0.0)
        under_load = peak > cores
        figures = {k: {**v, "under_load": under_load} for k, v in self.figures.items()}
        return {
            "schema_version": SCHEMA_VERSION,
            "benchmark": self.name,
            "started": self.started,
            "finished": _now(),
            "environment": env,
            "load": {
                "before": self.load_before,
                "after": after,
                "cores": cores,
                "under_load": under_load,
            },
            "under_load": under_load,
            "parameters": self.parameters,
            "figures": figures,
            "notes": self.notes,
        }

    def finish(self, details: Any = None) -> dict[str, Any]:
        """Write the result file (atomically) unless --no-result; print where it went. `details`
        (per-unit verdicts, misses...) is kept under "details", beside the figures."""
        from rocmkit.atomic import atomic_write_json

        document = self.record()
        if details is not None:
            document["details"] = details
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.path, document)
            flag = (
                " (under load: load average above the core count)" if document["under_load"] else ""
            )
            print(f"result: {_shown(self.path)}{flag}")
        return document


def ratios(numerators: list[float], denominators: list[float]) -> list[float]:
    """Per-round ratios of two alternated series (round i of one against round i of the other)."""
    if len(numerators) != len(denominators):
        raise ValueError("alternated series must have one value per round each")
    return [a / b for a, b in zip(numerators, denominators, strict=True)]


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
