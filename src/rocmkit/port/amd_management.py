"""A project that reads AMD GPUs through AMD's own management library has an AMD side.

NVML (pynvml, nvidia-ml-py, nvidia-smi) sees only NVIDIA GPUs; AMD's counterparts are the amdsmi
Python package that ships with ROCm (`import amdsmi`: amdsmi_init, amdsmi_get_gpu_...), the older
rocm_smi bindings (`rocm_smi`, `pyrsmi`) and the `amd-smi` / `rocm-smi` tools (ROCm's AMD SMI
documentation). Where a project's own Python code queries AMD GPUs through one of them (a call,
not an import alone), it has a path of its own for them (codecarbon's gpu_amd.py, zeus' amd.py beside nvidia.py): its NVML calls and
nvidia-smi probes are the NVIDIA side of a vendor choice, as a ROCm twin of a file is. Those
findings in Python files and package declarations are info, naming the file with the AMD side;
nvidia-smi in a shell launcher or a Dockerfile keeps its severity (it runs whatever the Python
code does).
"""

from __future__ import annotations

import re
from dataclasses import replace

from rocmkit.port.findings import PortFinding

# A query of AMD GPUs: an AMD SMI call (`amdsmi.amdsmi_init()`, `amdsmi_get_power_info(...)`,
# rocm_smi's `rsmi_*`/`rocmsmi.*`), or the tools by name in a string (a subprocess argument). An
# import alone is not a side that queries anything.
_AMD_LIBRARY = re.compile(
    rb"\bamdsmi_\w+\s*\(|\brsmi_\w+\s*\(|\brocmsmi\.\w+\s*\(|[\"'](?:amd-smi|rocm-smi)\b"
)
# Every spelling above holds "smi": one search rules out almost every file.
_NVIDIA_QUERY_RULES = frozenset({"nvml", "nvidia-smi"})
_DECLARATIONS = ("pyproject.toml", "setup.cfg", "setup.py")


class AmdManagement:
    """Collects, from the Python files a scan reads, the first that uses AMD's library."""

    def __init__(self) -> None:
        self.first: str | None = None

    def read(self, path: str, data: bytes) -> None:
        if self.first is None and b"smi" in data and _AMD_LIBRARY.search(data):
            self.first = path

    def demote(self, findings: list[PortFinding], rel: dict[str, str]) -> list[PortFinding]:
        """NVML and nvidia-smi findings in Python files and declarations at info, where the
        project has an AMD side (`rel`: scanned path -> the path shown)."""
        if self.first is None:
            return findings
        where = rel.get(self.first, self.first)
        why = f"the NVIDIA side: the project reads AMD GPUs through AMD SMI in {where}"
        return [replace(f, severity="info", note=why) if _demoted(f) else f for f in findings]


def _demoted(finding: PortFinding) -> bool:
    if finding.rule_id not in _NVIDIA_QUERY_RULES or finding.severity == "info":
        return False
    name = finding.path.rsplit("/", 1)[-1]
    return (
        name.endswith(".py")
        or name in _DECLARATIONS
        or (name.startswith("requirements") and name.endswith(".txt"))
    )
