"""Board power sampled in a background thread, turned into energy per step/token and tokens/joule.

A reader is any `() -> float | None` returning watts. Readers come from the amdsmi / pynvml Python
modules when importable, else from `amd-smi`, `rocm-smi` or `nvidia-smi` run with a timeout. A reader
that errors yields no sample; one that hangs stalls only the sampler's own daemon thread. No samples
means energy None ("n/a"), never zero. `energy_window` measures one timed block (bench suites,
inference shapes); `platform_power_reader` picks the reader for a detected Platform.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocmkit.platform import Platform

PowerReader = Callable[[], "float | None"]
COMMAND_TIMEOUT_S = 2.0


class PowerSampler:
    """Samples `reader` every `interval_s` seconds between start() and stop()."""

    def __init__(
        self,
        reader: PowerReader,
        *,
        interval_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reader = reader
        self._interval_s = interval_s
        self._clock = clock
        self._samples: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.num_errors = 0

    def start(self) -> PowerSampler:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="rocmkit-power", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 1.0) -> None:
        """Ask the thread to end and wait briefly; a thread stuck in a hung reader is left behind."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def __enter__(self) -> PowerSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                watts = self._reader()
            except Exception:
                self.num_errors += 1
                watts = None
            if watts is not None and watts >= 0 and not self._stop.is_set():
                with self._lock:
                    self._samples.append((self._clock(), float(watts)))
            self._stop.wait(self._interval_s)

    def samples(self) -> list[tuple[float, float]]:
        with self._lock:
            return list(self._samples)

    def now(self) -> float:
        return self._clock()

    def energy_j(self, start: float, end: float) -> float | None:
        """Joules between two clock readings of this sampler (None with fewer than 2 samples)."""
        return energy_joules(self.samples(), start, end)

    def why_no_energy(self, window: EnergyWindow) -> str:
        """A person's reason for a window without energy, for the n/a note of a report."""
        if self.num_errors and not self.samples():
            return f"the power reader failed ({self.num_errors} errors)"
        if not self.samples():
            return "the power reader gave no reading (missing sensor, or it hangs)"
        return (
            f"fewer than 2 power samples in the {window.duration_s:.3g} s window "
            f"(one every {self._interval_s:g} s): time more iterations"
        )


@dataclass(kw_only=True, slots=True)
class EnergyWindow:
    """Energy drawn over one timed block; energy_j None without a sensor or 2 samples in it."""

    start: float
    end: float = 0.0
    energy_j: float | None = None

    @property
    def duration_s(self) -> float:
        return self.end - self.start

    @property
    def avg_watts(self) -> float | None:
        if self.energy_j is None or self.duration_s <= 0:
            return None
        return self.energy_j / self.duration_s


@contextlib.contextmanager
def energy_window(sampler: PowerSampler | None) -> Iterator[EnergyWindow]:
    """Time the block on the sampler's clock and fill in its energy on exit (None without one)."""
    clock = sampler.now if sampler is not None else time.monotonic
    window = EnergyWindow(start=clock())
    try:
        yield window
    finally:
        window.end = clock()
        if sampler is not None:
            window.energy_j = sampler.energy_j(window.start, window.end)


def energy_joules(samples: Sequence[tuple[float, float]], start: float, end: float) -> float | None:
    """Trapezoid integral of (time, watts) samples over [start, end]; None without 2 samples in it."""
    inside = [(t, w) for t, w in samples if start <= t <= end]
    if len(inside) < 2 or end <= start:
        return None
    joules = sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in itertools.pairwise(inside))
    # Extend with the mean power over the uncovered edges of the window.
    covered = inside[-1][0] - inside[0][0]
    if covered <= 0:
        return None
    return joules * (end - start) / covered


def average_watts(samples: Sequence[tuple[float, float]], start: float, end: float) -> float | None:
    energy = energy_joules(samples, start, end)
    return None if energy is None else energy / (end - start)


def per_unit(energy_j: float | None, num_units: float) -> float | None:
    """Joules per step/token; None when energy is unknown."""
    if energy_j is None or num_units <= 0:
        return None
    return energy_j / num_units


def units_per_joule(energy_j: float | None, num_units: float) -> float | None:
    if energy_j is None or energy_j <= 0:
        return None
    return num_units / energy_j


def _to_watts(value: object) -> float | None:
    """A number, '91.0', {'value': 10, 'unit': 'W'} -> watts; 'N/A' and the like -> None."""
    if isinstance(value, dict):
        unit = str(value.get("unit", "W")).strip()
        watts = _to_watts(value.get("value"))
        if watts is None:
            return None
        return watts / 1e3 if unit == "mW" else watts / 1e6 if unit == "uW" else watts
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value).strip().removesuffix("W").strip())
    except ValueError:
        return None


def parse_nvidia_smi_power(text: str, index: int = 0) -> float | None:
    """`nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits`: one line per GPU."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return _to_watts(lines[index]) if index < len(lines) else None


def parse_rocm_smi_power(text: str, index: int = 0) -> float | None:
    """`rocm-smi --showpower --json`: {"card0": {"... Graphics Package Power (W)": "91.0"}}."""
    try:
        card = json.loads(text).get(f"card{index}", {})
    except (json.JSONDecodeError, AttributeError):
        return None
    for key, value in card.items():
        if "Power (W)" in key and "Max" not in key:
            return _to_watts(value)
    return None


def parse_amd_smi_power(text: str, index: int = 0) -> float | None:
    """`amd-smi metric -p --json`: [{"gpu": 0, "power": {"socket_power": {"value": 10, "unit": "W"}}}]."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    entries = (
        data
        if isinstance(data, list)
        else data.get("gpu_data", [])
        if isinstance(data, dict)
        else []
    )
    for entry in entries:
        if isinstance(entry, dict) and entry.get("gpu") == index:
            power = entry.get("power", {})
            if isinstance(power, dict):
                return _to_watts(power.get("socket_power"))
    return None


def command_reader(
    argv: Sequence[str],
    parse: Callable[[str], float | None],
    runner: Callable[..., Any] = subprocess.run,
) -> PowerReader:
    """A reader running `argv` with a timeout and parsing its stdout; failures read as None."""

    def read() -> float | None:
        try:
            done = runner(
                list(argv), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return parse(done.stdout) if done.returncode == 0 else None

    return read


def _pynvml_reader(index: int) -> PowerReader | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # no module, no driver, no device: fall back to the command line
        return None
    return lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1e3  # milliwatts


def _amdsmi_reader(index: int) -> PowerReader | None:
    try:
        import amdsmi

        amdsmi.amdsmi_init()
        handle = amdsmi.amdsmi_get_processor_handles()[index]
    except Exception:
        return None

    def read() -> float | None:
        info = amdsmi.amdsmi_get_power_info(handle)
        for key in ("current_socket_power", "average_socket_power", "socket_power"):
            watts = _to_watts(info.get(key))
            if watts is not None:
                return watts
        return None

    return read


def detect_power_reader(
    vendor: str, index: int = 0, which: Callable[[str], str | None] = shutil.which
) -> tuple[PowerReader | None, str]:
    """The best power reader for a GPU vendor ("amd" / "nvidia"), and its name; (None, why) if none."""
    if vendor == "nvidia":
        reader = _pynvml_reader(index)
        if reader is not None:
            return reader, "pynvml"
        if which("nvidia-smi"):
            argv = ["nvidia-smi", "--query-gpu=power.draw", "--format=csv,noheader,nounits"]
            return command_reader(argv, lambda t: parse_nvidia_smi_power(t, index)), "nvidia-smi"
        return None, "no pynvml module and no nvidia-smi on PATH"
    if vendor == "amd":
        reader = _amdsmi_reader(index)
        if reader is not None:
            return reader, "amdsmi"
        if which("amd-smi"):
            return command_reader(
                ["amd-smi", "metric", "-p", "--json"], lambda t: parse_amd_smi_power(t, index)
            ), "amd-smi"
        if which("rocm-smi"):
            return command_reader(
                ["rocm-smi", "--showpower", "--json"], lambda t: parse_rocm_smi_power(t, index)
            ), "rocm-smi"
        return None, "no amdsmi module and no amd-smi/rocm-smi on PATH"
    return None, "no GPU power sensor on a CPU-only run"


def platform_power_reader(
    platform: Platform, *, enabled: bool = True
) -> tuple[PowerReader | None, str]:
    """The reader for the first GPU of `platform` and its name; (None, why) when there is none."""
    if not enabled:
        return None, "power sampling turned off"
    if not platform.gpu_available or not platform.devices:
        return None, "no GPU power sensor on a CPU-only run"
    return detect_power_reader(platform.devices[0].vendor)
