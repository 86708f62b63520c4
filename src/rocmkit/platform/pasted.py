"""Read a pasted tool output of another machine, whatever the tool: recognise the format and
parse it into `SmiText` (one `SmiGpu` per GPU). Pure; `read_pasted` raises `SmiParseError` for
text that is no known tool output (callers then treat it as a log)."""

from __future__ import annotations

import re

from rocmkit.platform.smi import (
    SmiParseError,
    parse_amd_smi_static,
    parse_nvidia_smi_csv,
    parse_nvidia_smi_xml,
    parse_rocm_smi_json,
    parse_rocminfo,
)
from rocmkit.platform.smi_text import (
    SmiGpu,
    SmiText,
    memory_bytes,
    parse_amd_smi_text,
    parse_nvidia_smi_q,
    parse_rocm_smi_text,
)


def read_pasted(text: str) -> SmiText:
    """The GPUs a pasted rocminfo / rocm-smi / amd-smi / nvidia-smi output describes."""
    stripped = text.strip()
    if "<nvidia_smi_log" in stripped:
        return _from_nvidia_xml(stripped)
    if "NVSMI LOG" in stripped or re.search(r"^GPU [0-9A-Fa-f]{8}:", stripped, flags=re.M):
        return parse_nvidia_smi_q(stripped)
    if "HSA Agents" in stripped or "ROCk module" in stripped:
        return _from_rocminfo(stripped)
    if re.search(r'"card\d+"\s*:', stripped):
        return _from_rocm_smi_json(stripped)
    if re.search(r'"gpu"\s*:|"gpu_data"', stripped):
        return _from_amd_smi_json(stripped)
    if re.search(r"^GPU: \d+\s*$", stripped, flags=re.M):
        return parse_amd_smi_text(stripped)
    if "ROCm System Management Interface" in stripped or re.search(
        r"^(GPU\[\d+\]|device,)", stripped, flags=re.M
    ):
        return parse_rocm_smi_text(stripped)
    first = stripped.splitlines()[0] if stripped else ""
    if "," in first and re.search(r"\bname\b|\bindex\b", first):
        return _from_nvidia_csv(stripped)
    raise SmiParseError("not a rocminfo, rocm-smi, amd-smi or nvidia-smi output")


def _from_rocminfo(text: str) -> SmiText:
    report = parse_rocminfo(text)
    if not report.kfd_module_loaded:
        raise SmiParseError("rocminfo says the amdgpu (ROCk) module is not loaded: no GPUs listed")
    gpus = tuple(
        SmiGpu(
            index=i,
            name=agent.marketing_name or None,
            arch=agent.gfx_target,
            num_compute_units=agent.compute_units,
        )
        for i, agent in enumerate(report.gpus)
    )
    if not gpus:
        raise SmiParseError("rocminfo lists no GPU agent (only CPUs)")
    versions = {"Runtime Version": report.runtime_version} if report.runtime_version else {}
    return SmiText(format="rocminfo", gpus=gpus, versions=versions)


def _from_nvidia_xml(text: str) -> SmiText:
    report = parse_nvidia_smi_xml(text)
    gpus = tuple(
        SmiGpu(
            index=i,
            name=g.name or None,
            architecture_name=g.architecture,
            pci_bus_id=g.pci_bus_id,
            uuid=g.uuid,
            memory_total_bytes=g.memory_total_mib * 2**20 if g.memory_total_mib else None,
            driver_version=report.driver_version,
        )
        for i, g in enumerate(report.gpus)
    )
    versions = {
        k: v
        for k, v in (
            ("Driver Version", report.driver_version),
            ("CUDA Version", report.cuda_version),
        )
        if v
    }
    return SmiText(format="nvidia-smi -q -x", gpus=gpus, versions=versions)


def _from_rocm_smi_json(text: str) -> SmiText:
    report = parse_rocm_smi_json(text)
    gpus = tuple(
        SmiGpu(
            index=c.index,
            name=c.name,
            arch=c.gfx_target,
            device_id=c.device_id,
            pci_bus_id=c.pci_bus_id,
            memory_total_bytes=c.vram_total_bytes,
            driver_version=report.driver_version,
        )
        for c in report.cards
    )
    return SmiText(format="rocm-smi --json", gpus=gpus)


def _from_amd_smi_json(text: str) -> SmiText:
    gpus = tuple(
        SmiGpu(
            index=g.index,
            name=g.name,
            arch=g.gfx_target,
            device_id=g.device_id,
            num_compute_units=g.num_compute_units,
        )
        for g in parse_amd_smi_static(text)
    )
    return SmiText(format="amd-smi --json", gpus=gpus)


def _from_nvidia_csv(text: str) -> SmiText:
    rows = parse_nvidia_smi_csv(text)
    if not rows:
        raise SmiParseError("nvidia-smi CSV has a header but no GPU rows")
    gpus = tuple(
        SmiGpu(
            index=int(index) if (index := row.get("index")) and index.isdigit() else i,
            name=row.get("name") or row.get("gpu_name"),
            uuid=row.get("uuid"),
            pci_bus_id=row.get("pci.bus_id"),
            memory_total_bytes=memory_bytes(f"{row['memory.total']} MiB")
            if row.get("memory.total")
            else None,
            driver_version=row.get("driver_version"),
        )
        for i, row in enumerate(rows)
    )
    return SmiText(format="nvidia-smi --query-gpu csv", gpus=gpus)
