"""Which AMD GPUs take a branch gated by an NVIDIA compute capability, and what they then lack.

On a ROCm torch, `torch.cuda.get_device_capability()` and `get_device_properties(d).major/.minor`
read hipDeviceProp_t's `major`/`minor`, which HIP fills from the gfx target, not from an NVIDIA
SM ("On HIP-AMD platforms, this is the GCN architecture major number": HIP's hipDeviceProp_t
reference; gfx942 -> 9.4). AMD_CAPABILITIES lists the targets ROCm's torch wheels are built for
(PyTorch's ROCm wheels, `PYTORCH_ROCM_ARCH`) with the numbers HIP reports for them.

A comparison of that number with a constant is then evaluated for every AMD target. It is a
hazard only where the code says what the branch is for (an identifier or message naming an NVIDIA
feature: fp8, FlashAttention, Hopper's TMA/wgmma, an SM, CUDA-built kernels) and an AMD target
that takes the branch lacks that feature (FEATURES, each with the AMD targets that have it and
the source). A branch that names nothing is left to the caller (info). FlashAttention-2 (sm80 on NVIDIA) is
not a feature here: its ROCm builds (CK, AOTriton under PyTorch's SDPA) cover MI200/MI300/MI350
and RDNA3/4, so a `major >= 8` flash gate is right on those and wrong only on MI100/RDNA2: a
generic torch path, left at info. The reverse is not: a branch that turns on PyTorch's own
flash SDPA backend behind a test no AMD target with that backend passes (`major == 8 and minor ==
0`: A100 only) withholds it from MI200/MI300/MI350 (SDPA_FLASH_TARGETS, turns_on_sdpa_flash).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

# gfx target -> (major, minor) as hipDeviceProp_t reports it (HIP: hipGetDeviceProperties fills
# major/minor from the gfx version; ROCm's GPU hardware specifications table lists the targets).
AMD_CAPABILITIES: dict[str, tuple[int, int]] = {
    "gfx908": (9, 0),  # MI100
    "gfx90a": (9, 0),  # MI200 (MI210/MI250X)
    "gfx942": (9, 4),  # MI300X/MI300A/MI325X
    "gfx950": (9, 5),  # MI350X/MI355X
    "gfx1030": (10, 3),  # RDNA2 (Radeon PRO W6800)
    "gfx1100": (11, 0),  # RDNA3 (Radeon RX 7900 XTX, PRO W7900)
    "gfx1201": (12, 0),  # RDNA4 (Radeon RX 9070)
}


@dataclass(frozen=True)
class Feature:
    name: str
    words: re.Pattern[str]  # matched against identifiers and messages around the comparison
    amd_has: frozenset[str]  # gfx targets that have it
    source: str
    # whether a stored name or function name (`is_sm90 = major >= 9`) counts: an architecture's
    # name there describes the device, not what the branch does; a message or a call does
    in_names: bool = True
    # what an AMD GPU that takes the branch meets: code built for NVIDIA GPUs only does not run
    # there (error); a missing or different number format or a message's claim degrades (warn)
    severity: Literal["warn", "error"] = "warn"


FEATURES: tuple[Feature, ...] = (
    # FP8 matrix cores: CDNA3 (gfx942, FNUZ encodings), CDNA4 and RDNA4 (OCP e4m3fn/e5m2); none on
    # MI100/MI200/RDNA2/RDNA3 (AMD ROCm docs, "Data types and precision support").
    Feature(
        "fp8",
        re.compile(r"(?i)fp8|float8|e4m3|e5m2|scaled_mm"),
        frozenset({"gfx942", "gfx950", "gfx1201"}),
        "ROCm docs: precision support (FP8 on gfx942 as FNUZ, gfx950/gfx12 as OCP)",
    ),
    # Code built for NVIDIA GPUs: Hopper's TMA/wgmma, FlashAttention-3, CUDA-built kernels
    # (SageAttention, Marlin, CUTLASS): no AMD GPU runs it (CUDA C++ Programming Guide, compute
    # capabilities; the projects' own READMEs).
    Feature(
        "CUDA-built code",
        re.compile(
            r"(?i)(?<![a-z])tma(?![a-z])|wgmma|(?<![a-z0-9])fa3(?![0-9])|flash[-_]?attn[-_]?3"
            r"|(?<![a-z])sage|marlin|cutlass|cuda_?kernel"
        ),
        frozenset(),
        "CUDA C++ Programming Guide: compute capabilities (sm90 Hopper: TMA, wgmma)",
        severity="error",
    ),
    # A message or call of the branch that names an NVIDIA architecture ("requires sm90+",
    # "needs a Hopper GPU"). Not Ampere or Ada: what a branch named for them turns on (bf16,
    # TF32 matmuls, tensor cores) is generic torch that AMD GPUs run too.
    Feature(
        "an NVIDIA architecture",
        re.compile(r"(?i)(?<![a-z])sm_?\d{2,3}|hopper|blackwell"),
        frozenset(),
        "CUDA C++ Programming Guide: compute capabilities (sm90 Hopper, sm100 Blackwell)",
        in_names=False,
    ),
)


def _on_side(value: float, op: str, threshold: float, constant_left: bool) -> bool:
    """Whether `capability OP threshold` (or `threshold OP capability`) holds for `value`."""
    if constant_left:  # `(9, 0) <= cap` is `cap >= (9, 0)`
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
    return {
        "<": value < threshold,
        "<=": value <= threshold,
        ">": value > threshold,
        ">=": value >= threshold,
        "==": value == threshold,
        "!=": value != threshold,
    }[op]


def holding(op: str, threshold: float, constant_left: bool) -> list[str]:
    """AMD targets whose reported capability (major.minor) makes the comparison itself true."""
    return [
        gfx
        for gfx, (major, minor) in AMD_CAPABILITIES.items()
        if _on_side(major + minor / 10, op, threshold, constant_left)
    ]


def passing(op: str, threshold: float, constant_left: bool, major_only: bool) -> list[str]:
    """AMD targets whose reported capability lands on the side of the comparison that turns the
    feature on: above the threshold for an order (`cap >= T` is on; in `cap < T` the branch is the
    refusal, and the targets that pass it are again those at or above T), equal for `==`."""
    found = []
    for gfx, (major, minor) in AMD_CAPABILITIES.items():
        value = float(major) if major_only else major + minor / 10
        if op in ("<", "<="):
            on = not _on_side(value, op, threshold, constant_left)
        else:
            on = _on_side(value, op, threshold, constant_left)
        if on:
            found.append(gfx)
    return found


def named_feature(names: list[str], branch: list[str]) -> Feature | None:
    """The first feature of FEATURES (fp8 and FlashAttention before the architecture words) that
    the names a comparison is stored in or returned from, or the branch it gates, name."""
    for feature in FEATURES:
        texts = [*names, *branch] if feature.in_names else branch
        if any(feature.words.search(t) for t in texts):
            return feature
    return None


def lacking(feature: Feature, targets: list[str]) -> list[str]:
    """The targets of `targets` that do not have `feature`."""
    return [t for t in targets if t not in feature.amd_has]


def shown(targets: list[str]) -> str:
    """`every AMD GPU` or `gfx90a 9.0, gfx1100 11.0`."""
    if len(targets) == len(AMD_CAPABILITIES):
        return "every AMD GPU (gfx9: 9.x, RDNA: 10-12)"
    return ", ".join(f"{t} {AMD_CAPABILITIES[t][0]}.{AMD_CAPABILITIES[t][1]}" for t in targets)


# AMD targets on which a ROCm torch runs PyTorch's flash SDPA backend: check_flash_attention_
# hardware_support in PyTorch's aten/src/ATen/native/transformers/cuda/sdp_utils.cpp asks
# AOTriton's check_gpu on ROCm, and AOTriton builds its flash kernels for CDNA2/3/4 (RDNA3/4 are
# "experimental", off unless TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1).
SDPA_FLASH_TARGETS = frozenset({"gfx90a", "gfx942", "gfx950"})


def names_sdpa(text: str) -> bool:
    """Whether a module can hold what turns_on_sdpa_flash looks for (most cannot)."""
    return "FLASH_ATTENTION" in text or "enable_flash" in text or "sdp_kernel" in text


def turns_on_sdpa_flash(statements: list[ast.stmt], text: str = "") -> bool:
    """Whether a branch turns on PyTorch's flash SDPA backend: `SDPBackend.FLASH_ATTENTION`,
    `enable_flash=True`, or a triple whose first value is True given to `sdp_kernel(...)` or
    stored under an `sdp` name in a module that names sdp_kernel (torch.backends.cuda.sdp_kernel's
    positional order is enable_flash, enable_math, enable_mem_efficient), or given to a named
    tuple the module (`text`) defines with enable_flash as its first field (`FlashAttentionConfig
    = namedtuple("FlashAttentionConfig", ["enable_flash", "enable_math", ...])`)."""
    tuples = frozenset(_FLASH_FIRST_TUPLE.findall(text)) if "namedtuple" in text else frozenset()
    return any(_flash_on(node, tuples) for statement in statements for node in ast.walk(statement))


# A named tuple whose first field is enable_flash: its first positional value is that switch.
_FLASH_FIRST_TUPLE = re.compile(
    r"(\w+)\s*=\s*(?:collections\.)?namedtuple\(\s*['\"]\w+['\"]\s*,\s*[\[(]?\s*['\"]\s*enable_flash\b"
)


def _flash_on(node: ast.AST, tuples: frozenset[str] = frozenset()) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "FLASH_ATTENTION"
    if isinstance(node, ast.keyword):
        return (
            node.arg == "enable_flash"
            and isinstance(node.value, ast.Constant)
            and node.value.value is True
        )
    if isinstance(node, ast.Call):
        name = _name(node.func)
        return (name.startswith("sdp") or name in tuples) and _first_true(node.args)
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
        stored = " ".join(_name(t) for t in node.targets).lower()
        return "sdp" in stored and _first_true(node.value.elts)
    return False


def _first_true(values: list[ast.expr]) -> bool:
    return len(values) == 3 and isinstance(values[0], ast.Constant) and values[0].value is True


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""
