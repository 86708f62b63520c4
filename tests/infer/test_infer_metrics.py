"""Serving metric maths against hand-computed cases and numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmkit.errors import UserError
from rocmkit.infer.loadgen import arrival_offsets
from rocmkit.infer.metrics import RequestRecord, parse_slo, percentile, summarize


def _ok(
    ttft: float, itl: list[float], tokens: int | None = None, prompt: int | None = 10
) -> RequestRecord:
    return RequestRecord(
        ok=True,
        ttft_s=ttft,
        e2e_s=ttft + sum(itl),
        itl_s=list(itl),
        output_tokens=tokens if tokens is not None else len(itl) + 1,
        prompt_tokens=prompt,
    )


@given(st.lists(st.floats(0, 1e3, allow_nan=False), min_size=1, max_size=50), st.integers(0, 100))
def test_percentile_matches_numpy_linear(values, q):
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), abs=1e-9)


def test_summary_of_hand_computed_run():
    # A: TTFT 100 ms, gaps 20, 30 ms -> 3 tokens, E2E 150 ms, TPOT (150-100)/2 = 25 ms
    # B: TTFT 200 ms, gaps 10, 10, 10 ms -> 4 tokens, E2E 230 ms, TPOT 30/3 = 10 ms
    # C: one token, TTFT 50 ms: no TPOT, no gaps
    # D: failed
    records = [
        _ok(0.100, [0.020, 0.030]),
        _ok(0.200, [0.010, 0.010, 0.010]),
        _ok(0.050, []),
        RequestRecord(ok=False, error="HTTP 500: boom"),
    ]
    s = summarize(records, duration_s=2.0, slo={"ttft": 0.150, "tpot": 0.020})
    assert (s.num_requests, s.num_completed, s.num_failed) == (4, 3, 1)
    assert s.errors == {"HTTP 500: boom": 1}
    assert s.ttft.mean == pytest.approx((0.1 + 0.2 + 0.05) / 3)
    assert s.ttft.median == pytest.approx(0.1)
    assert s.tpot.count == 2 and s.tpot.mean == pytest.approx((0.025 + 0.010) / 2)
    assert s.itl.count == 5 and s.itl.median == pytest.approx(0.010)
    assert s.e2e.percentiles[99] == pytest.approx(0.15 + (0.23 - 0.15) * 0.98)
    assert s.total_output_tokens == 3 + 4 + 1
    assert s.request_per_s == pytest.approx(1.5)
    assert s.output_tokens_per_s == pytest.approx(4.0)
    assert s.total_tokens_per_s == pytest.approx((30 + 8) / 2.0)
    # A fails tpot (25 > 20 ms), B fails ttft (200 > 150 ms), C passes: one token has TPOT 0
    assert s.goodput_req_per_s == pytest.approx(0.5)


def test_usage_token_count_drives_tpot_not_chunk_count():
    # a server that batches 2 tokens per chunk: 3 chunks but 6 tokens -> TPOT = 100 ms / 5
    record = _ok(0.1, [0.05, 0.05], tokens=6)
    assert record.tpot_s == pytest.approx(0.02)


def test_all_failed_run_has_no_latencies_instead_of_zeros():
    s = summarize([RequestRecord(ok=False, error="timeout after 1 s")] * 3, duration_s=1.0)
    assert s.num_completed == 0 and s.ttft.mean is None and s.itl.percentiles[99] is None
    assert s.request_per_s == 0 and s.goodput_req_per_s is None
    assert s.errors == {"timeout after 1 s": 3}


def test_unknown_prompt_lengths_leave_total_throughput_unknown():
    s = summarize([_ok(0.1, [0.01], prompt=None)], duration_s=1.0)
    assert s.total_prompt_tokens is None and s.total_tokens_per_s is None
    assert s.output_tokens_per_s == pytest.approx(2.0)


def test_parse_slo_units_and_errors():
    assert parse_slo("ttft=200ms, tpot=50ms,e2e=2.5s") == pytest.approx(
        {"ttft": 0.2, "tpot": 0.05, "e2e": 2.5}
    )
    for bad in ("ttft=200", "itl=5ms", "ttft:200ms", "", "tpot=-1ms"):
        with pytest.raises(UserError):
            parse_slo(bad)


def test_poisson_arrivals_have_the_requested_rate_and_seed():
    offsets = arrival_offsets(4000, rate=50.0, burstiness=1.0, seed=3)
    assert offsets == arrival_offsets(4000, rate=50.0, burstiness=1.0, seed=3)
    assert offsets[0] == 0 and offsets[-1] / 3999 == pytest.approx(1 / 50, rel=0.05)
    gaps = np.diff(offsets)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, rel=0.1)  # exponential: CV 1
    bursty = np.diff(arrival_offsets(4000, rate=50.0, burstiness=0.25, seed=3))
    assert np.std(bursty) / np.mean(bursty) == pytest.approx(2.0, rel=0.15)  # gamma: CV 1/sqrt(k)
    assert arrival_offsets(3, rate=float("inf"), burstiness=1.0, seed=0) == [0.0, 0.0, 0.0]


def test_infer_package_api_is_pinned_and_light():
    import subprocess
    import sys
    from pathlib import Path

    import rocmkit
    import rocmkit.infer

    assert rocmkit.infer.__all__ == sorted(rocmkit.infer.__all__)
    assert {"benchmark_local", "benchmark_server", "summarize", "parse_slo"} <= set(
        rocmkit.infer.__all__
    )
    code = "import sys, rocmkit.infer; print(sorted({'torch', 'httpx', 'transformers'} & set(sys.modules)))"
    src = str(Path(rocmkit.__file__).resolve().parent.parent)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src}
    )
    assert out.stdout.strip() == "[]", out.stderr
