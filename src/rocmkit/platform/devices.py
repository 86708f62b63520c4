"""One DeviceInfo per GPU, merged from torch, the KFD topology and the smi tools.

torch says what it can use; KFD and the smi tools say what hardware is there even when torch
cannot use it (a CUDA wheel on an AMD box, HIP_VISIBLE_DEVICES hiding a GPU). Those devices come
back with visible_to_torch=False so the doctor can say so. `merge_devices` is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rocmkit.platform.backend import DeviceInfo
from rocmkit.platform.kfd import KfdNode, read_kfd_gpus
from rocmkit.platform.smi import (
    NVIDIA_QUERY_FIELDS,
    Runner,
    SmiParseError,
    parse_nvidia_smi_csv,
    parse_rocminfo,
    run_command,
)
from rocmkit.platform.specs import arch_facts

TOOL_TIMEOUT_S = 10.0


def merge_devices(
    torch_devices: Sequence[DeviceInfo],
    kfd_gpus: Sequence[KfdNode] = (),
    amd_names: dict[int, str] | None = None,
    nvidia_rows: Sequence[dict[str, str | None]] = (),
) -> list[DeviceInfo]:
    """Enrich torch's devices with KFD facts and append hardware torch does not see.

    `amd_names` maps KFD node id -> marketing name (from rocminfo); `nvidia_rows` are
    nvidia-smi --query-gpu rows.
    """
    amd_names = amd_names or {}
    merged: list[DeviceInfo] = []
    unmatched = list(kfd_gpus)
    amd_torch = [d for d in torch_devices if d.vendor == "amd"]
    for device in torch_devices:
        node = _match_kfd(device, unmatched, positional=len(amd_torch) == len(kfd_gpus))
        if node is not None:
            unmatched.remove(node)
            device = _with_kfd(device, node)
        merged.append(_with_integrated(device))
    for ordinal, node in enumerate(unmatched):
        gfx = node.gfx_target
        hidden = DeviceInfo(
            index=ordinal,
            name=amd_names.get(node.node_id) or f"AMD GPU ({gfx or 'unknown gfx'})",
            vendor="amd",
            sources=("kfd", "rocminfo") if node.node_id in amd_names else ("kfd",),
            visible_to_torch=False,
        )
        merged.append(_with_integrated(_with_kfd(hidden, node)))
    seen = {d.uuid for d in torch_devices if d.uuid} | {d.pci_bus_id for d in torch_devices}
    for row in nvidia_rows:
        if row.get("uuid") in seen or _short_bus(row.get("pci.bus_id")) in seen:
            continue
        merged.append(_nvidia_row_device(row, len(merged)))
    return merged


def _match_kfd(device: DeviceInfo, nodes: list[KfdNode], *, positional: bool) -> KfdNode | None:
    if device.vendor != "amd" or not nodes:
        return None
    if device.pci_bus_id:
        for node in nodes:
            if node.pci_bus_id and _short_bus(node.pci_bus_id) == _short_bus(device.pci_bus_id):
                return node
    # Without a bus id, torch order is KFD order only when nothing is hidden.
    return nodes[0] if positional else None


def _with_kfd(device: DeviceInfo, node: KfdNode) -> DeviceInfo:
    return replace(
        device,
        arch=device.arch or node.gfx_target,
        total_memory_bytes=device.total_memory_bytes or node.memory_bytes,
        num_compute_units=device.num_compute_units or node.num_compute_units,
        warp_size=device.warp_size or node.wavefront_size,
        pci_bus_id=device.pci_bus_id or node.pci_bus_id,
        render_minor=node.render_minor,
        kfd_node=node.node_id,
        sources=tuple(dict.fromkeys((*device.sources, "kfd"))),
    )


def _with_integrated(device: DeviceInfo) -> DeviceInfo:
    if device.is_integrated is not None:
        return device
    facts = arch_facts(device.arch)
    return replace(device, is_integrated=facts.integrated) if facts else device


def _nvidia_row_device(row: dict[str, str | None], index: int) -> DeviceInfo:
    cap = row.get("compute_cap")
    memory = row.get("memory.total")
    ordinal = row.get("index") or ""
    return DeviceInfo(
        index=int(ordinal) if ordinal.isdigit() else index,
        name=row.get("name") or "NVIDIA GPU",
        vendor="nvidia",
        arch=f"sm_{cap.replace('.', '')}" if cap else None,
        total_memory_bytes=int(memory) * 2**20 if memory and memory.isdigit() else None,
        pci_bus_id=_short_bus(row.get("pci.bus_id")),
        uuid=row.get("uuid"),
        sources=("nvidia-smi",),
        visible_to_torch=False,
    )


def _short_bus(bus_id: str | None) -> str | None:
    """nvidia-smi's "00000000:84:00.0" and KFD's "0000:84:00.0" -> "0000:84:00.0"."""
    if not bus_id:
        return None
    domain, _, rest = bus_id.lower().rpartition(":")[0].partition(":")
    tail = bus_id.lower().rsplit(":", 1)[-1]
    if not rest:
        return f"0000:{domain}:{tail}"
    return f"{int(domain, 16):04x}:{rest}:{tail}"


def discover_devices(
    *,
    root: str | Path = "/",
    runner: Runner = run_command,
    torch_devices: Sequence[DeviceInfo] = (),
) -> list[DeviceInfo]:
    """All GPUs: torch's, enriched from KFD, plus hardware torch cannot use.

    The smi tools run only when there is hardware torch does not account for, so a healthy
    machine and a machine with no GPU pay nothing for them.
    """
    kfd_gpus = read_kfd_gpus(root)
    amd_names: dict[int, str] = {}
    if len(kfd_gpus) > sum(d.vendor == "amd" for d in torch_devices):
        amd_names = rocminfo_names(runner)
    nvidia_rows: list[dict[str, str | None]] = []
    # /proc/driver/nvidia is absent in some VMs; the module's sysfs entry is not.
    has_nvidia_driver = any(
        (Path(root) / rel).exists() for rel in ("proc/driver/nvidia/version", "sys/module/nvidia")
    )
    if has_nvidia_driver and not any(d.vendor == "nvidia" for d in torch_devices):
        nvidia_rows = nvidia_smi_rows(runner)
    return merge_devices(torch_devices, kfd_gpus, amd_names, nvidia_rows)


def rocminfo_names(runner: Runner = run_command) -> dict[int, str]:
    """KFD node id -> marketing name, from rocminfo; {} when it fails or prints garbage."""
    result = runner(["rocminfo"], TOOL_TIMEOUT_S)
    try:
        report = parse_rocminfo(result.stdout + result.stderr)
    except SmiParseError:
        return {}
    return {
        a.node: a.marketing_name for a in report.gpus if a.node is not None and a.marketing_name
    }


def nvidia_smi_rows(runner: Runner = run_command) -> list[dict[str, str | None]]:
    """nvidia-smi --query-gpu rows (compute_cap needs driver >= 510; retried without it)."""
    for fields in ((*NVIDIA_QUERY_FIELDS, "compute_cap"), NVIDIA_QUERY_FIELDS):
        query = "--query-gpu=" + ",".join(fields)
        result = runner(["nvidia-smi", query, "--format=csv,nounits"], TOOL_TIMEOUT_S)
        if result.ran and result.returncode == 0:
            try:
                return parse_nvidia_smi_csv(result.stdout)
            except SmiParseError:
                return []
    return []
