"""Only the statements that hold a trigger or a vendor word are walked (issue 26 speed); a finding
that depends on a line with neither must still be judged as if the whole file were walked."""

from __future__ import annotations

from rocmkit.port import load_rules
from rocmkit.port.python_scan import scan_python

FILLER = "".join(
    f"def helper_{i}(x):\n    return [x * {i} for _ in range(3)]\n\n" for i in range(40)
)


def _found(text: str) -> list[tuple[int, str, str]]:
    hits, _ = scan_python(text, load_rules())
    return [(h.line, h.rule.id, h.severity) for h in hits]


def test_a_capability_stored_then_compared_on_a_plain_line_is_still_judged() -> None:
    # accelerate's check_cuda_fp8_capability shape: the comparison line names no trigger.
    text = FILLER + (
        "def fp8_ok():\n"
        "    try:\n"
        "        cap = probe()\n"
        "    except Exception:\n"
        "        cap = torch.cuda.get_device_capability()\n"
        "    x = 1\n"
        "    return cap >= (8, 9)\n"
    )
    line = text.splitlines().index("        cap = torch.cuda.get_device_capability()") + 1
    # the read and (session twenty-seven) the comparison that decides it, two lines below
    assert _found(text) == [
        (line, "device-capability", "warn"),
        (line + 2, "device-capability", "warn"),
    ]


def test_a_vendor_guard_far_above_the_trigger_still_gates_it() -> None:
    text = (
        "def build():\n"
        "    if torch.version.hip is not None:\n"
        "        return []\n"
        + "".join(f"    step_{i} = {i}\n" for i in range(30))
        + "    return ['-gencode', 'arch=compute_80,code=sm_80', torch.version.cuda.split('.')]\n"
        + FILLER
        + "from torch.utils.cpp_extension import CUDAExtension\n"
    )
    severities = {rule: severity for _, rule, severity in _found(text)}
    assert severities["torch-version-cuda"] == "info"
    assert severities["nvcc-only-flags"] == "info"


def test_findings_in_a_pruned_walk_equal_the_full_walk_on_a_mixed_file() -> None:
    text = FILLER + (
        "import os\n"
        "os.environ['NCCL_NVLS_ENABLE'] = '1'\n"
        "if torch.version.cuda:\n"
        "    import pycuda.autoinit\n"
        "WARP_SIZE = 32\n"
    )
    found = _found(text)
    assert [rule for _, rule, _ in found] == ["nccl-nvlink-env", "pycuda", "warp-size-32"]
    assert all(severity != "info" for _, rule, severity in found if rule != "pycuda")
