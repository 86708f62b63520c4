"""Which bucket an operator or kernel name belongs to: rules kept as data, first match wins.

Names come from torch.profiler traces: host operators ("aten::addmm", "c10d::allreduce_") and
device kernels (hipBLASLt "Cijk_Ailk_Bljk_...", cuBLAS "sm90_xmma_gemm_...", "ncclDevKernel_...",
"void at::native::vectorized_elementwise_kernel<...>", flash/CK "fmha_fwd...").
"""

from __future__ import annotations

import re
from functools import cache

CATEGORIES: tuple[str, ...] = (
    "gemm",
    "attention",
    "communication",
    "elementwise",
    "normalization",
    "copy",
    "other",
)

# (category, regular expression on the lower-cased name). Order matters: communication before
# everything (an all-reduce kernel may mention "reduce"), attention before gemm (flash kernels
# mention gemm tiles), copies before elementwise.
CATEGORY_RULES: tuple[tuple[str, str], ...] = (
    (
        "communication",
        r"nccl|rccl|c10d::|gloo|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all",
    ),
    ("communication", r"record_param_comms|_allgather_base|_reduce_scatter_base"),
    ("attention", r"scaled_dot_product|flash_?(attn|attention|fwd|bwd)|fmha|efficient_attention"),
    ("attention", r"cudnn_attention|attn_(fwd|bwd)|_attention_(forward|backward)|aiter::.*mha"),
    ("gemm", r"aten::(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|mv|_scaled_mm|_int_mm)\b"),
    ("gemm", r"gemm|gemv|cijk_|cutlass|xmma|nvjet|cublas|hipblaslt|rocblas|wvsplitk|mkldnn_matmul"),
    ("copy", r"memcpy|memset|aten::(copy_|_to_copy|clone|contiguous|to)\b|direct_copy_kernel"),
    (
        "normalization",
        r"layer_?norm|rms_?norm|batch_?norm|group_?norm|softmax|nll_loss|cross_entropy",
    ),
    ("normalization", r"aten::(sum|mean|norm|linalg_vector_norm|amax|max|var|std)\b|reduce_kernel"),
    ("normalization", r"triton_(red|per)_"),
    ("elementwise", r"elementwise|multi_tensor_apply|_foreach_|triton_poi_|fused_dropout"),
    (
        "elementwise",
        r"aten::(add|sub|mul|div|gelu|relu|silu|sigmoid|tanh|exp|log|neg|pow|sqrt|rsqrt|clamp"
        r"|where|fill|zero|lerp|addcmul|addcdiv|dropout|native_dropout|maximum|minimum|abs"
        r"|sign|ne|eq|lt|gt|le|ge|masked_fill|reciprocal|embedding_dense_backward|threshold"
        r"|gelu_backward|silu_backward|threshold_backward)_?\b",
    ),
)


@cache
def _compiled(rules: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((category, re.compile(pattern)) for category, pattern in rules)


def categorise(name: str, rules: tuple[tuple[str, str], ...] = CATEGORY_RULES) -> str:
    """The category of an operator/kernel name, or "other"."""
    lowered = name.lower()
    for category, pattern in _compiled(rules):
        if pattern.search(lowered):
            return category
    return "other"


# Which scaled_dot_product_attention implementation ran, from the operator/kernel names.
SDPA_BACKEND_RULES: tuple[tuple[str, str], ...] = (
    ("math", r"_scaled_dot_product_attention_math"),
    ("flash", r"_scaled_dot_product_flash_attention|flash_(attn|fwd|bwd)|fmha"),
    ("efficient", r"_scaled_dot_product_efficient_attention|_efficient_attention"),
    ("cudnn", r"_scaled_dot_product_cudnn_attention|cudnn_attention"),
)


def sdpa_backend(name: str) -> str | None:
    """ "math" | "flash" | "efficient" | "cudnn" when `name` is an SDPA implementation, else None."""
    lowered = name.lower()
    for backend, pattern in _compiled(SDPA_BACKEND_RULES):
        if pattern.search(lowered):
            return backend
    return None
