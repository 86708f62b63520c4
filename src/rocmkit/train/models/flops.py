"""Training FLOPs measured by torch's FLOP counter on a fake (shape-only) copy of a model.

The copy is built under FakeTensorMode, so the measurement allocates no parameter memory, draws
nothing from the random generators and cannot touch the real model's state (BatchNorm running
statistics, .grad). Only matmuls and convolutions are counted, the same convention as the
6N + 12*L*H*d_head*T estimate: norms, softmax and activations are left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count


# torch's counter knows the CUDA/ROCm SDPA kernels but not the fused CPU one that fake CPU tensors
# dispatch to; without these two entries attention would count as zero FLOPs on CPU.
def _cpu_sdpa_forward(
    query: Any, key: Any, value: Any, *args: Any, out_shape: Any = None, **kwargs: Any
) -> int:
    return sdpa_flop_count(query, key, value)  # type: ignore[no-any-return]


def _cpu_sdpa_backward(
    grad_out: Any,
    query: Any,
    key: Any,
    value: Any,
    *args: Any,
    out_shape: Any = None,
    **kwargs: Any,
) -> int:
    return sdpa_backward_flop_count(grad_out, query, key, value)  # type: ignore[no-any-return]


def _cpu_sdpa_formulas() -> dict[Any, Any]:
    aten = torch.ops.aten
    if not hasattr(aten, "_scaled_dot_product_flash_attention_for_cpu"):
        return {}
    return {
        aten._scaled_dot_product_flash_attention_for_cpu: _cpu_sdpa_forward,
        aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_sdpa_backward,
    }


def measure_training_flops(
    make_module: Callable[[], torch.nn.Module],
    make_input: Callable[[], torch.Tensor],
    forward: Callable[[torch.nn.Module, torch.Tensor], torch.Tensor],
) -> float:
    """FLOPs of one forward + backward pass of `forward(make_module(), make_input())`."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with torch.random.fork_rng(devices=[]), FakeTensorMode(allow_non_fake_inputs=True):
        module = make_module()
        # eval(): BatchNorm refuses one sample per channel in train mode, and dropout
        # changes no FLOPs; gradients still flow for the backward count.
        module.eval()
        inputs = make_input()
        with FlopCounterMode(display=False, custom_mapping=_cpu_sdpa_formulas()) as counter:
            output = forward(module, inputs)
            output.float().sum().backward()
    return float(counter.get_total_flops())
