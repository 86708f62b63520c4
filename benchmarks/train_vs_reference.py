"""rocmkit train against the best plain PyTorch loop, same model, shapes and precision, one process.

The reference is what a strong engineer writes by hand for throughput, sharing no code with rocmkit:
its own GPT (nanoGPT's layout, defined below) or torchvision's ResNet, with the parameter count
checked equal to rocmkit's model of the same config; its own synthetic data (random tokens or
images, made once and kept on the device); its own AdamW (decay on matrices, fused on a GPU,
foreach on a CPU); the model and its loss compiled as one function, gradient clipping, autocast,
channels_last for the ResNet on a GPU, TF32 and cuDNN/MIOpen benchmark mode on a GPU, and the loss
read from the device only every `--log-every` steps. rocmkit runs through its public `train()`
with the same settings (its own synthetic data, made on the device per step, its metrics and
checks).

Both are timed the same way between two host synchronisations: from the end of warm-up
(compilation included there) to the last step. On a GPU the clock is the wall clock. On the CPU it
is the process's CPU time (run with OMP_NUM_THREADS=1): the work each loop costs, which another
process on a shared machine cannot inflate the way it inflates wall time. Runs alternate (rocmkit, reference, rocmkit,
...) so that machine noise falls on both; the ratio of the medians is printed per model.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/train_vs_reference.py            # CPU shapes
    PYTHONPATH=src python benchmarks/train_vs_reference.py                               # on a GPU:
        GPT-2 124M B=16 T=1024 bf16 and ResNet-50 B=128 bf16 (the issue's shapes)
    ... --loss-impls   also compares the GPT head+loss paths (plain vs chunked, eager vs compiled)

Goal: step-time ratio rocmkit/reference <= 1.03 for each model.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resultfile import ResultRun, add_result_args, ratios

from rocmkit.train import load_train_config, train
from rocmkit.train.config import TrainConfig
from rocmkit.train.data import build_data
from rocmkit.train.models import build_model

GPU_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "gpt": (
        "gpt2-124m",
        {"train.micro_batch": 16, "train.grad_accum": 1, "train.compile": True},
    ),
    "resnet": ("resnet50", {"train.micro_batch": 128, "train.compile": True}),
}
# CPU shapes: big enough that a step is real work (~0.1-0.3 s on one core), small enough to finish.
CPU_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "gpt": (
        "gpt-tiny",
        {
            "model.vocab_size": 4096,
            "model.seq_len": 128,
            "model.d_model": 192,
            "model.n_layer": 3,
            "model.n_head": 3,
            "train.micro_batch": 8,
            "train.compile": True,
        },
    ),
    "resnet": (
        "resnet18",
        {
            "model.image_size": 32,
            "model.num_classes": 100,
            "train.micro_batch": 16,
            "train.compile": True,
        },
    ),
}


@dataclass
class Timing:
    step_s: float
    peak_bytes: int | None


def _clock(device: torch.device) -> float:
    return time.perf_counter() if device.type == "cuda" else time.process_time()


def _device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak(device: torch.device) -> int | None:
    return int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None


def _reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


class RefAttention(nn.Module):
    """Causal self-attention as nanoGPT writes it (no bias, SDPA)."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(width, 3 * width, bias=False)
        self.c_proj = nn.Linear(width, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out: torch.Tensor = self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return out


class RefBlock(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(width, bias=False)
        self.attn = RefAttention(width, heads)
        self.ln_2 = nn.LayerNorm(width, bias=False)
        self.c_fc = nn.Linear(width, 4 * width, bias=False)
        self.c_proj = nn.Linear(4 * width, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        out: torch.Tensor = x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))
        return out


class RefGPT(nn.Module):
    """The reference's own GPT-2-shaped decoder (nanoGPT's layout: learned positions, pre-norm,
    tied head, no biases), written here so that the reference shares no model code with rocmkit."""

    def __init__(self, vocab: int, seq_len: int, width: int, layers: int, heads: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(seq_len, width)
        self.h = nn.ModuleList(RefBlock(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width, bias=False)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, std=0.02 / (2 * layers) ** 0.5)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        logits: torch.Tensor = self.lm_head(self.ln_f(x))
        return logits


def reference_model(config: TrainConfig) -> tuple[nn.Module, bool]:
    """(the reference's own model, is it an image model); its parameter count must equal
    rocmkit's model of the same config, or the comparison is of different work."""
    m = config.model
    if m.kind == "gpt":
        if m.bias or not m.tie_weights or m.dropout:
            raise SystemExit("the reference GPT is bias-free, tied and without dropout")
        model: nn.Module = RefGPT(m.vocab_size, m.seq_len, m.d_model, m.n_layer, m.n_head)
    else:
        import torchvision

        model = torchvision.models.get_model(m.arch, weights=None, num_classes=m.num_classes)
    ours = sum(p.numel() for p in build_model(config.model).module.parameters())
    theirs = sum(p.numel() for p in model.parameters())
    if ours != theirs:
        raise SystemExit(f"reference has {theirs:,} parameters, rocmkit's model {ours:,}")
    return model, m.kind != "gpt"


def reference_batches(config: TrainConfig, device: torch.device, image: bool) -> list[Any]:
    """The reference's own synthetic data: random tokens (next-token labels) or random images
    with random labels, made once on the device."""
    m, batch = config.model, config.train.micro_batch
    generator = torch.Generator(device="cpu").manual_seed(1234)
    batches = []
    for _ in range(4):
        if image:
            x = torch.randn(batch, 3, m.image_size, m.image_size, generator=generator)
            y = torch.randint(0, m.num_classes, (batch,), generator=generator)
        else:
            tokens = torch.randint(0, m.vocab_size, (batch, m.seq_len + 1), generator=generator)
            x, y = tokens[:, :-1], tokens[:, 1:]
        batches.append((x.to(device), y.to(device)))
    return batches


@contextlib.contextmanager
def reference_backend(device: torch.device) -> Iterator[None]:
    """The GPU settings a strong engineer sets (rocmkit sets the same ones in train/device.py):
    TF32/XF32 fp32 matmuls and convolutions, cuDNN/MIOpen benchmark mode. Nothing on a CPU."""
    if device.type != "cuda":
        yield
        return
    saved = (torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark,
             torch.backends.cudnn.allow_tf32)  # fmt: skip
    torch.set_float32_matmul_precision("high")
    torch.backends.cudnn.benchmark = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved[0])
        torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = saved[1:]


def reference_run(config: TrainConfig, device: torch.device, warmup: int, steps: int) -> Timing:
    """The hand-written loop (see the module docstring): its own model, data and optimizer."""
    train_cfg = config.train
    torch.manual_seed(train_cfg.seed)
    model, image = reference_model(config)
    model = model.to(device)
    channels_last = image and device.type == "cuda"
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": train_cfg.weight_decay}, {"params": rest}],
        lr=train_cfg.lr,
        betas=(train_cfg.beta1, train_cfg.beta2),
        fused=device.type == "cuda",
        foreach=device.type != "cuda",
    )
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(config.precision.dtype)
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    batches = reference_batches(config, device, image)
    if channels_last:
        batches = [(x.contiguous(memory_format=torch.channels_last), y) for x, y in batches]

    def loss_of(inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            logits = model(inputs)
            return F.cross_entropy(logits.flatten(0, -2), labels.flatten())

    step_fn = torch.compile(loss_of) if train_cfg.compile else loss_of
    log_every = config.logging.log_every
    start = 0.0
    _reset_peak(device)
    with reference_backend(device):
        for step in range(warmup + steps):
            if step == warmup:
                _sync(device)
                start = _clock(device)
            inputs, labels = batches[step % len(batches)]
            loss = step_fn(inputs, labels)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.grad_clip or float("inf"))
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            if (step + 1) % log_every == 0:
                loss.item()  # what any loop does to log
        _sync(device)
        return Timing((_clock(device) - start) / steps, _peak(device))


def rocmkit_run(config: TrainConfig, device: torch.device, warmup: int, steps: int) -> Timing:
    """rocmkit's `train()`, timed between the sync points at the end of warm-up and the end."""
    stamps: dict[int, float] = {}

    def on_step(metrics: Any) -> None:
        if metrics.step in (warmup, warmup + steps):
            stamps[metrics.step] = _clock(device)

    _reset_peak(device)
    train(config, callbacks=[on_step])
    return Timing((stamps[warmup + steps] - stamps[warmup]) / steps, _peak(device))


def _config(preset: str, settings: dict[str, Any], run_dir: Path, steps: int, log_every: int,
            precision: str, device: torch.device) -> TrainConfig:  # fmt: skip
    overrides = {
        **{k: str(v) for k, v in settings.items()},
        "train.steps": str(steps),
        "train.warmup": "2",
        "train.device": device.type,
        "precision.dtype": precision,
        "logging.log_every": str(log_every),
        "logging.run_dir": str(run_dir),
        "checkpoint.every": "0",
        "checkpoint.save_final": "false",
    }
    return load_train_config(preset=preset, overrides=overrides)


def compare(
    name: str, args: argparse.Namespace, device: torch.device, tmp: Path, run: ResultRun
) -> None:
    preset, settings = (GPU_CASES if device.type == "cuda" else CPU_CASES)[name]
    settings = {**settings, **({"train.compile": "false"} if args.no_compile else {})}
    precision = args.precision or ("bf16" if device.type == "cuda" else "fp32")
    total = args.warmup + args.steps
    config = _config(preset, settings, tmp / name, total, args.log_every, precision, device)
    ours: list[Timing] = []
    theirs: list[Timing] = []
    for _ in range(args.repeats):
        ours.append(rocmkit_run(config, device, args.warmup, args.steps))
        theirs.append(reference_run(config, device, args.warmup, args.steps))
    ours_s = statistics.median(t.step_s for t in ours)
    theirs_s = statistics.median(t.step_s for t in theirs)
    per_step = config.train.micro_batch * (config.model.seq_len if name == "gpt" else 1)
    unit = "tok" if name == "gpt" else "img"
    print(f"\n{name}: preset {preset} {precision}, micro-batch {config.train.micro_batch}, "
          f"compile {config.train.compile}, {args.steps} timed steps x {args.repeats} runs each")  # fmt: skip
    for label, value, runs in (("reference", theirs_s, theirs), ("rocmkit", ours_s, ours)):
        peak = runs[-1].peak_bytes
        memory = f", peak {peak / 2**30:.2f} GiB" if peak is not None else ""
        print(
            f"  {label:9s} {value * 1e3:9.2f} ms/step  {per_step / value:12,.0f} {unit}/s{memory}"
        )
    data_s = data_time(config, device)
    print(f"  data source {data_s * 1e3:.3f} ms/micro-batch on {device.type} "
          f"({100 * data_s / ours_s:.2f}% of rocmkit's step: it cannot bind the run)")  # fmt: skip
    print(f"  step-time ratio rocmkit/reference: {ours_s / theirs_s:.3f} (goal <= 1.03)")
    clock = "wall" if device.type == "cuda" else "process"
    key = f"{name}_{precision}"
    for label, runs in (("reference", theirs), ("rocmkit", ours)):
        run.add(f"{key}.{label}_ms_per_step", [t.step_s * 1e3 for t in runs], unit="ms",
                clock=clock, higher_is_better=False)  # fmt: skip
    run.add(
        f"{key}.rocmkit_over_reference",
        ratios([t.step_s for t in ours], [t.step_s for t in theirs]),
        unit="x",
        clock=clock,
        baseline="reference loop",
        higher_is_better=False,
    )


def data_time(config: TrainConfig, device: torch.device, batches: int = 20) -> float:
    """Time to make one micro-batch with rocmkit's data source on `device` (same clock)."""
    data = build_data(config.data, config.model)
    kwargs = {"micro_batch_size": config.train.micro_batch, "grad_accum": 1, "rank": 0,
              "world_size": 1, "device": device}  # fmt: skip
    data.get_batch(step=0, micro_step=0, **kwargs)
    _sync(device)
    start = _clock(device)
    for step in range(batches):
        data.get_batch(step=step, micro_step=0, **kwargs)
    _sync(device)
    return (_clock(device) - start) / batches


def compare_loss_impls(args: argparse.Namespace, device: torch.device, tmp: Path) -> None:
    """GPT head + loss: plain vs chunked, eager and compiled (speed; memory on GPU)."""
    preset, settings = (GPU_CASES if device.type == "cuda" else CPU_CASES)["gpt"]
    precision = args.precision or ("bf16" if device.type == "cuda" else "fp32")
    print("\nGPT head + loss paths (rocmkit train):")
    for compile_ in ("false", "true"):
        for impl in ("plain", "chunked"):
            case = {**settings, "train.compile": compile_, "model.loss_impl": impl}
            config = _config(preset, case, tmp / f"loss-{compile_}-{impl}",
                             args.warmup + args.steps, args.log_every, precision, device)  # fmt: skip
            timing = rocmkit_run(config, device, args.warmup, args.steps)
            peak = timing.peak_bytes
            memory = f", peak {peak / 2**30:.2f} GiB" if peak is not None else ""
            label = f"compile {compile_:5s} {impl:8s}"
            print(f"  {label} {timing.step_s * 1e3:9.2f} ms/step{memory}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="gpt,resnet", help="comma list: gpt,resnet")
    parser.add_argument(
        "--precision", choices=["fp32", "bf16", "fp16"], help="default: bf16 on GPU, fp32 on CPU"
    )
    parser.add_argument("--steps", type=int, default=None, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=None, help="untimed steps (compilation)")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs of each loop")
    parser.add_argument(
        "--log-every", type=int, default=10, help="loss read-back cadence, both loops"
    )
    parser.add_argument("--no-compile", action="store_true", help="eager mode for both loops")
    parser.add_argument("--loss-impls", action="store_true", help="also compare GPT loss paths")
    add_result_args(parser, "train_vs_reference")
    args = parser.parse_args()
    run = ResultRun.start("train_vs_reference", args)
    device = _device()
    gpu = device.type == "cuda"
    args.steps = args.steps or (50 if gpu else 20)
    args.warmup = args.warmup or (args.log_every if not gpu else 2 * args.log_every)
    if args.warmup % args.log_every or args.steps % args.log_every:
        parser.error("--warmup and --steps must be multiples of --log-every (timing points)")
    name = torch.cuda.get_device_name(device) if gpu else "CPU (times are process CPU time)"
    print(f"device: {name}; torch {torch.__version__}; threads {torch.get_num_threads()}")
    with tempfile.TemporaryDirectory(prefix="rocmkit-vs-ref-") as tmp:
        for model in args.models.split(","):
            compare(model.strip(), args, device, Path(tmp), run)
        if args.loss_impls:
            compare_loss_impls(args, device, Path(tmp))
    run.finish()


if __name__ == "__main__":
    main()
