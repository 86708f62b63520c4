"""Mixed precision policies: fp32, bf16 autocast, fp16 autocast with dynamic loss scaling.

A policy owns three things the loop needs: the autocast context of the forward pass, the
backward (scaled or not), and the optimizer step (which fp16 may skip on overflow). Policies are
registered by name with `rocmkit.train.config.register_precision` (the registry lives beside
PrecisionConfig so that configs are checked without importing torch); fp8 is the intended next
entry: a `PrecisionPolicy` subclass whose `prepare_model` swaps the model's Linear layers for
scaled-fp8 ones (e.g. torchao's float8 training) and keeps the bf16 autocast around the rest.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from rocmkit.train.config import PrecisionConfig, precision_spec
from rocmkit.train.models import resolve_reference

_AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
# torch.amp.GradScaler's defaults, named here so the docs and the warning can point at them.
DEFAULT_LOSS_SCALE = 2.0**16
DEFAULT_GROWTH_INTERVAL = 2000


class PrecisionPolicy:
    """fp32 (no autocast) and the base of the mixed policies."""

    name = "fp32"
    uses_loss_scaling = False

    def __init__(self, config: PrecisionConfig, device_type: str) -> None:
        self.config = config
        self.device_type = device_type

    def prepare_model(self, module: torch.nn.Module) -> torch.nn.Module:
        """Hook for formats that change the model (fp8 layers); identity otherwise."""
        return module

    @contextlib.contextmanager
    def autocast(self) -> Iterator[None]:
        yield

    def backward(self, loss: torch.Tensor) -> None:
        torch.autograd.backward(loss)  # Tensor.backward is untyped in torch's stubs

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        """Bring gradients to their true scale before clipping (no-op without scaling)."""

    def step(self, optimizer: torch.optim.Optimizer) -> torch.Tensor | None:
        """Run the optimizer step; return a device flag, true when it was skipped (fp16 overflow),
        or None for policies that never skip. Reading the flag is left to the caller."""
        optimizer.step()
        return None

    def scale_tensor(self) -> torch.Tensor | None:
        """The loss scale after the last step, as a device scalar (None without scaling)."""
        return None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        del state


class AutocastPolicy(PrecisionPolicy):
    """bf16: autocast only; bf16 has fp32's exponent range, so no loss scaling is needed."""

    name = "bf16"

    @contextlib.contextmanager
    def autocast(self) -> Iterator[None]:
        with torch.autocast(self.device_type, dtype=_AUTOCAST_DTYPES[self.name]):
            yield


class Fp16Policy(AutocastPolicy):
    """fp16: autocast plus torch.amp.GradScaler; overflowing steps are skipped and counted."""

    name = "fp16"
    uses_loss_scaling = True

    def __init__(self, config: PrecisionConfig, device_type: str) -> None:
        super().__init__(config, device_type)
        self.scaler = torch.amp.GradScaler(
            device_type,
            init_scale=config.loss_scale_init or DEFAULT_LOSS_SCALE,
            growth_interval=config.loss_scale_growth_interval or DEFAULT_GROWTH_INTERVAL,
        )

    def backward(self, loss: torch.Tensor) -> None:
        torch.autograd.backward(self.scaler.scale(loss))

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer) -> torch.Tensor | None:
        # GradScaler skips optimizer.step when it found inf/nan gradients and then lowers the
        # scale; a lower scale after update() is the sign of a skipped step. The comparison stays
        # on the device: get_scale() would wait for the GPU. (With a fused optimizer, the GPU
        # default, GradScaler.step itself does not wait either: the optimizer reads found_inf.)
        before = self._scale_device()
        before = before.clone() if before is not None else None
        self.scaler.step(optimizer)
        self.scaler.update()
        after = self._scale_device()
        if before is None or after is None:
            return None
        return after < before

    def _scale_device(self) -> torch.Tensor | None:
        scale = getattr(self.scaler, "_scale", None)
        return scale if isinstance(scale, torch.Tensor) else None

    def scale_tensor(self) -> torch.Tensor | None:
        scale = self._scale_device()
        return scale.clone() if scale is not None else None

    @property
    def loss_scale(self) -> float:
        return float(self.scaler.get_scale())

    def state_dict(self) -> dict[str, Any]:
        return {"scaler": self.scaler.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])


def build_precision(config: PrecisionConfig, device_type: str) -> PrecisionPolicy:
    """The registered policy for `config.dtype` on a device type ("cuda" or "cpu")."""
    policy = resolve_reference(precision_spec(config.dtype).policy)(config, device_type)
    if not isinstance(policy, PrecisionPolicy):
        raise TypeError(f"precision {config.dtype!r} must build a PrecisionPolicy, not {policy!r}")
    return policy


def fsdp_param_dtype(config: PrecisionConfig) -> torch.dtype | None:
    """Parameter dtype for FSDP2's MixedPrecisionPolicy (None keeps fp32 parameters)."""
    return torch.bfloat16 if config.param_dtype == "bf16" else None


def peak_dtype_name(config: PrecisionConfig) -> str:
    """The hardware-facts dtype whose peak bounds this run's matmuls (for MFU).

    An fp32 run on a GPU multiplies in TF32/XF32 unless precision.strict_fp32 (train.device), so
    its bound is the tf32 peak: against the CUDA-core fp32 peak an H200 showed 189 % MFU.
    peak_flops_per_device falls back to fp32 on chips without TF32/XF32.
    """
    name = precision_spec(config.dtype).peak_dtype
    return "tf32" if name == "fp32" and not config.strict_fp32 else name
