"""The timing core: statistics on their own, sampling limits, cache-flush sizing."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmkit.errors import UserError
from rocmkit.measure.timing import (
    TimingConfig,
    flush_bytes_for,
    measure,
    quantile,
    summarize,
    time_callable,
)


def test_summarize_known_samples():
    stats = summarize([4.0, 1.0, 3.0, 2.0, 100.0])
    assert stats.median == 3.0
    assert stats.min == 1.0 and stats.max == 100.0
    assert stats.iqr == pytest.approx(4.0 - 2.0)
    assert stats.num_samples == 5
    assert stats.cv == pytest.approx(np.std([4, 1, 3, 2, 100], ddof=1) / np.mean([4, 1, 3, 2, 100]))


def test_single_sample_has_zero_spread_and_empty_is_an_error():
    stats = summarize([0.5])
    assert (stats.median, stats.iqr, stats.cv, stats.num_samples) == (0.5, 0.0, 0.0, 1)
    with pytest.raises(ValueError):
        summarize([])


@given(st.lists(st.floats(min_value=1e-9, max_value=1e3), min_size=1, max_size=60))
def test_statistics_match_numpy(samples):
    stats = summarize(samples)
    values = np.array(samples)
    assert stats.median == pytest.approx(np.median(values), rel=1e-9, abs=1e-12)
    q75, q25 = np.percentile(values, [75, 25])
    assert stats.iqr == pytest.approx(q75 - q25, rel=1e-9, abs=1e-9)
    assert stats.min <= stats.median <= stats.max
    assert stats.iqr >= 0 and stats.cv >= 0


def test_quantile_interpolates():
    assert quantile([0.0, 10.0], 0.25) == 2.5


def test_sample_count_respects_min_and_max():
    calls = []
    samples = time_callable(
        lambda: calls.append(1), TimingConfig(warmup=2, min_samples=4, max_samples=7, budget_s=10)
    )
    assert len(samples) == 7  # budget never reached: stops at max_samples
    assert len(calls) == 2 + 7  # warm-up runs are not timed


def test_budget_stops_sampling_early():
    samples = time_callable(
        lambda: time.sleep(0.02),
        TimingConfig(warmup=0, min_samples=2, max_samples=1000, budget_s=0.05),
    )
    assert 2 <= len(samples) <= 5
    assert all(s >= 0.019 for s in samples)


def test_measure_reports_seconds():
    stats = measure(lambda: time.sleep(0.01), TimingConfig(warmup=0, min_samples=3, max_samples=3))
    assert 0.009 < stats.median < 0.1 and stats.num_samples == 3


def test_flush_cache_option_runs_on_cpu():
    stats = measure(
        lambda: None, TimingConfig(warmup=0, min_samples=2, max_samples=2, flush_cache=True)
    )
    assert stats.num_samples == 2


def test_flush_buffer_is_larger_than_mi300x_infinity_cache():
    assert flush_bytes_for("gfx942", 4 * 2**20) > 256 * 2**20
    assert flush_bytes_for("sm_90", 50 * 2**20) >= 100 * 2**20  # H100: 50 MiB L2
    assert flush_bytes_for(None, None) == 64 * 2**20


@pytest.mark.parametrize(
    "kwargs",
    [{"warmup": -1}, {"min_samples": 0}, {"min_samples": 5, "max_samples": 2}, {"budget_s": 0}],
)
def test_bad_timing_config_is_a_user_error(kwargs):
    with pytest.raises(UserError):
        TimingConfig(**kwargs)


def test_the_load_around_a_short_cpu_figure_is_read_over_enough_clock_ticks(monkeypatch):
    """CPU time is counted in 10 ms ticks: a 5-sample figure of microseconds would read another
    process's load as zero or as several cores at random, so the window is widened."""
    from rocmkit.measure import timing as timing_module

    taken = []
    real_snapshot = timing_module.snapshot

    def recording_snapshot():
        shot = real_snapshot()
        taken.append(shot.wall_s)
        return shot

    monkeypatch.setattr(timing_module, "snapshot", recording_snapshot)
    config = TimingConfig(warmup=1, min_samples=5, max_samples=5)
    timing_module.measure(lambda: None, config, "cpu")
    assert taken[-1] - taken[0] >= timing_module.MIN_LOAD_WINDOW_S
