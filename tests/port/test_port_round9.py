"""Issue 26, ninth round: mechanisms read from the emitters' own definitions (hipDeviceProp_t's
major/minor as HIP fills them from the gfx target, AMD's per-target feature tables), each with a
case where it applies and one where it must not, on small synthetic trees written for these
tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

from rocmkit.port import capability_features

# -- capability comparisons evaluated for every AMD target ---------------------------------------


def test_hip_reports_the_gfx_number_as_the_capability() -> None:
    table = capability_features.AMD_CAPABILITIES
    assert table["gfx90a"] == (9, 0)
    assert table["gfx942"] == (9, 4)
    assert table["gfx1100"] == (11, 0)
    # `cap >= (9, 0)` is taken by every CDNA and RDNA target; `major == 9` only by CDNA
    assert set(capability_features.passing(">=", 9.0, False, False)) == set(table)
    assert capability_features.passing("==", 9.0, False, True) == [
        "gfx908",
        "gfx90a",
        "gfx942",
        "gfx950",
    ]
    # `if cap < (9, 4): refuse`: the targets that get through are those at or above 9.4
    assert "gfx90a" not in capability_features.passing("<", 9.4, False, False)
    assert "gfx942" in capability_features.passing("<", 9.4, False, False)


@pytest.mark.parametrize(
    ("source", "hazard"),
    [
        # the function's name says what the comparison decides: fp8, which MI200 lacks
        (
            "import torch\n\ndef supports_fp8():\n"
            "    return torch.cuda.get_device_capability() >= (9, 0)\n",
            True,
        ),
        # the stored name: CUDA-built kernels on a major >= 7, through get_device_properties()
        (
            "import torch\n\ndef settings():\n"
            "    use_marlin = torch.cuda.get_device_properties(0).major >= 8\n"
            "    return use_marlin\n",
            True,
        ),
        # FlashAttention on major >= 8: ROCm's builds cover MI200/MI300 and RDNA3/4 (info)
        (
            "import torch\n\ndef settings():\n"
            "    use_flash = torch.cuda.get_device_properties(0).major >= 8\n"
            "    return use_flash\n",
            False,
        ),
        # a name that describes the device (is_sm90), not what the branch does
        (
            "import torch\n\ndef tiles():\n"
            "    is_sm90 = torch.cuda.get_device_capability()[0] >= 9\n"
            "    return 64 if is_sm90 else 128\n",
            False,
        ),
        # the module already asks which vendor's torch runs it
        (
            "import torch\n\ndef supports_fp8():\n"
            "    if torch.version.hip:\n        return False\n"
            "    return torch.cuda.get_device_capability() >= (9, 0)\n",
            False,
        ),
        # a branch that only logs
        (
            "import torch, logging\n\ndef note():\n"
            "    if torch.cuda.get_device_capability()[0] < 9:\n"
            '        logging.info("fp8 needs sm90")\n',
            False,
        ),
        # the refusal's message names the architecture: every AMD GPU gets through
        (
            "import torch\n\ndef check():\n"
            "    major = torch.cuda.get_device_capability(0)[0]\n"
            "    if major < 9:\n"
            '        raise RuntimeError("this kernel requires sm90+")\n',
            True,
        ),
        # a flag named for CUDA-built kernels
        (
            "import torch\n\nuse_cuda_kernels = torch.cuda.get_device_capability()[0] >= 7\n",
            True,
        ),
        # nothing names what the branch is for: left at info
        (
            "import torch\n\ndef big():\n    return torch.cuda.get_device_capability() >= (9, 0)\n",
            False,
        ),
        # bf16 exists on every AMD target that passes: no feature lacking
        (
            "import torch\n\ndef use_bf16():\n"
            "    return torch.cuda.get_device_capability() >= (8, 0)\n",
            False,
        ),
        # fp8 gated at 12.0: the AMD target that passes (RDNA4) has it
        (
            "import torch\n\ndef has_fp8():\n"
            "    return torch.cuda.get_device_capability() >= (12, 0)\n",
            False,
        ),
        # an exclusion threshold below Ampere: every AMD GPU takes the general path
        (
            "import torch\n\ndef old_gpu_flash():\n"
            "    return torch.cuda.get_device_properties(0).major < 7\n",
            False,
        ),
        # get_device_properties() read for its memory only: not a capability
        (
            "import torch\n\ndef flash_budget():\n"
            "    return torch.cuda.get_device_properties(0).total_memory > 8e9\n",
            False,
        ),
    ],
)
def test_a_capability_branch_named_for_an_nvidia_feature_is_judged_per_amd_target(
    tmp_path: Path, source: str, hazard: bool
) -> None:
    report = _scan(tmp_path, {"pkg/gpu.py": source})
    warned = {r for (_, _, r, s) in _shown(report) if s == "warn"}
    assert ("device-capability" in warned) is hazard
    if hazard:
        evidence = next(f.evidence for f in report.findings if f.rule_id == "device-capability")
        assert "gfx" in evidence  # names the AMD targets that take the branch


def test_stored_device_properties_are_followed_to_their_major(tmp_path: Path) -> None:
    source = (
        "import torch\n\ndef pick():\n"
        "    props = torch.cuda.get_device_properties(0)\n"
        "    fp8_ok = props.major >= 9\n"
        "    return fp8_ok\n"
    )
    report = _scan(tmp_path, {"pkg/gpu.py": source})
    assert ("pkg/gpu.py", 4, "device-capability", "warn") in _shown(report)
