"""Rules over measurements that name one concrete change and the number that triggered it.

Every rule looks only at evidence it was given: a missing measurement means the rule stays silent
(no hint without evidence). Thresholds live in `THRESHOLDS` so they can be read and tuned in one
place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rocmkit.profile.estimator import MemoryEstimate
from rocmkit.profile.summary import TraceSummary

THRESHOLDS: dict[str, float] = {
    "tiny_kernel_us": 10.0,  # mean device kernel (or host op) time below this is launch-bound
    "many_kernels_per_step": 300,  # ... when there are at least this many per step
    "data_share": 0.25,  # share of step time spent waiting for the next batch
    "skipped_share": 0.05,  # fp16 steps skipped by the loss scaler (overflow)
    "memory_near_limit": 0.90,  # peak / device memory
    "low_mfu": 0.25,  # model FLOPs utilisation
    "small_batch_tokens": 16_384,  # tokens per micro-batch below which the GPU is starved
    "memory_headroom": 0.60,  # peak / device memory under which a bigger batch fits
}


@dataclass(frozen=True, kw_only=True)
class Hint:
    """A change to make, and the measured number that calls for it."""

    rule: str
    change: str
    evidence: str
    value: float
    threshold: float


@dataclass(frozen=True, kw_only=True)
class HintInputs:
    """Whatever was measured; every field may be absent."""

    trace: TraceSummary | None = None
    precision: str | None = None
    num_steps: int | None = None
    num_skipped_steps: int | None = None
    peak_memory_bytes: int | None = None
    device_memory_bytes: int | None = None
    activation_checkpointing: bool | None = None
    parallel: str | None = None
    world_size: int = 1
    mfu: float | None = None
    micro_batch: int | None = None
    tokens_per_sample: int | None = None
    data_time_s: float | None = None  # total time spent fetching batches
    step_time_s: float | None = None  # total time of the same steps
    estimate: MemoryEstimate | None = None
    thresholds: dict[str, float] = field(default_factory=lambda: dict(THRESHOLDS))


Rule = Callable[[HintInputs], "Hint | None"]


def attention_math_fallback(inputs: HintInputs) -> Hint | None:
    trace = inputs.trace
    count = trace.sdpa_backends.get("math", 0) if trace else 0
    if not count:
        return None
    return Hint(
        rule="attention-math-fallback",
        change=(
            "scaled_dot_product_attention ran its math kernel: use fp16/bf16 inputs, a head "
            "dimension that is a multiple of 8 (<= 256), is_causal=True instead of a dense mask, "
            "and no attention dropout, so the flash or memory-efficient kernel is chosen"
        ),
        evidence=f"{count} math-kernel attention call(s) per step",
        value=float(count),
        threshold=1.0,
    )


def many_tiny_kernels(inputs: HintInputs) -> Hint | None:
    trace = inputs.trace
    if trace is None or trace.kernels_per_step is None or not trace.kernels_per_step:
        return None
    limits = inputs.thresholds
    busy_us = sum(t for name, t in trace.category_time_us.items() if name != "idle")
    mean_us = busy_us / trace.kernels_per_step
    if (
        trace.kernels_per_step < limits["many_kernels_per_step"]
        or mean_us >= limits["tiny_kernel_us"]
    ):
        return None
    return Hint(
        rule="many-tiny-kernels",
        change=(
            "the GPU runs many short kernels: fuse them with torch.compile "
            "(--train.compile true) or use CUDA/HIP graphs"
        ),
        evidence=f"{trace.kernels_per_step:.0f} kernels per step, {mean_us:.1f} us each on average",
        value=mean_us,
        threshold=limits["tiny_kernel_us"],
    )


def data_loading_dominates(inputs: HintInputs) -> Hint | None:
    if inputs.data_time_s is None or not inputs.step_time_s:
        return None
    share = inputs.data_time_s / inputs.step_time_s
    if share < inputs.thresholds["data_share"]:
        return None
    return Hint(
        rule="data-loading",
        change=(
            "the step waits for data: pre-tokenize into a memory-mapped file, load in background "
            "workers (DataLoader num_workers, pin_memory) or prefetch the next batch"
        ),
        evidence=f"{100 * share:.0f}% of step time spent fetching batches",
        value=share,
        threshold=inputs.thresholds["data_share"],
    )


def fp16_skipped_steps(inputs: HintInputs) -> Hint | None:
    if inputs.precision != "fp16" or not inputs.num_steps or inputs.num_skipped_steps is None:
        return None
    share = inputs.num_skipped_steps / inputs.num_steps
    if share < inputs.thresholds["skipped_share"]:
        return None
    return Hint(
        rule="fp16-skipped-steps",
        change=(
            "the fp16 loss scaler keeps overflowing: train in bf16 (--precision.dtype bf16) or "
            "start from a lower loss scale"
        ),
        evidence=f"{inputs.num_skipped_steps} of {inputs.num_steps} steps skipped ({100 * share:.0f}%)",
        value=share,
        threshold=inputs.thresholds["skipped_share"],
    )


def memory_near_limit(inputs: HintInputs) -> Hint | None:
    if not inputs.peak_memory_bytes or not inputs.device_memory_bytes:
        return None
    share = inputs.peak_memory_bytes / inputs.device_memory_bytes
    if share < inputs.thresholds["memory_near_limit"]:
        return None
    return Hint(
        rule="memory-near-limit",
        change=_memory_change(inputs),
        evidence=(
            f"peak {inputs.peak_memory_bytes / 2**30:.1f} GiB of "
            f"{inputs.device_memory_bytes / 2**30:.1f} GiB ({100 * share:.0f}%)"
        ),
        value=share,
        threshold=inputs.thresholds["memory_near_limit"],
    )


def _memory_change(inputs: HintInputs) -> str:
    """Name the lever that frees the largest part, when the breakdown is known."""
    estimate = inputs.estimate
    states_dominate = False
    if estimate is not None:
        states = estimate.parameters_bytes + estimate.gradients_bytes + estimate.optimizer_bytes
        states_dominate = states > estimate.activations_bytes
    if states_dominate and inputs.world_size > 1 and inputs.parallel not in ("fsdp", "zero3"):
        return "shard parameters, gradients and optimizer state with FSDP (--parallel.mode fsdp)"
    if not inputs.activation_checkpointing:
        return (
            "turn on activation checkpointing (--train.activation_checkpointing true), or halve "
            "the micro-batch and double gradient accumulation"
        )
    return "halve the micro-batch and double gradient accumulation (--train.grad_accum)"


def low_mfu_small_batch(inputs: HintInputs) -> Hint | None:
    if inputs.mfu is None or not inputs.micro_batch:
        return None
    limits = inputs.thresholds
    tokens = inputs.micro_batch * (inputs.tokens_per_sample or 1)
    if inputs.mfu >= limits["low_mfu"] or tokens >= limits["small_batch_tokens"]:
        return None
    used = _memory_share(inputs)
    if used is not None and used > limits["memory_headroom"]:
        return None  # no room for a bigger batch: another rule speaks to memory
    return Hint(
        rule="low-mfu-small-batch",
        change=(
            f"MFU is low with {tokens} tokens per micro-batch: raise --train.micro_batch "
            "(and lower grad_accum to keep the global batch)"
        ),
        evidence=f"MFU {100 * inputs.mfu:.0f}% with micro-batch {inputs.micro_batch}",
        value=inputs.mfu,
        threshold=limits["low_mfu"],
    )


def _memory_share(inputs: HintInputs) -> float | None:
    if not inputs.peak_memory_bytes or not inputs.device_memory_bytes:
        return None
    return inputs.peak_memory_bytes / inputs.device_memory_bytes


RULES: tuple[Rule, ...] = (
    attention_math_fallback,
    many_tiny_kernels,
    data_loading_dominates,
    fp16_skipped_steps,
    memory_near_limit,
    low_mfu_small_batch,
)


def hints(inputs: HintInputs, rules: tuple[Rule, ...] = RULES) -> list[Hint]:
    """Every hint whose rule finds its evidence in `inputs`."""
    return [hint for rule in rules if (hint := rule(inputs)) is not None]
