"""A project that reads AMD GPUs through AMD's own management library has an AMD side.

NVML (pynvml, nvidia-ml-py, nvidia-smi) sees only NVIDIA GPUs; AMD's counterparts are the amdsmi
Python package that ships with ROCm (`import amdsmi`: amdsmi_init, amdsmi_get_gpu_...), the older
rocm_smi bindings (`rocm_smi`, `pyrsmi`) and the `amd-smi` / `rocm-smi` tools (ROCm's AMD SMI
documentation). Where a project's own Python code queries AMD GPUs through one of them (a call,
not an import alone), it has a path of its own for them (codecarbon's gpu_amd.py, zeus' amd.py
beside nvidia.py): the NVML calls and nvidia-smi probes of its vendor choice are the NVIDIA side,
as a ROCm twin of a file is. A module is on that side where it makes the choice itself (it also
queries AMD SMI), is a vendor's back end by name (`gpu_nvidia.py`, `backend/nvml.py`, an
Iluvatar `iluvatar.py` calling its NVML-compatible ixml) or has an AMD twin beside it
(`collector.py` beside `amd_collector.py`); there, and in package declarations, those findings
are info, naming the file with the AMD side. A module that calls NVML on its own beside them (a
benchmark or power-capping command that skips the project's collector) has no AMD side and keeps
its severity, as does nvidia-smi in a shell launcher or a Dockerfile (it runs whatever the Python
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
# What a module that uses NVML or nvidia-smi holds: only those are tried for an AMD side of their own.
_NVIDIA_QUERY = (b"nvml", b"NVML", b"nvidia-smi", b"nvidia_smi")
# A path that names a vendor's back end (a folder or a file stem): NVIDIA's, or another vendor's
# whose library copies NVML's API (Iluvatar's ixml, MetaX's, Moore Threads'...).
_VENDOR_MODULE = re.compile(
    r"(?i)(?:^|[/_.-])(?:nvidia|nvml|pynvml|cuda|nv|iluvatar|ixml|pyixml|metax|mthreads|musa"
    r"|hygon|cambricon|ascend|habana|gaudi|intel|xpu)(?:[/_.-]|$)"
)
# The names of an AMD twin of a module: `amd_<stem>.py`, `<stem>_amd.py` (and rocm, hip).
_AMD_WORDS = ("amd", "rocm", "hip")


class AmdManagement:
    """Collects, from the Python files a scan reads, the first that uses AMD's library."""

    def __init__(self) -> None:
        self.first: str | None = None
        self.choosers: set[str] = set()  # modules that query NVIDIA's and AMD's tools both

    def read(self, path: str, data: bytes) -> None:
        # once an AMD side is found, only a module that also queries NVIDIA's tools is tried
        nvidia = self.first is not None and _queries_nvidia(data)
        if (self.first is None or nvidia) and uses_amd_library(data):
            self.first = self.first or path
            if nvidia or _queries_nvidia(data):
                self.choosers.add(path)

    def demote(self, findings: list[PortFinding], rel: dict[str, str]) -> list[PortFinding]:
        """NVML and nvidia-smi findings in Python files and declarations at info, where the
        project has an AMD side (`rel`: scanned path -> the path shown)."""
        if self.first is None:
            return findings
        where = rel.get(self.first, self.first)
        why = f"the NVIDIA side: the project reads AMD GPUs through AMD SMI in {where}"
        sides = {rel.get(path, path) for path in self.choosers}
        sides |= _with_amd_twin(set(rel.values()))
        return [
            replace(f, severity="info", note=why) if _demoted(f, sides) else f for f in findings
        ]


def _queries_nvidia(data: bytes) -> bool:
    return any(word in data for word in _NVIDIA_QUERY)


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


def _demoted(finding: PortFinding, sides: set[str]) -> bool:
    """Whether a finding is the NVIDIA side of the project's choice: an NVML or nvidia-smi
    finding in a declaration, in a module that also queries AMD SMI, or in the NVIDIA back end."""
    if finding.rule_id not in _NVIDIA_QUERY_RULES or finding.severity == "info":
        return False
    name = finding.path.rsplit("/", 1)[-1]
    if name in _DECLARATIONS or (name.startswith("requirements") and name.endswith(".txt")):
        return True
    if not name.endswith(".py"):
        return False
    return finding.path in sides or bool(_VENDOR_MODULE.search(finding.path.removesuffix(".py")))


def _with_amd_twin(paths: set[str]) -> set[str]:
    """The Python modules with an AMD twin in their folder (`collector.py` beside
    `amd_collector.py` or `collector_rocm.py`): each is the other vendor's side of a pair."""
    twins = set()
    for path in paths:
        folder, _, name = path.rpartition("/")
        stem = name.removesuffix(".py")
        if stem == name:
            continue
        for word in _AMD_WORDS:
            for twin in (f"{word}_{stem}.py", f"{stem}_{word}.py"):
                if (f"{folder}/{twin}" if folder else twin) in paths:
                    twins.add(path)
    return twins
