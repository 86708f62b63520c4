"""`--save-requests`: every figure of result.json can be recomputed from requests.jsonl alone."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from stub_server import StubConfig, StubServer

from rocmkit.cli.main import main
from rocmkit.results import load_result


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    server = StubServer(StubConfig(ttft_s=0.02, itl_s=0.004, fail_every=7)).start()
    out = tmp_path_factory.mktemp("serve")
    argv = ["infer", "serve", "--url", server.base_url, "--model", "stub", "--num-prompts", "20",
            "--output-len", "6", "--rate", "15", "--concurrency", "3", "--warmup", "0", "--max-error-rate", "1",
            "--slo", "ttft=30ms,tpot=5ms", "--save-requests", "--out", str(out)]  # fmt: skip
    try:
        assert main(argv) == 0
    finally:
        server.stop()
    return out


def _stats(values: list[float]) -> dict[str, float]:
    a = np.array(values) * 1e3
    stats = {"mean": a.mean(), "p50": np.median(a), "std": a.std(), "max": a.max()}
    stats.update({f"p{q}": np.percentile(a, q) for q in (90, 95, 99)})
    return stats


@pytest.mark.slow
def test_result_json_holds_the_inputs_and_every_figure(run_dir):
    result = load_result(run_dir)
    config = result.config
    assert (config["workload"], config["num_prompts"], config["output_len"]) == ("random", 20, 6)
    assert config["model"] == "stub" and config["max_error_rate"] == 1.0 and config["seed"] == 0
    assert config["rate"] == [15.0] and config["concurrency"] == [3] and config["slo"]
    metrics = {m.metric for m in result.measurements}
    for label in ("ttft", "tpot", "itl", "e2e", "queue"):
        assert {
            f"{label}_ms_{s}" for s in ("mean", "p50", "std", "p90", "p95", "p99", "max")
        } <= metrics
    assert {"total_output_tokens", "mean_input_tokens", "peak_output_tokens_per_s"} <= metrics


def test_figures_recompute_from_requests_jsonl(run_dir):
    rows = {m.metric: m.value for m in load_result(run_dir).measurements}
    lines = [json.loads(line) for line in (run_dir / "requests.jsonl").read_text().splitlines()]
    ok = [r for r in lines if r["ok"]]
    duration = rows["duration_s"]
    assert len(lines) == rows["num_requests"] == 20
    assert len(ok) == rows["num_completed"] and len(lines) - len(ok) == rows["num_failed"] > 0
    assert all(
        r["error"].startswith("HTTP 500") and r["http_status"] == 500 for r in lines if not r["ok"]
    )
    out_tokens = sum(r["output_tokens"] for r in ok)
    assert rows["total_output_tokens"] == out_tokens
    assert rows["total_input_tokens"] == sum(r["prompt_tokens"] for r in ok)
    assert rows["request_per_s"] == pytest.approx(len(ok) / duration)
    assert rows["output_tokens_per_s"] == pytest.approx(out_tokens / duration)
    tpots = [(r["e2e_s"] - r["ttft_s"]) / (r["output_tokens"] - 1) for r in ok]
    series = {
        "ttft": [r["ttft_s"] for r in ok],
        "e2e": [r["e2e_s"] for r in ok],
        "itl": [gap for r in ok for gap in r["itl_s"]],
        "tpot": tpots,
        "queue": [max(0.0, r["sent_s"] - r["scheduled_s"]) for r in lines],
    }
    for label, values in series.items():
        for stat, want in _stats(values).items():
            assert rows[f"{label}_ms_{stat}"] == pytest.approx(want, rel=1e-9, abs=1e-9), (
                label,
                stat,
            )
    buckets: dict[int, float] = {}
    for r in ok:
        times = np.cumsum([r["sent_s"] + r["ttft_s"], *r["itl_s"]])
        for t in times:
            buckets[math.floor(t)] = buckets.get(math.floor(t), 0) + r["output_tokens"] / len(times)
    assert rows["peak_output_tokens_per_s"] == pytest.approx(max(buckets.values()))
    good = [r for r, tpot in zip(ok, tpots, strict=True) if r["ttft_s"] <= 0.03 and tpot <= 0.005]
    assert rows["goodput_req_per_s"] == pytest.approx(len(good) / duration)
    assert rows["slo_ttft_attainment"] == pytest.approx(sum(r["ttft_s"] <= 0.03 for r in ok) / 20)
