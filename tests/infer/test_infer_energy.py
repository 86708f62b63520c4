"""Energy per token in `rocmkit infer`: fake power readers (steady, hanging, erroring), a real CPU
run that says n/a, and `--power local` serve sweeps against the stub server."""

from __future__ import annotations

import threading
import time

import pytest
from stub_server import StubConfig, StubServer

from rocmkit.cli.main import main
from rocmkit.infer import LocalConfig, ServeConfig, benchmark_local, random_workload
from rocmkit.infer.local import local_measurements
from rocmkit.infer.serve import benchmark_server, serve_measurements
from rocmkit.platform import Platform
from rocmkit.results import load_result

transformers = pytest.importorskip("transformers")
CPU = Platform(backend="cpu", torch_version="2.9.0")
WATTS = 200.0


@pytest.fixture(scope="module")
def stub():
    server = StubServer(StubConfig(ttft_s=0.02, itl_s=0.01)).start()
    yield server
    server.stop()


def _local(tiny_model, reader, **overrides):
    config = LocalConfig(
        model_dir=tiny_model,
        precision="fp32",
        batch_sizes=(2,),
        prompt_lens=(8,),
        output_lens=(16,),
        iters=4,
        power_interval_s=0.002,
        **overrides,
    )
    result = benchmark_local(config, CPU, power_reader=reader)
    return result, {m.metric: m for m in local_measurements(result, config)}


@pytest.mark.slow
def test_steady_power_gives_joules_per_token_of_watts_over_throughput(tiny_model):
    result, rows = _local(tiny_model, lambda: WATTS, warmup=4)
    point = result.points[0]
    assert result.power_reader == "injected"
    assert rows["avg_power_w"].value == pytest.approx(WATTS, rel=0.01)
    tokens = 2 * 16 * 4  # batch x output length x timed iterations
    assert rows["energy_j_per_token"].unit == "J/token"
    assert rows["energy_j_per_token"].value == pytest.approx(
        WATTS * point.energy_window_s / tokens, rel=0.02
    )
    assert rows["tokens_per_joule"].value == pytest.approx(1 / rows["energy_j_per_token"].value)
    # the window is the timed generate() calls, so J/token is about watts / (tokens/s); loose,
    # since a slow call on a busy machine enters the window but not the median, yet it fails
    # if the 4 warm-up calls were counted (twice the energy)
    assert rows["energy_j_per_token"].value == pytest.approx(
        WATTS / rows["output_tokens_per_s"].value, rel=0.5
    )


@pytest.mark.slow
def test_continuous_batching_rounds_are_the_energy_window(tiny_model):
    result, rows = _local(tiny_model, lambda: WATTS, continuous_batching=True)
    assert rows["avg_power_w"].value == pytest.approx(WATTS, rel=0.01)
    assert rows["energy_j_per_token"].value == pytest.approx(
        WATTS * result.points[0].energy_window_s / (2 * 16 * 4), rel=0.02
    )


def test_hanging_reader_neither_hangs_the_run_nor_invents_energy(tiny_model):
    release = threading.Event()
    began = time.monotonic()
    try:
        _, rows = _local(tiny_model, lambda: release.wait(60) and None)
    finally:
        release.set()
    assert time.monotonic() - began < 20  # the reader would block for 60 s
    for metric in ("avg_power_w", "energy_j_per_token", "tokens_per_joule"):
        assert rows[metric].value is None
    assert "no reading" in rows["energy_j_per_token"].extra["skipped"]
    assert rows["ttft_ms"].value > 0  # the benchmark itself still measured


def test_erroring_reader_is_explained_not_zero(tiny_model):
    def broken() -> float:
        raise OSError("sensor went away")

    _, rows = _local(tiny_model, broken)
    assert rows["energy_j_per_token"].value is None
    assert "failed" in rows["energy_j_per_token"].extra["skipped"]


def test_cpu_run_reports_energy_as_na(cpu_platform, tiny_model, tmp_path, capsys):
    out = tmp_path / "local"
    argv = ["infer", "local", str(tiny_model), "--precision", "fp32", "--batch-sizes", "1",
            "--prompt-lens", "4", "--output-lens", "2", "--iters", "1", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "energy per token is n/a: no GPU power sensor on a CPU-only run" in printed
    energy = next(m for m in load_result(out).measurements if m.metric == "energy_j_per_token")
    assert energy.value is None and "CPU-only" in energy.extra["skipped"]
    row = next(line for line in printed.splitlines() if " fp32 │" in line)
    energy_cells = [cell.strip() for cell in row.split("│")[-4:-1]]  # W, J/token, tokens/J
    assert energy_cells == ["n/a", "n/a", "n/a"]


def _serve(stub, power: str, reader=None):
    config = ServeConfig(
        url=stub.base_url,
        model="stub",
        concurrency=(4,),
        warmup=0,
        power=power,  # type: ignore[arg-type]
        power_interval_s=0.005,
    )
    workload = random_workload(num_prompts=8, input_len=4, output_len=8)
    result = benchmark_server(config, workload, platform=CPU, power_reader=reader)
    return result, {m.metric: m for m in serve_measurements(result, config, workload)}


def test_serve_power_local_gives_joules_per_output_token(stub):
    result, rows = _serve(stub, "local", lambda: 150.0)
    summary = result.points[0].summary
    assert rows["avg_power_w"].value == pytest.approx(150.0, rel=0.01)
    assert rows["energy_j_per_token"].value == pytest.approx(
        150.0 * summary.duration_s / summary.total_output_tokens, rel=0.02
    )
    assert rows["tokens_per_joule"].unit == "tokens/J"


def test_serve_without_power_local_has_no_energy_rows(stub):
    _, rows = _serve(stub, "none", lambda: 150.0)  # a reader alone does not turn sampling on
    assert "energy_j_per_token" not in rows and rows["num_completed"].value == 8


def test_serve_power_local_without_a_sensor_is_na(stub, tmp_path, capsys):
    out = tmp_path / "serve"
    argv = ["infer", "serve", "--url", stub.base_url, "--model", "stub", "--num-prompts", "4",
            "--output-len", "4", "--power", "local", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    assert "energy per token is n/a" in capsys.readouterr().out
    energy = next(m for m in load_result(out).measurements if m.metric == "energy_j_per_token")
    assert energy.value is None and energy.extra["skipped"]


def test_serve_with_a_hanging_reader_finishes_with_na(stub):
    release = threading.Event()
    began = time.monotonic()
    try:
        _, rows = _serve(stub, "local", lambda: release.wait(60) and None)
    finally:
        release.set()
    assert time.monotonic() - began < 20
    assert rows["num_completed"].value == 8
    assert rows["energy_j_per_token"].value is None and rows["avg_power_w"].value is None
    assert "no reading" in rows["energy_j_per_token"].extra["skipped"]
    assert "skipped" not in rows["ttft_ms_p50"].extra  # the reason sits on the energy rows only
