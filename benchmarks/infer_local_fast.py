"""`rocmkit infer local --fast` (static KV cache + torch.compile) against transformers' eager
generate(), in the same run, on a random-weight Qwen3-shaped model built from a config (no
downloads). Prints both rows of the result, as `rocmkit infer local` shows them, and the ratio of
output tokens/s fast / eager at each batch size (issue 14's GPU target: >= 3x at batch 1 for a 0.6B
model; on a CPU the compiled path has no kernel launches to save).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/infer_local_fast.py [--layers 4 --hidden 256]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resultfile import ResultRun, add_result_args, ratios

from rocmkit.infer.commands import run_local
from rocmkit.infer.settings import LocalSettings
from rocmkit.platform import Platform, detect
from rocmkit.report.tables import format_cell
from rocmkit.results import Measurement


def build_model(directory: Path, layers: int, hidden: int, vocab: int) -> None:
    """A Qwen3 of the given shape with random weights, saved as a model directory."""
    config = transformers.Qwen3Config(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=hidden * 3,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        num_key_value_heads=max(1, hidden // 128),
        head_dim=64,
        max_position_embeddings=1024,
    )
    torch.manual_seed(0)
    transformers.Qwen3ForCausalLM(config).save_pretrained(directory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--batch-sizes", default="1")
    parser.add_argument("--prompt-len", type=int, default=32)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--precision", default=None, help="default: bf16 on a GPU, fp32 on CPU")
    parser.add_argument(
        "--rounds", type=int, default=3, help="whole eager+fast runs, one after the other"
    )
    add_result_args(parser, "infer_local_fast")
    args = parser.parse_args()
    run = ResultRun.start("infer_local_fast", args)
    platform = detect()
    on_gpu = platform.torch_device == "cuda"
    per_round: list[dict[tuple[int, str], float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        build_model(Path(tmp), args.layers, args.hidden, args.vocab)
        settings = LocalSettings(
            model_dir=Path(tmp),
            precision=args.precision or ("bf16" if on_gpu else "fp32"),
            batch_sizes=tuple(int(b) for b in args.batch_sizes.split(",")),
            prompt_lens=(args.prompt_len,),
            output_lens=(args.output_len,),
            iters=args.iters,
            fast=True,
            power=False,
        )
        for _ in range(args.rounds):  # each round times eager and fast on the same model
            result = run_local(settings, platform if on_gpu else _cpu(platform))
            report(result.measurements)
            per_round.append(tokens_per_s(result.measurements))
    record(run, per_round)
    run.finish()


def tokens_per_s(rows: list[Measurement]) -> dict[tuple[int, str], float]:
    return {
        (int(m.params["batch_size"]), str(m.params["decode"])): float(m.value)
        for m in rows
        if m.metric == "output_tokens_per_s" and m.value
    }


def record(run: ResultRun, per_round: list[dict[tuple[int, str], float]]) -> None:
    """Output tokens/s of each path per batch size (wall clock, as `infer local` measures) and
    the per-round ratio fast / eager."""
    for batch in sorted({batch for batch, _ in per_round[0]}):
        series = {d: [r[(batch, d)] for r in per_round] for d in ("eager", "fast")}
        for decode, values in series.items():
            run.add(f"batch{batch}.{decode}_tok_per_s", values, unit="tok/s", clock="wall")
        run.add(
            f"batch{batch}.fast_over_eager",
            ratios(series["fast"], series["eager"]),
            unit="x",
            clock="wall",
            baseline="eager",
        )


def _cpu(platform: Platform) -> Platform:
    """This machine's platform, pinned to the CPU (a CUDA build without a usable GPU)."""
    return dataclasses.replace(platform, backend="cpu", gpu_available=False)


def report(rows: list[Measurement]) -> None:
    shown = ("ttft_ms", "tpot_ms", "e2e_ms", "output_tokens_per_s")
    cells = {(m.params["batch_size"], m.params["decode"], m.metric): m for m in rows}
    print(f"{'batch':>5} {'decode':>6} " + " ".join(f"{name:>20}" for name in shown))
    for batch in sorted({key[0] for key in cells}):
        for decode in ("eager", "fast"):
            figures = (format_cell(cells[(batch, decode, name)]) for name in shown)
            print(f"{batch:>5} {decode:>6} " + " ".join(f"{text:>20}" for text in figures))
        fast, eager = (cells[(batch, d, "output_tokens_per_s")].value for d in ("fast", "eager"))
        if fast and eager:
            print(f"batch {batch}: fast / eager output tokens/s = {fast / eager:.2f}x")


if __name__ == "__main__":
    main()
