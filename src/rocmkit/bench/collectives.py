"""Collective communication under torchrun: algbw and busbw with the nccl-tests conventions.

algbw = size / time, where size is the whole buffer of the operation (nccl-tests PERFORMANCE.md);
busbw = algbw x factor, the factor making the figure comparable to the link's peak:
all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast 1.
The output of every timed iteration is checked against the known answer (after its clock stops). Ranks time a fixed number of
iterations (a time budget would let ranks disagree on the count and hang), and the slowest rank's
time per iteration counts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocmkit.bench.sizing import Mode
from rocmkit.bench.suites import Suite, register_suite
from rocmkit.errors import UserError
from rocmkit.measure.ticks import tick
from rocmkit.measure.timing import summarize
from rocmkit.platform import Platform
from rocmkit.report import SuiteLayout
from rocmkit.results import Measurement

if TYPE_CHECKING:
    import torch

SUITE = "collectives"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
TORCHRUN_HINT = (
    "python -m torch.distributed.run --nproc-per-node 2 -m rocmkit bench --suite collectives"
)


@dataclass(kw_only=True)
class CollectivesConfig:
    sizes_bytes: list[int] = field(default_factory=lambda: [2**12, 2**16, 2**20])
    ops: list[str] = field(default_factory=lambda: list(OPS))
    warmup: int = 2
    num_iters: int = 10

    def __post_init__(self) -> None:
        unknown = sorted(set(self.ops) - set(OPS))
        if unknown:
            raise UserError(f"collective {unknown[0]!r} is unknown; choose from {', '.join(OPS)}")
        if self.num_iters < 1 or any(s < 4 for s in self.sizes_bytes):
            raise UserError("collectives need num_iters >= 1 and sizes of at least 4 bytes")


def bus_factor(op: str, world_size: int) -> float:
    """The nccl-tests factor turning algbw into busbw."""
    n = world_size
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    if op == "broadcast":
        return 1.0
    raise ValueError(f"unknown collective {op!r}")


def algbw_gbps(size_bytes: int, seconds: float) -> float:
    return size_bytes / seconds / 1e9


def busbw_gbps(op: str, size_bytes: int, seconds: float, world_size: int) -> float:
    return algbw_gbps(size_bytes, seconds) * bus_factor(op, world_size)


def ensure_process_group(platform: Platform) -> bool:
    """Join the torchrun job (nccl/RCCL on GPU, gloo on CPU); True when this call created it."""
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return False
    if "WORLD_SIZE" not in os.environ or "MASTER_ADDR" not in os.environ:
        raise UserError(f"the collectives suite runs under torchrun: {TORCHRUN_HINT}")
    if platform.gpu_available:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if platform.gpu_available else "gloo")
    return True


def _buffers(
    op: str, numel: int, rank: int, n: int, device: torch.device | str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Input and output tensors with rank-dependent values whose correct result is known."""
    import torch

    per_rank = numel // n
    if op == "all_reduce" or op == "broadcast":
        x = torch.full((numel,), float(rank + 1), device=device)
        return x, x
    if op == "all_gather":
        return torch.full((per_rank,), float(rank + 1), device=device), torch.empty(
            per_rank * n, device=device
        )
    if op == "reduce_scatter":
        return torch.full((per_rank * n,), float(rank + 1), device=device), torch.empty(
            per_rank, device=device
        )
    source = (
        torch.arange(n, device=device, dtype=torch.float32).repeat_interleave(per_rank) + rank * n
    )
    return source, torch.empty(per_rank * n, device=device)


def _runner(op: str, inp: torch.Tensor, out: torch.Tensor) -> Callable[[], object]:
    import torch.distributed as dist

    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    return {
        "all_reduce": lambda: dist.all_reduce(inp),
        "all_gather": lambda: gather(out, inp),
        "reduce_scatter": lambda: scatter(out, inp),
        "broadcast": lambda: dist.broadcast(inp, src=0),
        "all_to_all": lambda: dist.all_to_all_single(out, inp),
    }[op]


def expected_result(op: str, numel: int, rank: int, n: int) -> list[float]:
    """What the output buffer must hold after one run of `op` on the `_buffers` inputs."""
    per_rank = numel // n
    total = n * (n + 1) / 2
    if op == "all_reduce":
        return [total] * numel
    if op == "broadcast":
        return [1.0] * numel
    if op == "all_gather":
        return [float(i + 1) for i in range(n) for _ in range(per_rank)]
    if op == "reduce_scatter":
        return [total] * per_rank
    return [float(source * n + rank) for source in range(n) for _ in range(per_rank)]


def check_op(op: str, numel: int, rank: int, n: int, device: torch.device | str) -> bool:
    """Run `op` once on known inputs and compare with the expected output."""
    import torch

    inp, out = _buffers(op, numel, rank, n, device)
    _runner(op, inp, out)()
    got = (inp if op in ("all_reduce", "broadcast") else out).cpu()
    return bool(torch.equal(got, torch.tensor(expected_result(op, numel, rank, n))))


def _time_op(
    op: str, numel: int, rank: int, n: int, config: CollectivesConfig, device: torch.device
) -> tuple[list[float], int]:
    """Per-iteration seconds of the slowest rank (elementwise max over ranks), and how many output
    elements were wrong over every timed iteration of this rank. Each iteration is checked after
    its clock stops; in-place ops get their input back before the next one."""
    import torch
    import torch.distributed as dist

    inp, out = _buffers(op, numel, rank, n, device)
    pristine = inp.clone()
    expected = torch.tensor(expected_result(op, numel, rank, n), device=device)
    result = inp if op in ("all_reduce", "broadcast") else out
    run = _runner(op, inp, out)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(config.warmup):
        run()
        inp.copy_(pristine)
    samples = []
    num_wrong = torch.zeros((), dtype=torch.int64, device=device)
    for _ in range(config.num_iters):
        dist.barrier()
        sync()
        start = time.perf_counter()
        run()
        sync()
        samples.append(time.perf_counter() - start)
        num_wrong += (result != expected).sum()  # stays on the device: no host wait per iteration
        inp.copy_(pristine)
    times = torch.tensor(samples, dtype=torch.float64, device=device)
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    return [float(t) for t in times.cpu()], int(num_wrong)


def run_collectives(config: CollectivesConfig, platform: Platform) -> list[Measurement]:
    """algbw/busbw of every op x size on every rank; the caller lets rank 0 write them."""
    import torch
    import torch.distributed as dist

    created = ensure_process_group(platform)
    try:
        rank, n = dist.get_rank(), dist.get_world_size()
        device = torch.device(
            f"cuda:{torch.cuda.current_device()}" if platform.gpu_available else "cpu"
        )
        backend = str(dist.get_backend())
        results: list[Measurement] = []
        for op in config.ops:
            for size in config.sizes_bytes:
                numel = max(1, size // 4 // n) * n
                results.extend(_measure_op(op, numel, rank, n, config, device, backend))
        return results
    finally:
        if created:
            dist.destroy_process_group()


def _measure_op(
    op: str,
    numel: int,
    rank: int,
    n: int,
    config: CollectivesConfig,
    device: torch.device,
    backend: str,
) -> list[Measurement]:
    import torch
    import torch.distributed as dist

    samples, num_wrong = _time_op(op, numel, rank, n, config, device)
    stats = summarize(samples)
    wrong = torch.tensor([num_wrong], dtype=torch.int64, device=device)
    dist.all_reduce(wrong, op=dist.ReduceOp.SUM)
    tick()
    size_bytes = numel * 4
    params = {
        "op": op,
        "size_bytes": size_bytes,
        "world_size": n,
        "backend": backend,
        "dtype": "fp32",
    }
    extra = {
        "correct": int(wrong.item()) == 0,
        "num_wrong": int(wrong.item()),  # elements, summed over ranks and timed iterations
        "check": f"every timed iteration ({config.num_iters}) on every rank",
        "bus_factor": bus_factor(op, n),
    }
    name = f"{op} {size_bytes} B"
    common: dict[str, Any] = {"suite": SUITE, "name": name, "params": params, "extra": extra}
    return [
        Measurement(
            metric="time_us", value=stats.median * 1e6, unit="us", stats=stats.to_dict(), **common
        ),
        Measurement(
            metric="algbw", value=algbw_gbps(size_bytes, stats.median), unit="GB/s", **common
        ),
        Measurement(
            metric="busbw", value=busbw_gbps(op, size_bytes, stats.median, n), unit="GB/s", **common
        ),
    ]


def collectives_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    top = 28 if platform.gpu_available else 20
    return {"sizes_bytes": [2**p for p in range(10, top + 1, 2 if mode == "quick" else 1)]}


def collectives_figures(config: CollectivesConfig, platform: Platform) -> int:
    return len(config.ops) * len(config.sizes_bytes)


BENCH_SUITE = register_suite(
    Suite(
        name=SUITE,
        description="all_reduce & co. algbw/busbw (under torchrun)",
        run=lambda config, platform, sampler: run_collectives(config, platform),
        config_type=CollectivesConfig,
        defaults=collectives_defaults,
        num_figures=collectives_figures,
        needs_torchrun=True,
        layout=SuiteLayout(
            title="Collectives (nccl-tests algbw/busbw)",
            first_metrics=("time_us", "algbw", "busbw"),
            plot="rocmkit.report.plots:busbw_plot",
        ),
    )
)
