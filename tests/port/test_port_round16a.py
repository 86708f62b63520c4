"""Issue 26, sixteenth round (a): capability comparisons that AMD GPUs pass, graded by what the
gated branch selects. On a ROCm torch get_device_capability() is the gfx number (gfx90a 9.0,
gfx942 9.4, RDNA3 11.0), so every AMD GPU passes `major >= 9`. Each mechanism beside a case where
it must not fire, on small synthetic modules written for these tests."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files

from rocmkit.port import PortFinding


def _capability(tmp_path: Path, source: str) -> PortFinding:
    report = scan_files(tmp_path, {"model.py": source})
    found = [f for f in report.findings if f.rule_id == "device-capability"]
    assert len(found) == 1, found
    return found[0]


_HUB_KERNEL = """import torch


def attention_for(args):
    major, _ = torch.cuda.get_device_capability(0)
    if major >= 9:
        args["attn_implementation"] = "{kernel}"
    else:
        args["attn_implementation"] = "eager"
"""


def test_a_hopper_only_hub_kernel_behind_major_9_is_an_error(tmp_path: Path) -> None:
    # the hub kernel's name spells FlashAttention-3 with hyphens (kernels-community's repos)
    finding = _capability(tmp_path, _HUB_KERNEL.format(kernel="kernels-community/vllm-flash-attn3"))
    assert finding.severity == "error"
    assert "CUDA-built code branch, taken without it by every AMD GPU" in finding.evidence


def test_a_generic_attention_behind_major_9_stays_info(tmp_path: Path) -> None:
    finding = _capability(tmp_path, _HUB_KERNEL.format(kernel="flash_attention_2"))
    assert finding.severity == "info"


def test_a_module_that_handles_rocm_keeps_the_hub_kernel_gate_at_info(tmp_path: Path) -> None:
    source = _HUB_KERNEL.format(kernel="kernels-community/vllm-flash-attn3")
    source += "\n\nIS_ROCM = torch.version.hip is not None\n"
    assert _capability(tmp_path, source).severity == "info"


_DTYPES = """import torch

DTYPE_I8 = [torch.int8]
DTYPE_F8 = [torch.float8_e4m3fn, torch.float8_e5m2]


def matmul(a, b):
    allowed = [torch.float16, torch.bfloat16]
    cc = torch.cuda.get_device_capability()
    if cc[0] >= {major}:
        allowed += {extra}
    assert a.dtype in allowed, "Input dtype is not supported"
"""


def test_a_name_the_branch_adds_is_followed_to_the_fp8_dtypes_it_holds(tmp_path: Path) -> None:
    finding = _capability(tmp_path, _DTYPES.format(major=9, extra="DTYPE_F8"))
    assert finding.severity == "warn"
    # MI200 (gfx90a) and RDNA3 report 9.0/11.0 and have no FP8 at all
    assert "fp8 branch, taken without it by gfx908 9.0, gfx90a 9.0" in finding.evidence


def test_a_name_holding_int8_dtypes_is_not_fp8(tmp_path: Path) -> None:
    finding = _capability(tmp_path, _DTYPES.format(major=9, extra="DTYPE_I8"))
    assert finding.severity == "info"


_EQUAL = """import torch


def policy():
    major, _ = torch.cuda.get_device_capability()
    if major == 9:
        {branch}
    return "portable"
"""


def test_an_equality_with_hopper_that_runs_wgmma_gemms_is_an_error(tmp_path: Path) -> None:
    # MI100/MI200/MI300/MI350 all report major 9 and take the Hopper branch
    finding = _capability(tmp_path, _EQUAL.format(branch='return "wgmma_gemm"'))
    assert finding.severity == "error"
    assert "gfx90a 9.0, gfx942 9.4" in finding.evidence


def test_an_equality_with_hopper_that_picks_a_tile_size_stays_info(tmp_path: Path) -> None:
    finding = _capability(tmp_path, _EQUAL.format(branch="return 128"))
    assert finding.severity == "info"


_MEMBERSHIP = """import torch
from torch.backends.cuda import sdp_kernel


def attention_context():
    props = torch.cuda.get_device_properties(0)
    if props.major in {majors} and props.minor == 0:
        return sdp_kernel(True, False, False)
    return sdp_kernel(False, True, True)
"""


def test_flash_sdpa_only_for_majors_7_and_8_is_off_on_every_amd_gpu(tmp_path: Path) -> None:
    finding = _capability(tmp_path, _MEMBERSHIP.format(majors="{7, 8}"))
    assert finding.severity == "warn"
    assert "turns on SDPA's flash backend only for NVIDIA chips" in finding.evidence


def test_flash_sdpa_for_major_9_reaches_mi200_and_mi300(tmp_path: Path) -> None:
    finding = _capability(tmp_path, _MEMBERSHIP.format(majors="(8, 9)"))
    assert finding.severity == "info"
