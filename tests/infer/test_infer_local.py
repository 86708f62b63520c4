"""`rocmkit infer local` on a tiny random Qwen3 built offline, and a tiny offline tokenizer."""

from __future__ import annotations

import pytest

from rocmkit.cli.main import main
from rocmkit.results import load_result

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_tokenizer(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<unk>", "<eos>", *[f"w{i}" for i in range(62)]]  # the tiny model's 64 ids
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="<unk>", eos_token="<eos>"
    )
    fast.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    directory = tmp_path_factory.mktemp("tiny-tokenizer")
    fast.save_pretrained(directory)
    return directory


def test_local_sweep_reports_prefill_and_decode(cpu_platform, tiny_model, tmp_path, capsys):
    out = tmp_path / "local"
    argv = ["infer", "local", str(tiny_model), "--precision", "fp32", "--batch-sizes", "1,2",
            "--prompt-lens", "8", "--output-lens", "1,5", "--iters", "2", "--out", str(out),
            "--label", "cpu-tiny", "--metadata", "host=ci"]  # fmt: skip
    assert main(argv) == 0
    assert "TPOT (ms)" in capsys.readouterr().out
    result = load_result(out)
    assert result.kind == "infer-local"
    assert result.label == "cpu-tiny" and result.data["metadata"] == {"host": "ci"}
    rows = {
        (m.params["batch_size"], m.params["output_len"], m.metric): m for m in result.measurements
    }
    assert len({(b, o) for b, o, _ in rows}) == 4
    assert rows[(1, 1, "tpot_ms")].value is None  # one output token: no decode step
    ttft, tpot, e2e = (rows[(2, 5, m)].value for m in ("ttft_ms", "tpot_ms", "e2e_ms"))
    assert 0 < ttft < e2e and tpot == pytest.approx((e2e - ttft) / 4, rel=0.5)
    throughput = rows[(2, 5, "output_tokens_per_s")]
    assert throughput.unit == "tokens/s" and throughput.value == pytest.approx(
        2 * 5 / (e2e / 1e3), rel=1e-6
    )
    assert rows[(2, 5, "peak_memory_mib")].value is None  # CPU: not measured, not guessed


@pytest.mark.slow
def test_continuous_batching_sends_each_row_as_a_request(cpu_platform, tiny_model, tmp_path):
    argv = ["infer", "local", str(tiny_model), "--precision", "fp32", "--continuous-batching",
            "--batch-sizes", "3", "--prompt-lens", "6", "--output-lens", "4", "--iters", "2",
            "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    rows = {m.metric: m for m in load_result(tmp_path).measurements}
    assert rows["ttft_ms"].params["continuous_batching"] is True
    assert 0 < rows["ttft_ms"].value < rows["e2e_ms"].value and rows["tpot_ms"].value > 0
    assert rows["output_tokens_per_s"].value == pytest.approx(3 * 4 / (rows["e2e_ms"].value / 1e3))


@pytest.mark.slow  # the first torch.compile on a machine builds C++ kernels: up to a minute
def test_fast_decode_is_reported_next_to_eager(cpu_platform, tiny_model, tmp_path, capsys):
    argv = ["infer", "local", str(tiny_model), "--precision", "fp32", "--fast", "--prompt-lens", "8",
            "--output-lens", "6", "--iters", "2", "--warmup", "0", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if "│" in line]
    decodes = [line.split("│")[6].strip() for line in table if line.count("│") > 6]
    assert decodes == ["eager", "fast"]  # two rows of one table
    rows = {(m.params["decode"], m.metric): m.value for m in load_result(tmp_path).measurements}
    for decode in ("eager", "fast"):
        ttft, tpot, e2e = (rows[(decode, m)] for m in ("ttft_ms", "tpot_ms", "e2e_ms"))
        assert 0 < ttft < e2e and tpot == pytest.approx((e2e - ttft) / 5, rel=0.5)
    assert rows[("fast", "output_tokens_per_s")] > 0


def test_fast_with_continuous_batching_is_refused(tiny_model, capsys):
    argv = ["infer", "local", str(tiny_model), "--fast", "--continuous-batching"]
    assert main(argv) == 2 and "drop --continuous-batching" in capsys.readouterr().err


def test_sdpa_backend_choice_runs(tiny_model, tmp_path):
    argv = ["infer", "local", str(tiny_model), "--precision", "bf16", "--sdpa-backend", "math",
            "--prompt-lens", "4", "--output-lens", "2", "--iters", "1", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    assert {m.params["sdpa_backend"] for m in load_result(tmp_path).measurements} == {"math"}


def test_sdpa_backend_that_cannot_run_here_is_one_line_exit_2(
    cpu_platform, tiny_model, tmp_path, capsys
):
    argv = ["infer", "local", str(tiny_model), "--sdpa-backend", "efficient", "--prompt-lens", "4",
            "--output-lens", "2", "--iters", "1", "--warmup", "0", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--sdpa-backend" in err


def test_directory_without_weights_is_one_line_exit_2(tiny_model, tmp_path, capsys):
    (tmp_path / "config.json").write_text((tiny_model / "config.json").read_text())
    assert main(["infer", "local", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot load" in err


def test_tokenizer_gives_prompt_lengths_in_tokens(tiny_tokenizer):
    from rocmkit.infer.workloads import Tokenizer, random_workload

    w = random_workload(
        num_prompts=3, input_len=12, output_len=4, tokenizer=Tokenizer(tiny_tokenizer)
    )
    assert w.length_unit == "tokens" and not w.notes
    assert [p.input_tokens for p in w.prompts] == [12, 12, 12]


def test_a_directory_that_is_no_tokenizer_is_a_user_error(tmp_path):
    from rocmkit.errors import UserError
    from rocmkit.infer.workloads import Tokenizer

    (tmp_path / "readme.txt").write_text("not a tokenizer")
    with pytest.raises(UserError, match="cannot load a tokenizer") as info:
        Tokenizer(tmp_path)
    assert "\n" not in str(info.value)


def _serving_deps_missing() -> bool:
    import importlib.util

    needed = ("fastapi", "uvicorn", "openai", "accelerate")
    return any(importlib.util.find_spec(m) is None for m in needed)


@pytest.mark.slow
@pytest.mark.skipif(
    _serving_deps_missing(), reason="transformers serve needs fastapi, uvicorn, openai, accelerate"
)
def test_serve_against_transformers_serve(tiny_model, tiny_tokenizer, tmp_path):
    """A real OpenAI-compatible server: `transformers serve --device cpu` on the tiny model."""
    import os
    import shutil
    import socket
    import subprocess
    import sys
    import time

    import httpx

    served = tmp_path / "served"  # one directory with the weights and the tokenizer
    shutil.copytree(tiny_model, served)
    for item in tiny_tokenizer.iterdir():
        shutil.copy(item, served / item.name)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "transformers.cli.transformers", "serve", str(served),
           "--device", "cpu", "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        for api in ("completions", "chat"):
            argv = ["infer", "serve", "--url", f"http://127.0.0.1:{port}/v1", "--model", str(served),
                    "--api", api, "--num-prompts", "4", "--input-len", "8", "--output-len", "6",
                    "--tokenizer", str(tiny_tokenizer), "--out", str(tmp_path / api)]  # fmt: skip
            assert main(argv) == 0
            done = {m.metric: m for m in load_result(tmp_path / api).measurements}
            assert done["num_completed"].value == 4 and done["ttft_ms_p50"].value > 0
            assert done["num_completed"].extra["tokens_from_usage"]
    finally:
        server.terminate()
        server.wait(30)
