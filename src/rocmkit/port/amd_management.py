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
# Every spelling above holds "smi", within its first _SMI_WITHIN characters: one search rules out
# almost every file, and a match is tried only at the places that can start one (led by `\b`, the
# pattern leaves `re` no literal to skip to: a search of a file that holds "smi" in some other word,
# "transmit", tried it at every byte, a third of the pre-checks' cost on the corpus).
_SMI_WITHIN = 16
_NVIDIA_QUERY_RULES = frozenset({"nvml", "nvidia-smi"})
_DECLARATIONS = ("pyproject.toml", "setup.cfg", "setup.py")


class AmdManagement:
    """Collects, from the Python files a scan reads, the first that uses AMD's library."""

    def __init__(self) -> None:
        self.first: str | None = None

    def read(self, path: str, data: bytes) -> None:
        if self.first is None and uses_amd_library(data):
            self.first = path

    def demote(self, findings: list[PortFinding], rel: dict[str, str]) -> list[PortFinding]:
        """NVML and nvidia-smi findings in Python files and declarations at info, where the
        project has an AMD side (`rel`: scanned path -> the path shown)."""
        if self.first is None:
            return findings
        where = rel.get(self.first, self.first)
        why = f"the NVIDIA side: the project reads AMD GPUs through AMD SMI in {where}"
        return [replace(f, severity="info", note=why) if _demoted(f) else f for f in findings]


def uses_amd_library(data: bytes) -> bool:
    """Whether `_AMD_LIBRARY.search(data)` finds a match, tried only near each "smi"."""
    match, position, start = _AMD_LIBRARY.match, data.find(b"smi"), 0
    while position >= 0:
        for at in range(max(start, position - _SMI_WITHIN), position + 1):
            if match(data, at):
                return True
        start = position + 1  # places before it were tried already
        position = data.find(b"smi", start)
    return False


def _demoted(finding: PortFinding) -> bool:
    if finding.rule_id not in _NVIDIA_QUERY_RULES or finding.severity == "info":
        return False
    name = finding.path.rsplit("/", 1)[-1]
    return (
        name.endswith(".py")
        or name in _DECLARATIONS
        or (name.startswith("requirements") and name.endswith(".txt"))
    )
