"""Ray's opt-out of GPU pinning, set for NVIDIA only.

Ray pins each task or actor to the GPUs it was given by setting the vendor's visibility variable:
CUDA_VISIBLE_DEVICES for NVIDIA GPUs, ROCR_VISIBLE_DEVICES (HIP_VISIBLE_DEVICES in earlier
releases) for AMD GPUs (Ray's accelerator managers, python/ray/_private/accelerators/). Each has
its own opt-out, RAY_EXPERIMENTAL_NOSET_<VARIABLE>. A project that sets the CUDA one and names
the AMD one anywhere (a list of every vendor's opt-out, a ROCm platform class) sets both: its
findings are info.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from rocmkit.port.findings import PortFinding
from rocmkit.port.text_scan import read_head

_RULE = "ray-noset-cuda-visible-devices"
_AMD = (
    b"RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES",
    b"RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES",
)
_MAX_BYTES = 4 * 1024 * 1024


def with_amd_side(
    findings: list[PortFinding], files: Iterable[tuple[str, str, str]]
) -> list[PortFinding]:
    """The rule's findings at info where a file of the project names Ray's AMD opt-out; the
    others unchanged. Reads the files only when there is such a finding."""
    if not any(f.rule_id == _RULE and f.severity != "info" for f in findings):
        return findings
    where = next((rel for path, rel, _ in files if _names_amd(path)), None)
    if where is None:
        return findings
    note = f"the project also sets Ray's AMD opt-out ({where})"
    return [
        dataclasses.replace(f, severity="info", note=note)
        if f.rule_id == _RULE and f.severity != "info"
        else f
        for f in findings
    ]


def _names_amd(path: str) -> bool:
    data = read_head(path, _MAX_BYTES)
    return b"RAY_EXPERIMENTAL_NOSET_" in data and any(name in data for name in _AMD)
