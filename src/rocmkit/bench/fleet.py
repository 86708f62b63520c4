"""The fleet view under torchrun: every rank measures its own device (its own process on a CPU),
rank 0 gathers one result with a row per rank and node, and flags the ranks far from the median.

Gathering is `torch.distributed.gather_object` on the job's process group (gloo on CPU, NCCL/RCCL
on GPU). A figure is an outlier when it is worse than the fleet's median of the same figure by
more than `threshold` (default 20%): a rate (TFLOPS, GB/s, %) under (1 - threshold) x median, a time
over (1 + threshold) x median. With fewer than 3 ranks there is no median to trust; nothing is
flagged. An outlier is marked OUTLIER in every table; it does not fail the run by itself (give
`--expect` floors for that).
"""

from __future__ import annotations

import dataclasses
import os
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from rocmkit.results import Measurement

DEFAULT_THRESHOLD = 0.2
MIN_RANKS = 3
RATE_UNITS = ("TFLOPS", "GFLOPS", "GB/s", "%", "tokens/s", "images/s", "samples/s")
TIME_UNITS = ("s", "ms", "us")


def launched_world_size() -> int:
    """How many ranks torchrun started (1 when this process runs alone)."""
    if "MASTER_ADDR" not in os.environ:
        return 1
    return int(os.environ.get("WORLD_SIZE", "1"))


def per_rank(m: Measurement) -> Measurement:
    """The row of one rank: its name says where (host, rank), its params too (rows stay apart)."""
    host, rank = m.extra.get("host"), m.extra.get("rank")
    params = {**m.params, "host": host, "rank": rank}
    return dataclasses.replace(m, name=f"{m.name} @{host} r{rank}", params=params)


def gather(measurements: list[Measurement], fleet_suites: Iterable[str]) -> list[Measurement]:
    """Rank 0: every rank's rows of `fleet_suites` (one per rank) plus its own other rows (the
    collectives, already one figure for the job). Other ranks: their own rows."""
    import torch.distributed as dist

    suites = set(fleet_suites)
    mine = [per_rank(m) for m in measurements if m.suite in suites]
    rank = dist.get_rank()
    gathered: list[Any] = [None] * dist.get_world_size() if rank == 0 else []
    dist.gather_object(mine, gathered if rank == 0 else None, dst=0)
    if rank != 0:
        return measurements
    rows = [m for rows_of_rank in gathered for m in rows_of_rank]
    return rows + [m for m in measurements if m.suite not in suites]


def _figure(m: Measurement) -> tuple[str, str, str, str]:
    params = {k: v for k, v in m.params.items() if k not in ("host", "rank")}
    base = m.name.rsplit(" @", 1)[0]
    return m.suite, base, m.metric, repr(sorted(params.items()))


def flag_outliers(measurements: Sequence[Measurement], threshold: float = DEFAULT_THRESHOLD) -> int:
    """Mark every figure worse than its fleet median by more than `threshold` (`extra.outlier`,
    `extra.fleet_median`, `extra.outlier_threshold`); returns how many were marked."""
    groups: dict[tuple[str, str, str, str], list[Measurement]] = {}
    for m in measurements:
        if "rank" in m.params and m.value is not None and m.unit in RATE_UNITS + TIME_UNITS:
            groups.setdefault(_figure(m), []).append(m)
    flagged = 0
    for rows in groups.values():
        if len(rows) < MIN_RANKS:
            continue
        median = statistics.median(float(m.value) for m in rows if m.value is not None)
        for m in rows:
            value = float(m.value) if m.value is not None else median
            slow = value > (1 + threshold) * median if m.unit in TIME_UNITS else False
            slow = slow or (m.unit in RATE_UNITS and value < (1 - threshold) * median)
            m.extra = {**m.extra, "fleet_median": median, "outlier_threshold": threshold}
            if slow:
                m.extra["outlier"] = f"{value / median:.2f}x the fleet median"
                flagged += 1
    return flagged
