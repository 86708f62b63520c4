"""Host links: pinned host-to-device and device-to-host bandwidth per GPU against what its PCIe
link should carry, and a GPU-to-GPU bandwidth and latency matrix (torch copies between devices).

Expected speed of a host link = `fraction` (default 0.6) x the theoretical rate of the PCIe link
the GPU and the port above it can both train to (sysfs `max_link_speed` / `max_link_width` of the
GPU and of its upstream bridge). The maximum, not the current, link is used on purpose: an idle
GPU drops its link to a low gen to save power, and a link that trained narrower or slower than
both ends allow is exactly what this check is for. Measured pinned copies reach 80-90% of the
theoretical rate on a healthy link (transaction headers take the rest), so 0.6 leaves room for
that and for a loaded host, and still catches a link at half its width or one gen down. A GPU pair
is flagged when its bandwidth is under half the median of all pairs (fabrics such as NVLink and
xGMI are uniform; a pair going through the host instead shows). On a CPU-only run: "no GPU:
skipped".
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.bench.suites import Suite, register_suite
from rocmkit.errors import UserError
from rocmkit.platform import Platform
from rocmkit.report import SuiteLayout
from rocmkit.results import Measurement

if TYPE_CHECKING:
    import torch

    from rocmkit.bench.sizing import Mode
    from rocmkit.measure.power import PowerSampler

SUITE = "links"
# Data bits per transferred bit of each PCIe rate (GT/s per lane): 8b/10b up to 5 GT/s (gen 1-2),
# 128b/130b for 8-32 GT/s (gen 3-5) (PCI Express Base Specification 3.0-5.0); gen 6 (64 GT/s, PAM4)
# sends 256-byte FLITs carrying 236 bytes of TLP data (PCIe 6.0 spec, FLIT mode).
ENCODING = {
    2.5: 8 / 10,
    5.0: 8 / 10,
    8.0: 128 / 130,
    16.0: 128 / 130,
    32.0: 128 / 130,
    64.0: 236 / 256,
}
PAIR_FLOOR = 0.5  # a GPU pair under half the median pair bandwidth is flagged


@dataclass(kw_only=True)
class LinksConfig:
    size_mib: int = 256
    repeats: int = 5
    latency_repeats: int = 50
    fraction: float = 0.6  # of the theoretical PCIe rate a pinned copy must reach

    def __post_init__(self) -> None:
        if self.size_mib < 1 or self.repeats < 3 or self.latency_repeats < 3:
            raise UserError("links: size_mib >= 1, repeats >= 3 and latency_repeats >= 3")
        if not 0 < self.fraction <= 1:
            raise UserError(f"links fraction must be in (0, 1] (got {self.fraction})")


@dataclass(frozen=True, kw_only=True)
class PcieLink:
    """A PCIe link as sysfs describes it (GT/s per lane, lanes); None where unreadable."""

    current_gts: float | None = None
    current_width: int | None = None
    max_gts: float | None = None
    max_width: int | None = None
    upstream_max_gts: float | None = None
    upstream_max_width: int | None = None

    @property
    def capable_gts(self) -> float | None:
        """The fastest rate both ends support."""
        rates = [r for r in (self.max_gts, self.upstream_max_gts) if r]
        return min(rates) if rates else None

    @property
    def capable_width(self) -> int | None:
        widths = [w for w in (self.max_width, self.upstream_max_width) if w]
        return min(widths) if widths else None

    def record(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {
            **asdict(self),
            "capable_gts": self.capable_gts,
            "capable_width": self.capable_width,
        }


def parse_link_speed(text: str) -> float | None:
    """sysfs `*_link_speed`: "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" -> GT/s; "Unknown" -> None."""
    match = re.match(r"\s*(\d+(?:\.\d+)?)\s*GT/s", text)
    return float(match.group(1)) if match else None


def parse_link_width(text: str) -> int | None:
    text = text.strip().lstrip("x")
    return int(text) if text.isdigit() and int(text) > 0 else None


def theoretical_gbps(gts: float, width: int) -> float:
    """One direction's data rate in GB/s: GT/s x lanes x encoding / 8 bits."""
    encoding = ENCODING.get(gts)
    if encoding is None:
        raise ValueError(f"unknown PCIe rate {gts} GT/s")
    return gts * width * encoding / 8


def expected_gbps(link: PcieLink, fraction: float) -> float | None:
    """What a pinned copy over `link` should reach; None when its capability is unknown."""
    gts, width = link.capable_gts, link.capable_width
    if gts is None or width is None or gts not in ENCODING:
        return None
    return fraction * theoretical_gbps(gts, width)


def read_link(bdf: str, root: str | Path = "/sys") -> PcieLink | None:
    """The PCIe link of the device at `bdf` ("0000:41:00.0") and of the bridge above it."""
    device = Path(root) / "bus" / "pci" / "devices" / bdf.lower()
    if not (device / "max_link_speed").exists():
        return None
    device = device.resolve()
    upstream = device.parent

    def read(path: Path, name: str) -> str:
        try:
            return (path / name).read_text()
        except OSError:
            return ""

    return PcieLink(
        current_gts=parse_link_speed(read(device, "current_link_speed")),
        current_width=parse_link_width(read(device, "current_link_width")),
        max_gts=parse_link_speed(read(device, "max_link_speed")),
        max_width=parse_link_width(read(device, "max_link_width")),
        upstream_max_gts=parse_link_speed(read(upstream, "max_link_speed")),
        upstream_max_width=parse_link_width(read(upstream, "max_link_width")),
    )


def pair_matrix(
    values: Mapping[tuple[int, int], float | None], num_devices: int
) -> list[list[float | None]]:
    """values[(src, dst)] as a square matrix, None on the diagonal and where unmeasured."""
    return [
        [None if i == j else values.get((i, j)) for j in range(num_devices)]
        for i in range(num_devices)
    ]


def slow_pairs(
    values: Mapping[tuple[int, int], float | None], floor: float = PAIR_FLOOR
) -> dict[tuple[int, int], float]:
    """Pairs under `floor` x the median pair bandwidth -> that threshold."""
    measured = [v for v in values.values() if v is not None]
    if len(measured) < 2:
        return {}
    threshold = floor * statistics.median(measured)
    return {pair: threshold for pair, v in values.items() if v is not None and v < threshold}


# ---------------------------------------------------------------------------- measuring


def _timed(copy: Callable[[], Any], device: torch.device, repeats: int) -> float:
    """Median seconds of `copy` (synchronized), after one warm-up."""
    import torch

    copy()
    torch.cuda.synchronize(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        copy()
        torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def host_copies(config: LinksConfig, index: int) -> dict[str, tuple[float, bool]]:
    """GB/s of pinned H2D and D2H on GPU `index`, and whether the copied pattern arrived intact."""
    import torch

    from rocmkit.bench.checks import check_equal

    device = torch.device("cuda", index)
    numel = config.size_mib * 2**20 // 4
    host = torch.arange(numel, dtype=torch.int32).pin_memory()
    back = torch.empty_like(host).pin_memory()
    on_device = torch.empty(numel, dtype=torch.int32, device=device)
    nbytes = numel * 4
    h2d = _timed(lambda: on_device.copy_(host, non_blocking=True), device, config.repeats)
    d2h = _timed(lambda: back.copy_(on_device, non_blocking=True), device, config.repeats)
    intact = check_equal(back, host, "pinned round trip").correct
    return {"h2d": (nbytes / h2d / 1e9, intact), "d2h": (nbytes / d2h / 1e9, intact)}


def peer_copies(
    config: LinksConfig, num_devices: int
) -> dict[tuple[int, int], tuple[float, float, bool]]:
    """(GB/s, latency us, data intact) of a copy from GPU i to GPU j for every ordered pair."""
    import torch

    numel = config.size_mib * 2**20 // 4
    sources = [
        torch.full((numel,), i + 1, dtype=torch.int32, device=f"cuda:{i}")
        for i in range(num_devices)
    ]
    return {
        (i, j): _peer_copy(config, sources[i], j)
        for i in range(num_devices)
        for j in range(num_devices)
        if i != j
    }


def _peer_copy(config: LinksConfig, src: torch.Tensor, dst_index: int) -> tuple[float, float, bool]:
    import torch

    from rocmkit.bench.checks import check_equal

    device = torch.device("cuda", dst_index)
    dst = torch.empty_like(src, device=device)
    seconds = _timed(lambda: dst.copy_(src), device, config.repeats)
    latency = _timed(lambda: dst[:1].copy_(src[:1]), device, config.latency_repeats)
    intact = check_equal(dst, src.to(device), "peer copy, bit for bit").correct
    return src.numel() * 4 / seconds / 1e9, latency * 1e6, intact


def host_rows(
    index: int, figures: Mapping[str, tuple[float, bool]], link: PcieLink | None, fraction: float
) -> list[Measurement]:
    """A row per direction; BELOW FLOOR under the expected speed, WRONG if the data changed."""
    expected = expected_gbps(link, fraction) if link else None
    rows = []
    for direction, (gbps, intact) in figures.items():
        extra: dict[str, Any] = {"correct": intact, "check": "pinned round trip, bit for bit"}
        extra["num_wrong"] = 0 if intact else 1
        if expected is not None and link is not None:
            extra |= {"floor": expected, "below_floor": gbps < expected, "link": link.record()}
        else:
            extra["note"] = "PCIe link unknown (no sysfs link files): speed not judged"
        rows.append(
            Measurement(
                suite=SUITE,
                name=f"gpu{index} {direction} (pinned)",
                metric="gbps",
                value=gbps,
                unit="GB/s",
                params={"gpu": index, "direction": direction},
                extra=extra,
            )
        )
    return rows


def peer_rows(
    found: Mapping[tuple[int, int], tuple[float, float, bool]], num_devices: int
) -> list[Measurement]:
    """A row per ordered pair (GB/s with its floor and check, latency); the matrices on the
    first row."""
    bandwidth = {pair: gbps for pair, (gbps, _, _) in found.items()}
    slow = slow_pairs(bandwidth)
    rows = []
    for (i, j), (gbps, latency, intact) in sorted(found.items()):
        params = {"src": i, "dst": j}
        extra: dict[str, Any] = {"floor": slow.get((i, j)), "below_floor": (i, j) in slow}
        extra |= {"correct": intact, "num_wrong": 0 if intact else 1, "check": "bit for bit"}
        rows += [
            Measurement(
                suite=SUITE,
                name=f"gpu{i} -> gpu{j}",
                metric="gbps",
                value=gbps,
                unit="GB/s",
                params=params,
                extra=extra,
            ),
            Measurement(
                suite=SUITE,
                name=f"gpu{i} -> gpu{j}",
                metric="latency_us",
                value=latency,
                unit="us",
                params=params,
            ),
        ]
    if rows:
        rows[0].extra["bandwidth_matrix_gbps"] = pair_matrix(bandwidth, num_devices)
        latencies = {pair: lat for pair, (_, lat, _) in found.items()}
        rows[0].extra["latency_matrix_us"] = pair_matrix(latencies, num_devices)
    return rows


def run_links(
    config: LinksConfig, platform: Platform, sampler: PowerSampler | None = None
) -> list[Measurement]:
    """Host links of every GPU, then the GPU-to-GPU matrix (two GPUs or more)."""
    if not platform.gpu_available:
        return [
            Measurement(
                suite=SUITE,
                name="host links",
                metric="gbps",
                value=None,
                unit="GB/s",
                extra={"skipped": "no GPU: skipped"},
            )
        ]
    import torch

    num_devices = torch.cuda.device_count()
    rows = []
    for index in range(num_devices):
        info = next((d for d in platform.devices if d.index == index), None)
        link = read_link(info.pci_bus_id) if info and info.pci_bus_id else None
        rows += host_rows(index, host_copies(config, index), link, config.fraction)
    if num_devices > 1:
        rows += peer_rows(peer_copies(config, num_devices), num_devices)
    return rows


def links_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    return {"size_mib": 256 if mode == "quick" else 1024}


BENCH_SUITE = register_suite(
    Suite(
        name=SUITE,
        description="pinned H2D/D2H per GPU vs its PCIe link; GPU-to-GPU bandwidth/latency matrix",
        run=run_links,
        config_type=LinksConfig,
        defaults=links_defaults,
        num_figures=lambda config, platform: 0,
        layout=SuiteLayout(title="Host and GPU-to-GPU links"),
        full=True,
    )
)
