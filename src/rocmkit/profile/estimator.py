"""Predict the memory of training (or serving) a GPT: parameters, gradients, optimizer, activations.

Pure arithmetic over a `ModelShape`; no torch. The accounting, per rank:

* Parameters, gradients and AdamW state follow the ZeRO paper (Rajbhandari et al., 2020): with
  fp32 parameters (plain fp32 or autocast mixed precision) 4 + 4 + 8 bytes per parameter; with
  low-precision parameters and an fp32 master copy 2 + 2 + (4 + 8). ZeRO-1 shards the optimizer
  state, ZeRO-2 also the gradients, ZeRO-3 (FSDP) also the parameters, over the world size.
* Activations saved for backward per transformer block follow Korthikanti et al. (2022), "Reducing
  Activation Recomputation in Large Transformer Models", Table 2, adapted to fused SDPA/flash
  attention, no dropout: the s*a*s score/softmax terms vanish (flash recomputes them from a
  per-row log-sum-exp) and what is saved is 16 s*b*h elements: two LayerNorm inputs, the QKV input,
  Q/K/V, the attention output, the MLP input, the 4h GELU input and the 4h GELU output.
  Under autocast the residual stream (the LayerNorm inputs) stays fp32: 2*4 + 14*2 = 36 s*b*h
  bytes instead of the paper's 32 (34 with dropout masks).
* Per-block activation checkpointing keeps each block's input and recomputes one block at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from rocmkit.errors import UserError

Precision = Literal["fp32", "fp16", "bf16", "int8"]
Sharding = Literal["none", "ddp", "zero1", "zero2", "zero3"]
Mode = Literal["train", "infer"]

PRECISIONS: tuple[str, ...] = ("fp32", "fp16", "bf16", "int8")
SHARDINGS: tuple[str, ...] = ("none", "ddp", "zero1", "zero2", "zero3")
SHARDING_ALIASES = {"fsdp": "zero3", "single": "none"}

# Bytes per element of the tensors each precision keeps. "compute" is what matmuls read and write.
_COMPUTE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 2}  # int8 weights dequantise to 16-bit
_WEIGHT_BYTES_INFER = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}
_ADAM_STATES = 2  # exp_avg and exp_avg_sq, kept in fp32
_FP32 = 4
_BLOCK_TENSORS_SBH = 14  # s*b*h elements at compute precision saved per block (see module doc)
_RESIDUAL_TENSORS_SBH = 2  # the two LayerNorm inputs, on the residual stream
_FSDP_UNSHARDED_BLOCKS = 2  # the block being computed + the one prefetched


@dataclass(frozen=True, kw_only=True)
class ModelShape:
    """The numbers that size a GPT (nanoGPT layout: pre-LayerNorm blocks, 4h MLP, learned positions)."""

    n_layer: int
    d_model: int
    n_head: int
    seq_len: int
    vocab_size: int
    bias: bool = False
    tie_weights: bool = True
    dropout: float = 0.0

    def __post_init__(self) -> None:
        for name in ("n_layer", "d_model", "n_head", "seq_len", "vocab_size"):
            if getattr(self, name) < 1:
                raise UserError(
                    f"model {name} must be a positive integer (got {getattr(self, name)})"
                )
        if self.d_model % self.n_head:
            raise UserError(f"d_model {self.d_model} must be divisible by n_head {self.n_head}")

    @property
    def block_params(self) -> int:
        h = self.d_model
        # qkv 3h^2 + proj h^2 + fc 4h^2 + out 4h^2, two LayerNorm weights; biases add 9h + 2h.
        return 12 * h * h + 2 * h + (11 * h if self.bias else 0)

    @property
    def num_params(self) -> int:
        h = self.d_model
        embed = self.vocab_size * h + self.seq_len * h
        final_norm = h * (2 if self.bias else 1)
        head = 0 if self.tie_weights else self.vocab_size * h
        return embed + self.n_layer * self.block_params + final_norm + head

    @property
    def matmul_params(self) -> int:
        """Parameters that autocast copies to 16-bit for the forward pass (Linear weights)."""
        h = self.d_model
        head = self.vocab_size * h
        return self.n_layer * 12 * h * h + head


@dataclass(frozen=True, kw_only=True)
class EstimateConfig:
    """What to estimate: one model, precision, sharding and batch on one rank."""

    shape: ModelShape
    precision: Precision = "bf16"
    sharding: Sharding = "none"
    world_size: int = 1
    micro_batch: int = 1
    activation_checkpointing: bool = False
    master_weights: bool = False  # low-precision params with an fp32 master copy (else autocast)
    mode: Mode = "train"
    # rocmkit's chunked head + loss (never whole logits): its eager bf16/fp16 default.
    chunked_loss: bool = False

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise UserError(
                f"precision must be one of {', '.join(PRECISIONS)} (got {self.precision!r})"
            )
        if self.sharding not in SHARDINGS:
            raise UserError(
                f"parallel mode must be one of {', '.join(SHARDINGS)} or fsdp (got {self.sharding!r})"
            )
        if not isinstance(self.world_size, int) or self.world_size < 1:
            raise UserError(f"world size must be a positive integer (got {self.world_size!r})")
        if self.sharding == "none" and self.world_size != 1:
            raise UserError("a world size above 1 needs --parallel ddp, zero1, zero2 or fsdp")
        if self.micro_batch < 1:
            raise UserError(f"micro batch must be a positive integer (got {self.micro_batch})")
        if self.precision == "int8" and self.mode == "train":
            raise UserError("int8 weights are for inference: use --mode infer (or fp32/fp16/bf16)")
        if self.master_weights and self.precision == "fp32":
            raise UserError("--master-weights needs fp16 or bf16 parameters")


@dataclass(frozen=True, kw_only=True)
class MemoryEstimate:
    """Predicted bytes per rank, split the way the chart shows them."""

    config: EstimateConfig
    num_params: int
    parameters_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    notes: tuple[str, ...] = field(default_factory=tuple)
    peak_bytes: int | None = None  # the high point in time (not every category peaks together)

    @property
    def total_bytes(self) -> int:
        return (
            self.parameters_bytes
            + self.gradients_bytes
            + self.optimizer_bytes
            + self.activations_bytes
        )

    @property
    def label(self) -> str:
        cfg = self.config
        label: str = cfg.precision
        if cfg.mode == "infer":
            label += " infer"
        if cfg.sharding != "none":
            label += f" {cfg.sharding} x{cfg.world_size}"
        if cfg.activation_checkpointing:
            label += " +ckpt"
        return label

    def categories(self) -> dict[str, int]:
        return {
            "parameters": self.parameters_bytes,
            "gradients": self.gradients_bytes,
            "optimizer": self.optimizer_bytes,
            "activations": self.activations_bytes,
        }


def normalise_sharding(name: str) -> str:
    """Accept "fsdp" for ZeRO-3 and "single" for no data parallelism."""
    return SHARDING_ALIASES.get(name.lower(), name.lower())


def estimate(config: EstimateConfig) -> MemoryEstimate:
    """Predict per-rank memory for `config` (see the module docstring for the formulas)."""
    if config.mode == "infer":
        return _estimate_inference(config)
    shape = config.shape
    n = shape.num_params
    param_b, grad_b, opt_b = _state_bytes_per_param(config)
    world = config.world_size
    shard = {"none": (1, 1, 1), "ddp": (1, 1, 1), "zero1": (1, 1, world)}
    shard |= {"zero2": (1, world, world), "zero3": (world, world, world)}
    p_div, g_div, o_div = shard[config.sharding]
    notes = []
    params = _ceil_div(n * param_b, p_div)
    grads = _ceil_div(n * grad_b, g_div)
    if config.sharding == "zero3":
        # FSDP all-gathers whole blocks in the compute precision just in time, and reduce-scatters
        # their gradients: a few unsharded blocks live beside the shards.
        compute = _COMPUTE_BYTES[config.precision]
        params += _FSDP_UNSHARDED_BLOCKS * shape.block_params * compute
        grads += shape.block_params * compute
        notes.append(f"zero3 adds {_FSDP_UNSHARDED_BLOCKS} unsharded blocks of parameters")
    activations = training_activation_bytes(config)
    optimizer = _ceil_div(n * opt_b, o_div)
    peak = _training_peak_bytes(config, params, grads, optimizer, activations, o_div)
    if config.precision != "fp32" and not config.master_weights:
        notes.append("autocast: fp32 parameters, 16-bit weight copies counted as activations")
    return MemoryEstimate(
        config=config,
        num_params=n,
        parameters_bytes=params,
        gradients_bytes=grads,
        optimizer_bytes=optimizer,
        activations_bytes=activations,
        notes=tuple(notes),
        peak_bytes=peak,
    )


def _training_peak_bytes(
    config: EstimateConfig, params: int, grads: int, optimizer: int, activations: int, o_div: int
) -> int:
    """The larger of two moments: the start of backward, and the optimizer step.

    At the start of backward the forward's transient logits are gone but cross-entropy's
    backward holds two fp32 vocabulary-sized gradients; gradients do not exist yet (set_to_none).
    During a foreach AdamW step all gradients exist and the update keeps one fp32 temporary per
    (local) parameter.
    """
    shape = config.shape
    sbv = shape.seq_len * config.micro_batch * shape.vocab_size
    compute = _COMPUTE_BYTES[config.precision]
    if config.chunked_loss:
        # Only the stored fp32 gradients of the head remain (counted in activations).
        backward_start = params + optimizer + activations - _chunk_transient_bytes(config)
    else:
        logits_transient = sbv * (compute + (_FP32 if compute != _FP32 else 0))
        backward_start = params + optimizer + activations - logits_transient + 2 * sbv * _FP32
    optimizer_temp = _ceil_div(shape.num_params * _FP32, o_div)
    return max(backward_start, params + grads + optimizer + optimizer_temp)


def _state_bytes_per_param(config: EstimateConfig) -> tuple[int, int, int]:
    """(parameter, gradient, optimizer) bytes per parameter for AdamW."""
    if config.master_weights:
        low = _COMPUTE_BYTES[config.precision]
        return low, low, _FP32 + _ADAM_STATES * _FP32
    return _FP32, _FP32, _ADAM_STATES * _FP32


def block_activation_bytes(config: EstimateConfig) -> int:
    """Bytes one transformer block saves for backward (Korthikanti et al., flash-attention form)."""
    shape = config.shape
    s, b, h, a = shape.seq_len, config.micro_batch, shape.d_model, shape.n_head
    compute = _COMPUTE_BYTES[config.precision]
    residual = compute if config.master_weights else _FP32
    sbh = s * b * h
    saved = sbh * (_RESIDUAL_TENSORS_SBH * residual + _BLOCK_TENSORS_SBH * compute)
    # LayerNorm mean + rstd (fp32 per row, two norms) and the attention log-sum-exp (fp32 per head/row).
    saved += 2 * 2 * s * b * _FP32 + a * s * b * _FP32
    if shape.dropout > 0:
        saved += 2 * sbh  # two residual dropout masks (1 byte each); flash regenerates its own
    return saved


def _autocast_weight_copy_bytes(config: EstimateConfig, *, num_blocks: int, head: bool) -> int:
    """16-bit copies of Linear weights that autocast caches for the whole forward pass."""
    if config.precision == "fp32" or config.master_weights:
        return 0
    shape = config.shape
    compute = _COMPUTE_BYTES[config.precision]
    blocks = num_blocks * 12 * shape.d_model * shape.d_model * compute
    return blocks + (shape.vocab_size * shape.d_model * compute if head else 0)


def _chunk_transient_bytes(config: EstimateConfig) -> int:
    """Chunked loss: one chunk's logits (16-bit and fp32), its fp32 softmax gradient and 16-bit
    copy, and the 16-bit copy of the head weight, alive while the head runs."""
    shape = config.shape
    v, h = shape.vocab_size, shape.d_model
    compute = _COMPUTE_BYTES[config.precision]
    rows = min(shape.seq_len * config.micro_batch, max(16, (256 << 20) // (_FP32 * v)))
    return rows * v * (2 * compute + 2 * _FP32) + v * h * compute


def head_activation_bytes(config: EstimateConfig) -> int:
    """Final LayerNorm, LM head input, fp32 log-softmax and the logits alive while it is computed."""
    shape = config.shape
    s, b, h, v = shape.seq_len, config.micro_batch, shape.d_model, shape.vocab_size
    compute = _COMPUTE_BYTES[config.precision]
    residual = compute if config.master_weights else _FP32
    if config.chunked_loss:
        # Saved: the final LayerNorm's input and the head's fp32 input and weight gradients.
        saved = s * b * h * residual + s * b * h * _FP32 + v * h * _FP32 + 2 * s * b * _FP32
        return saved + _chunk_transient_bytes(config)
    # Cross-entropy runs in fp32 (autocast too) and saves an fp32 log-softmax; while it runs, the
    # logits (and under autocast their fp32 copy) are alive beside it: the forward's high point.
    logits = s * b * v * (compute + (_FP32 if compute != _FP32 else 0))
    return s * b * h * (residual + compute) + s * b * v * _FP32 + logits + 2 * s * b * _FP32


def training_activation_bytes(config: EstimateConfig) -> int:
    """Activations saved for backward, at their high point, per rank.

    Without checkpointing that is the end of the forward pass. With per-block checkpointing the
    block inputs stay, and the high point is either the LM head's saved tensors (end of forward)
    or one recomputed block during backward, whichever is larger.
    """
    shape = config.shape
    block = block_activation_bytes(config)
    head = head_activation_bytes(config)
    # The autocast cache holds every Linear weight's 16-bit copy until the forward's autocast
    # region exits, checkpointed blocks included.
    copies = _autocast_weight_copy_bytes(config, num_blocks=shape.n_layer, head=True)
    if not config.activation_checkpointing:
        return shape.n_layer * block + head + copies
    residual = _COMPUTE_BYTES[config.precision] if config.master_weights else _FP32
    block_inputs = shape.n_layer * shape.seq_len * config.micro_batch * shape.d_model * residual
    recomputed = block + _autocast_weight_copy_bytes(config, num_blocks=1, head=False)
    return block_inputs + copies + max(head, recomputed)


def _estimate_inference(config: EstimateConfig) -> MemoryEstimate:
    shape = config.shape
    weight_b = _WEIGHT_BYTES_INFER[config.precision]
    compute = _COMPUTE_BYTES[config.precision]
    s, b, h = shape.seq_len, config.micro_batch, shape.d_model
    kv_cache = 2 * shape.n_layer * s * b * h * compute
    # Prefill working set of one block (QKV + 4h MLP hidden) and last-token fp32 logits.
    working = 8 * s * b * h * compute + b * shape.vocab_size * _FP32
    params = _ceil_div(shape.num_params * weight_b, config.world_size)
    return MemoryEstimate(
        config=config,
        num_params=shape.num_params,
        parameters_bytes=params,
        gradients_bytes=0,
        optimizer_bytes=0,
        activations_bytes=kv_cache + working,
        notes=("inference: activations are the KV cache for the full context plus one block",),
    )


def _ceil_div(value: int, divisor: int) -> int:
    return -(-value // divisor)


def chart_configs(base: EstimateConfig, *, world_size: int = 8) -> list[EstimateConfig]:
    """The guide's chart: fp32, fp16, bf16 training, int8 inference, and bf16 ZeRO-3 over N ranks."""
    single = replace(base, sharding="none", world_size=1, mode="train", master_weights=False)
    return [
        replace(single, precision="fp32"),
        replace(single, precision="fp16"),
        replace(single, precision="bf16"),
        replace(single, precision="int8", mode="infer"),
        replace(single, precision="bf16", sharding="zero3", world_size=world_size),
    ]
