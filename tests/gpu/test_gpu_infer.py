"""`rocmkit infer local` on the GPU with a tiny random-weight Qwen3 built from a config."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.cli.main import main
from rocmkit.results import load_result

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_local_sweep_runs_on_the_gpu_and_measures_its_memory(
    tiny_model: Path, tmp_path: Path, capsys, precision: str
):
    out = tmp_path / "local"
    argv = ["infer", "local", str(tiny_model), "--precision", precision, "--batch-sizes", "1,4",
            "--prompt-lens", "16", "--output-lens", "8", "--iters", "2", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    result = load_result(out)
    assert result.environment["torch_device"] == "cuda"
    rows = {(m.params["batch_size"], m.metric): m for m in result.measurements}
    for batch in (1, 4):
        ttft, tpot, e2e = (rows[(batch, m)].value for m in ("ttft_ms", "tpot_ms", "e2e_ms"))
        assert 0 < ttft < e2e and tpot is not None and tpot > 0
        assert rows[(batch, "output_tokens_per_s")].value == pytest.approx(
            batch * 8 / (e2e / 1e3), rel=1e-6
        )
        # Measured from the allocator on the GPU (None on CPU): a tiny model needs well under 1 GiB.
        peak_mib = rows[(batch, "peak_memory_mib")].value
        assert peak_mib is not None and 0 < peak_mib < 1024
        energy = rows[(batch, "energy_j_per_token")]
        if energy.value is None:  # a window shorter than two power samples is allowed, not CPU
            assert "CPU-only" not in energy.extra.get("skipped", "")
        else:
            assert energy.value > 0
    assert rows[(4, "peak_memory_mib")].value >= rows[(1, "peak_memory_mib")].value
