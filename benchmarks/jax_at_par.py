"""rocmkit's JAX backend against a plain jitted JAX + Optax loop written here, same GPT, same optimizer.

The reference is what a JAX engineer writes without rocmkit: its own functional GPT (pre-norm, learned
positions, exact GELU MLP of width 4d, `jax.nn.dot_product_attention`, tied head, no biases, GPT-2
init; the parameter count is checked equal to rocmkit's), AdamW with warmup + cosine and global-norm
clipping from Optax, the whole step in one `jax.jit` with parameters and optimizer state donated, a
pool of batches already on the device, and the loss read every 10 steps. rocmkit runs through its
public `rocmkit.jaxtrain.train()` with checkpoints off. The two alternate in one process (reference,
rocmkit, reference, ...), each run compiled and warmed up before it is timed; the clock is process
CPU time on a CPU (XLA's thread pool included; run with OMP_NUM_THREADS=1 on a shared machine),
wall time on a GPU; XLA runs one CPU thread for both unless XLA_FLAGS is set. The figure is milliseconds per step and the ratio rocmkit / reference per round.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/jax_at_par.py [--precision bf16]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

# One XLA CPU thread for both loops unless XLA_FLAGS says otherwise: on a shared machine a busy
# Eigen pool charges contention to the process's CPU time (as OMP_NUM_THREADS=1 does for torch).
SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
if "XLA_FLAGS" not in os.environ:
    os.environ["XLA_FLAGS"] = SINGLE_THREAD_XLA

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resultfile import ResultRun, add_result_args, ratios  # noqa: E402

from rocmkit.train import load_train_config  # noqa: E402
from rocmkit.train.config import TrainConfig  # noqa: E402

# gpt-tiny as shipped, and a larger one: twice the width and the sequence, 8x the vocabulary
# (jax_vs_torch.py's larger shape).
SHAPES: dict[str, dict[str, int]] = {
    "gpt-tiny": {"vocab_size": 256, "seq_len": 64, "d_model": 64, "n_layer": 2, "n_head": 2},
    "gpt-d128": {"vocab_size": 2048, "seq_len": 128, "d_model": 128, "n_layer": 2, "n_head": 2},
}
DTYPES = {"fp32": jnp.float32, "bf16": jnp.bfloat16}
READ_EVERY = 10  # the reference reads its loss every 10 steps, rocmkit logs every 10
POOL = 8  # distinct batches the reference keeps on the device


def _on_gpu() -> bool:
    return jax.default_backend() != "cpu"


def _clock() -> float:
    return time.perf_counter() if _on_gpu() else time.process_time()


# --- the reference: a plain functional GPT and one jitted step ------------------------------------


def init_params(key: jax.Array, shape: dict[str, int]) -> dict[str, Any]:
    d, layers = shape["d_model"], shape["n_layer"]
    keys = iter(jax.random.split(key, 2 + 4 * layers))
    std, residual_std = 0.02, 0.02 / math.sqrt(2 * layers)

    def normal(rows: int, cols: int, scale: float) -> jax.Array:
        return scale * jax.random.normal(next(keys), (rows, cols), jnp.float32)

    blocks = [
        {
            "ln1": jnp.ones(d),
            "qkv": normal(d, 3 * d, std),
            "attn_out": normal(d, d, residual_std),
            "ln2": jnp.ones(d),
            "fc": normal(d, 4 * d, std),
            "mlp_out": normal(4 * d, d, residual_std),
        }
        for _ in range(layers)
    ]
    return {
        "wte": normal(shape["vocab_size"], d, std),
        "wpe": normal(shape["seq_len"], d, std),
        "blocks": blocks,
        "ln_f": jnp.ones(d),
    }


def _layer_norm(x: jax.Array, scale: jax.Array) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = jnp.square(x - mean).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale


def forward(params: dict[str, Any], ids: jax.Array, n_head: int, dtype: Any) -> jax.Array:
    """fp32 residual stream and LayerNorm, matmuls in `dtype`, fp32 logits out."""
    batch, time_len = ids.shape
    x = params["wte"][ids] + params["wpe"][:time_len]
    for block in params["blocks"]:
        h = _layer_norm(x, block["ln1"]).astype(dtype)
        q, k, v = jnp.split(h @ block["qkv"].astype(dtype), 3, axis=-1)
        q, k, v = (t.reshape(batch, time_len, n_head, -1) for t in (q, k, v))
        y = jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(batch, time_len, -1)
        x = x + y @ block["attn_out"].astype(dtype)
        h = _layer_norm(x, block["ln2"]).astype(dtype)
        hidden = jax.nn.gelu(h @ block["fc"].astype(dtype), approximate=False)
        x = x + hidden @ block["mlp_out"].astype(dtype)
    x = _layer_norm(x, params["ln_f"]).astype(dtype)
    logits: jax.Array = (x @ params["wte"].astype(dtype).T).astype(jnp.float32)
    return logits


def make_reference(shape: dict[str, int], train: Any, dtype: Any) -> tuple[Any, Any]:
    """(optimizer, jitted step(params, opt_state, batch) -> (params, opt_state, loss))."""
    schedule = optax.warmup_cosine_decay_schedule(
        init_value=train.lr / train.warmup,
        peak_value=train.lr,
        warmup_steps=train.warmup,
        decay_steps=train.steps,
        end_value=train.lr * train.min_lr_ratio,
    )
    optimizer = optax.chain(
        optax.clip_by_global_norm(train.grad_clip),
        optax.adamw(
            schedule,
            b1=train.beta1,
            b2=train.beta2,
            eps=1e-8,
            weight_decay=train.weight_decay,
            mask=lambda p: jax.tree.map(lambda x: x.ndim >= 2, p),
        ),
    )

    def loss_fn(params: Any, batch: dict[str, jax.Array]) -> jax.Array:
        logits = forward(params, batch["input_ids"], shape["n_head"], dtype)
        losses = optax.softmax_cross_entropy_with_integer_labels(logits, batch["labels"])
        loss: jax.Array = losses.mean()
        return loss

    @partial(jax.jit, donate_argnums=(0, 1))
    def step(params: Any, opt_state: Any, batch: dict[str, jax.Array]) -> tuple[Any, Any, Any]:
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return optimizer, step


def reference_run(shape: dict[str, int], train: Any, dtype: Any, warmup: int, steps: int) -> float:
    """Clock seconds per step of the plain loop over `steps` steps after `warmup`."""
    optimizer, step = make_reference(shape, train, dtype)
    key = jax.random.key(train.seed)
    params = init_params(key, shape)
    opt_state = optimizer.init(params)
    tokens = jax.random.randint(
        jax.random.fold_in(key, 1),
        (POOL, train.micro_batch, shape["seq_len"] + 1),
        0,
        shape["vocab_size"],
    )
    pool = [{"input_ids": t[:, :-1], "labels": t[:, 1:]} for t in tokens]
    start = 0.0
    for i in range(warmup + steps):
        params, opt_state, loss = step(params, opt_state, pool[i % POOL])
        if (i + 1) % READ_EVERY == 0:
            assert math.isfinite(float(loss))
            if i + 1 == warmup:
                start = _clock()
    return (_clock() - start) / steps


def reference_param_count(shape: dict[str, int]) -> int:
    params = jax.eval_shape(lambda key: init_params(key, shape), jax.random.key(0))
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(params))


# --- rocmkit ----------------------------------------------------------------------------------


def rocmkit_config(shape: dict[str, int], args: argparse.Namespace, run_dir: Path) -> TrainConfig:
    overrides = {f"model.{k}": str(v) for k, v in shape.items()}
    overrides.update(
        {
            "train.micro_batch": "8",
            "train.grad_accum": "1",
            "train.steps": str(args.warmup + args.steps),
            "precision.dtype": args.precision,
            "logging.log_every": str(READ_EVERY),
            "logging.run_dir": str(run_dir),
            "checkpoint.every": "0",
            "checkpoint.save_final": "false",
        }
    )
    return load_train_config(preset="gpt-tiny", overrides=overrides)


def rocmkit_run(config: TrainConfig, warmup: int, steps: int) -> float:
    """Clock seconds per step of rocmkit's JAX loop between its sync points at the two ends."""
    from rocmkit.jaxtrain import train

    stamps: dict[int, float] = {}

    def on_step(metrics: Any) -> None:
        if metrics.step in (warmup, warmup + steps):
            stamps[metrics.step] = _clock()

    train(config, callbacks=[on_step], handle_signals=False)
    return (stamps[warmup + steps] - stamps[warmup]) / steps


def rocmkit_param_count(config: TrainConfig) -> int:
    from rocmkit.jaxtrain.loop import init_model
    from rocmkit.jaxtrain.precision import build_policy

    policy = build_policy(config.precision)
    _, params = init_model(config, policy, None, "cpu")  # type: ignore[arg-type]
    return sum(int(leaf.size) for leaf in jax.tree.leaves(params))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shapes", default=",".join(SHAPES), help="comma list of " + ",".join(SHAPES)
    )
    parser.add_argument("--precision", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--steps", type=int, default=30, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds of the two loops")
    add_result_args(parser, "jax_at_par")
    args = parser.parse_args()
    if args.warmup % READ_EVERY or args.steps % READ_EVERY:
        parser.error(f"--warmup and --steps must be multiples of {READ_EVERY} (the read points)")
    run = ResultRun.start("jax_at_par", args)
    run.notes.append(f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r} for both loops")
    clock = "wall" if _on_gpu() else "process"
    unit = "ms/step" if clock == "wall" else "CPU-ms/step"
    with tempfile.TemporaryDirectory(prefix="rocmkit-jax-at-par-") as tmp:
        for name in args.shapes.split(","):
            shape = SHAPES[name]
            config = rocmkit_config(shape, args, Path(tmp) / name)
            counts = (rocmkit_param_count(config), reference_param_count(shape))
            if counts[0] != counts[1]:
                raise SystemExit(
                    f"{name}: rocmkit has {counts[0]} parameters, the reference {counts[1]}"
                )
            times: dict[str, list[float]] = {"reference": [], "rocmkit": []}
            for index in range(args.rounds):
                seconds = reference_run(
                    shape, config.train, DTYPES[args.precision], args.warmup, args.steps
                )
                times["reference"].append(1000 * seconds)
                config = rocmkit_config(shape, args, Path(tmp) / f"{name}-{index}")
                times["rocmkit"].append(1000 * rocmkit_run(config, args.warmup, args.steps))
                print(f"  {name} round {index}: reference {times['reference'][-1]:.2f}, "
                      f"rocmkit {times['rocmkit'][-1]:.2f} {unit}", flush=True)  # fmt: skip
            for loop, values in times.items():
                run.add(f"{name}.{loop}", values, unit=unit, clock=clock, higher_is_better=False)
            ratio = run.add(
                f"{name}.rocmkit_over_reference",
                ratios(times["rocmkit"], times["reference"]),
                unit="x",
                clock=clock,
                baseline="reference",
                higher_is_better=False,
            )
            medians = {loop: statistics.median(v) for loop, v in times.items()}
            print(f"{name} {args.precision} ({counts[0]:,} parameters): reference "
                  f"{medians['reference']:.2f}, rocmkit {medians['rocmkit']:.2f} {unit}, "
                  f"rocmkit / reference {ratio['median']:.3f}x")  # fmt: skip
    run.finish()


if __name__ == "__main__":
    main()
