"""Collectives: nccl-tests factors, expected results, and a real 2-process run on gloo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rocmkit
from rocmkit.bench.collectives import OPS, algbw_gbps, bus_factor, busbw_gbps, expected_result
from rocmkit.cli.main import main


@pytest.mark.parametrize(
    ("op", "n", "factor"),
    [
        ("all_reduce", 8, 1.75),
        ("all_reduce", 2, 1.0),
        ("all_gather", 8, 0.875),
        ("reduce_scatter", 4, 0.75),
        ("all_to_all", 2, 0.5),
        ("broadcast", 8, 1.0),
    ],
)
def test_bus_factors_follow_nccl_tests(op, n, factor):
    assert bus_factor(op, n) == pytest.approx(factor)


def test_busbw_of_all_reduce_on_8_ranks():
    # 1 GB in 10 ms: algbw 100 GB/s, busbw = 100 * 2 * 7 / 8 = 175 GB/s
    assert algbw_gbps(10**9, 0.01) == pytest.approx(100.0)
    assert busbw_gbps("all_reduce", 10**9, 0.01, 8) == pytest.approx(175.0)


def test_expected_results_are_what_each_rank_must_see():
    assert expected_result("all_reduce", 4, 1, 2) == [3.0] * 4
    assert expected_result("all_gather", 4, 0, 2) == [1.0, 1.0, 2.0, 2.0]
    assert expected_result("reduce_scatter", 4, 1, 2) == [3.0, 3.0]
    assert expected_result("all_to_all", 4, 1, 2) == [1.0, 1.0, 3.0, 3.0]
    assert expected_result("broadcast", 2, 1, 2) == [1.0, 1.0]


def test_collectives_without_torchrun_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    for var in ("WORLD_SIZE", "MASTER_ADDR", "RANK"):
        monkeypatch.delenv(var, raising=False)
    assert main(["bench", "--suite", "collectives", "--out", str(tmp_path), "--no-power"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "torchrun" in err


@pytest.mark.multiproc
@pytest.mark.slow
def test_collectives_under_torchrun_on_gloo(tmp_path):
    src = str(Path(rocmkit.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--standalone",
        "-m",
        "rocmkit",
        "bench",
        "--suite",
        "collectives",
        "--device",
        "cpu",  # gloo on the CPU, also on a machine with GPUs
        "--out",
        str(out),
        "--json",
        "--collectives.sizes_bytes",
        "1024,65536",
        "--collectives.num_iters",
        "3",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((out / "result.json").read_text())
    busbw = [m for m in data["measurements"] if m["metric"] == "busbw"]
    assert {m["params"]["op"] for m in busbw} == set(OPS)
    assert {m["params"]["size_bytes"] for m in busbw} == {1024, 65536}
    assert all(m["extra"]["correct"] for m in busbw)
    assert all(m["params"]["world_size"] == 2 and m["params"]["backend"] == "gloo" for m in busbw)
    assert all(m["value"] > 0 for m in busbw)
    # only rank 0 wrote: one JSON document on stdout, one run directory
    assert done.stdout.count('"schema_version"') == 1
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def _one_rank_group(tmp_path):
    import torch.distributed as dist

    store = tmp_path / "store"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)


def test_every_timed_iteration_is_checked(tmp_path, monkeypatch):
    """One wrong iteration among the timed ones (which a check before timing would miss) makes
    the figure WRONG, with the count of wrong elements."""
    from rocmkit.bench import collectives
    from rocmkit.bench.collectives import CollectivesConfig, run_collectives
    from rocmkit.platform import Platform

    _one_rank_group(tmp_path)
    cpu = Platform(backend="cpu", torch_version="x")
    config = CollectivesConfig(sizes_bytes=[64], num_iters=5, warmup=1)
    healthy = run_collectives(config, cpu)
    assert {m.params["op"] for m in healthy} == set(OPS)
    assert all(m.extra["correct"] is True and m.extra["num_wrong"] == 0 for m in healthy)
    assert healthy[0].extra["check"] == "every timed iteration (5) on every rank"
    real, calls = collectives._runner, {"n": 0}

    def runner(op, inp, out):
        run = real(op, inp, out)

        def bad_on_the_third_timed_iteration():
            run()
            calls["n"] += 1
            if calls["n"] == 4:  # 1 warm-up, then timed iterations 1, 2, 3
                (inp if op in ("all_reduce", "broadcast") else out).view(-1)[2] += 1.0

        return bad_on_the_third_timed_iteration

    monkeypatch.setattr(collectives, "_runner", runner)
    config = CollectivesConfig(ops=["all_reduce"], sizes_bytes=[64], num_iters=5, warmup=1)
    rows = run_collectives(config, cpu)
    assert rows and all(m.extra["correct"] is False and m.extra["num_wrong"] == 1 for m in rows)
