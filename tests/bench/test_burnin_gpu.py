"""The burn-in, telemetry and host links on a real GPU; skipped without one (gpu marker)."""

from __future__ import annotations

import pytest

from rocmkit.bench import burnin_rows
from rocmkit.bench.burnin import BurnInConfig, run_burn_in_suite
from rocmkit.bench.links import LinksConfig, run_links

pytestmark = pytest.mark.gpu


def _platform():
    from rocmkit.platform import detect

    return detect()


def test_a_short_burn_in_on_every_gpu_is_checked_and_reads_telemetry():
    rows = run_burn_in_suite(
        BurnInConfig(duration_s=5.0, gemm_size=2048, memory_mib=256), _platform()
    )
    sustained = [m for m in rows if m.metric == "sustained"]
    assert sustained and all(m.extra["correct"] for m in sustained)
    assert burnin_rows.flags(rows) == {}, burnin_rows.flags(rows)
    telemetry = [m for m in rows if m.name.endswith("telemetry") and m.metric == "unthrottled"]
    assert telemetry  # a row per GPU, or one saying why there is no telemetry


def test_host_links_measure_every_gpu():
    rows = run_links(LinksConfig(size_mib=64), _platform())
    h2d = [m for m in rows if m.params.get("direction") == "h2d"]
    assert h2d and all(m.value and m.value > 0.5 and m.extra["correct"] for m in h2d)
