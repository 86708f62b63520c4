"""Read a pasted tool output of another machine, whatever the tool: recognise the format and
parse it into `SmiText` (one `SmiGpu` per GPU). Pure; `read_pasted` raises `SmiParseError` for
text that is no known tool output (callers then treat it as a log). `join_outputs` joins the
outputs of one machine into one description, one row per GPU."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import fields, replace

from rocmkit.platform.kfd import parse_pasted_nodes
from rocmkit.platform.pci import gfx_from_pci_device_id
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
    parse_amd_smi_table,
    parse_amd_smi_text,
    parse_nvidia_smi_list,
    parse_nvidia_smi_q,
    parse_rocm_smi_text,
)


def read_pasted(text: str) -> SmiText:
    """The GPUs a pasted rocminfo / rocm-smi / amd-smi / nvidia-smi / KFD output describes; a gfx
    target no tool printed is derived from the PCI device id where the id is a known one."""
    report = _read(text.strip())
    gpus = tuple(replace(with_derived_arch(g), sources=(report.format,)) for g in report.gpus)
    return replace(report, gpus=gpus)


def with_derived_arch(gpu: SmiGpu) -> SmiGpu:
    """`gpu` with its gfx target looked up from its PCI device id when it has none."""
    if gpu.arch or not gpu.device_id:
        return gpu
    gfx = gfx_from_pci_device_id(gpu.device_id)
    return (
        replace(gpu, arch=gfx, arch_source=f"derived from PCI id {gpu.device_id}") if gfx else gpu
    )


def _read(stripped: str) -> SmiText:
    if "<nvidia_smi_log" in stripped:
        return _from_nvidia_xml(stripped)
    if "NVSMI LOG" in stripped or re.search(r"^GPU [0-9A-Fa-f]{8}:", stripped, flags=re.M):
        return parse_nvidia_smi_q(stripped)
    if _mostly_nvidia_list(stripped):
        return parse_nvidia_smi_list(stripped)
    if "HSA Agents" in stripped or "ROCk module" in stripped:
        return _from_rocminfo(stripped)
    if re.search(r"^\S*gfx_target_version\s+\d+\s*$", stripped, flags=re.M):
        return _from_kfd_properties(stripped)
    if re.search(r"\|\s*BDF\s+GPU-Name\s*\|", stripped):
        return parse_amd_smi_table(stripped)
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


def _mostly_nvidia_list(text: str) -> bool:
    """An `nvidia-smi -L` paste, not a log that quotes one line of it (a log stays a log, so
    its errors are still explained): most lines are -L lines."""
    lines = [line for line in text.splitlines() if line.strip()]
    listed = sum(
        bool(re.match(r"\s*(GPU \d+: .+\(UUID: GPU-|MIG .+\(UUID: MIG-)", x)) for x in lines
    )
    return listed > 0 and listed * 2 >= len(lines)


def _from_rocminfo(text: str) -> SmiText:
    report = parse_rocminfo(text)
    if not report.kfd_module_loaded:
        raise SmiParseError("rocminfo says the amdgpu (ROCk) module is not loaded: no GPUs listed")
    gpus = tuple(
        SmiGpu(
            index=i,
            name=agent.marketing_name or None,
            arch=agent.gfx_target,
            device_id=agent.device_id,
            pci_bus_id=agent.pci_bus_id,
            memory_total_bytes=agent.memory_bytes,
            num_compute_units=agent.compute_units,
        )
        for i, agent in enumerate(report.gpus)
    )
    if not gpus:
        raise SmiParseError("rocminfo lists no GPU agent (only CPUs)")
    versions = {"Runtime Version": report.runtime_version} if report.runtime_version else {}
    return SmiText(format="rocminfo", gpus=gpus, versions=versions)


def _from_kfd_properties(text: str) -> SmiText:
    nodes = [node for node in parse_pasted_nodes(text) if node.is_gpu]
    if not nodes:
        raise SmiParseError("KFD properties of CPU nodes only (simd_count 0): no GPU")
    local = [node.properties.get("local_mem_size") for node in nodes]
    gpus = tuple(
        SmiGpu(
            index=i,
            arch=node.gfx_target,
            device_id=node.device_id,
            pci_bus_id=node.pci_bus_id,
            # local_mem_size is 0 on recent kernels (VRAM is in mem_banks/, not pasted).
            memory_total_bytes=local[i] or None,
            num_compute_units=node.num_compute_units,
        )
        for i, node in enumerate(nodes)
    )
    return SmiText(format="KFD topology properties", gpus=gpus)


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


# ------------------------------------------------------------------ outputs of one machine


def join_outputs(reports: Sequence[tuple[str, SmiText]]) -> list[tuple[tuple[str, ...], SmiText]]:
    """Group pasted outputs (name, report) by machine and join each group into one report with
    one row per GPU. Outputs join when their GPUs match by PCI bus id or UUID, or by order when
    both list as many GPUs and no bus id, device id or gfx target contradicts; else they stay
    apart (another machine, or too little to tell)."""
    groups: list[tuple[tuple[str, ...], SmiText]] = []
    for name, report in reports:
        for k, (names, joined) in enumerate(groups):
            merged = join_two(joined, report)
            if merged is not None:
                groups[k] = ((*names, name), merged)
                break
        else:
            groups.append(((name,), report))
    return groups


def join_two(a: SmiText, b: SmiText) -> SmiText | None:
    """One report of the GPUs of `a` and `b`, or None when they cannot be told to be one machine."""
    if _vendor(a) != _vendor(b):
        return None
    swap = len(b.gpus) > len(a.gpus)
    large, small = (b, a) if swap else (a, b)
    pairs, how = _pair(large.gpus, small.gpus)
    if pairs is None:
        return None
    notes: list[str] = []
    rows = []
    for i, gpu in enumerate(large.gpus):
        other = small.gpus[pairs[i]] if i in pairs else None
        first, second = (other, gpu) if swap and other else (gpu, other)
        rows.append(_merge(first, second, notes, index=gpu.index) if second else gpu)
    named = all(r.name or (r.arch and not r.arch_source) for r in rows)
    # "paste `amd-smi static`" is answered when the other output names the GPUs.
    old_notes = [n for n in (*a.notes, *b.notes) if not (named and "names no product" in n)]
    joined = "; ".join([f"joined {a.format} and {b.format} {how}", *notes])
    return SmiText(
        format=f"{a.format} + {b.format}",
        gpus=tuple(rows),
        versions={**b.versions, **a.versions},
        notes=tuple(dict.fromkeys((*old_notes, joined))),
    )


_NVIDIA_UUID = re.compile(r"GPU-[0-9a-fA-F]{8}-[0-9a-fA-F-]{27}")


def _vendor(report: SmiText) -> str:
    return "nvidia" if report.format.startswith("nvidia") else "amd"


def _bus(gpu: SmiGpu) -> str | None:
    """ "00000000:84:00.0" / "0000:84:00.0" -> "84:00.0" (rocminfo prints no PCI domain)."""
    return gpu.pci_bus_id.lower().split(":", 1)[-1][-7:] if gpu.pci_bus_id else None


def _same(a: SmiGpu, b: SmiGpu) -> bool:
    return bool((_bus(a) and _bus(a) == _bus(b)) or (a.uuid and a.uuid == b.uuid))


def _pair(large: Sequence[SmiGpu], small: Sequence[SmiGpu]) -> tuple[dict[int, int] | None, str]:
    """large index -> small index, and how they were matched; None where they contradict."""
    pairs: dict[int, int] = {}
    for j, gpu in enumerate(small):
        hits = [i for i, other in enumerate(large) if _same(other, gpu)]
        if len(hits) == 1 and hits[0] not in pairs:
            pairs[hits[0]] = j
    if len(pairs) == len(small) and all(
        not _contradict(large[i], small[j]) for i, j in pairs.items()
    ):
        by_bus = all(_bus(large[i]) and _bus(large[i]) == _bus(small[j]) for i, j in pairs.items())
        return pairs, "by PCI bus id" if by_bus else "by UUID"
    if pairs or len(large) != len(small):
        return None, ""
    if any(_contradict(x, y) for x, y in zip(large, small, strict=True)):
        return None, ""
    return dict(enumerate(range(len(small)))), "by order (same GPU count, nothing contradicts)"


def _contradict(a: SmiGpu, b: SmiGpu) -> bool:
    """Two rows that cannot be the same GPU: another bus id, PCI device id, gfx target or
    NVIDIA UUID (amd-smi's UUIDs change once it can read the serial: they decide nothing)."""
    uuids = (
        (a.uuid, b.uuid) if all(_NVIDIA_UUID.fullmatch(u or "") for u in (a.uuid, b.uuid)) else ()
    )
    pairs = ((_bus(a), _bus(b)), (a.device_id, b.device_id), *([uuids] if uuids else []))
    arch = (a.arch, b.arch) if not (a.arch_source or b.arch_source) else (None, None)
    return any(x and y and x.lower() != y.lower() for x, y in (*pairs, arch))


def _source_of(m1: int, m2: int, first: SmiGpu, second: SmiGpu) -> str:
    larger = first if m1 >= m2 else second
    return "/".join(larger.sources) or "one output"


def _merge(first: SmiGpu, second: SmiGpu, notes: list[str], *, index: int) -> SmiGpu:
    """Field by field, what `first` says, else `second`; a name amd-smi cut ("...R9700") and a
    gfx target only derived from the PCI id give way to the other output's."""
    values = {f.name: getattr(first, f.name) or getattr(second, f.name) for f in fields(SmiGpu)}
    values["index"] = index  # the numbering of the output that lists all the GPUs
    if first.name and first.name.startswith("...") and second.name:
        values["name"] = second.name
    values["arch_source"] = first.arch_source if first.arch else second.arch_source
    if first.arch_source and second.arch and not second.arch_source:
        values["arch"], values["arch_source"] = second.arch, None
    m1, m2 = first.memory_total_bytes, second.memory_total_bytes
    if m1 and m2 and abs(m1 - m2) > 0.05 * max(m1, m2):
        # An APU: amd-smi gives the VRAM carve-out, rocminfo the pool the GPU can allocate.
        values["memory_total_bytes"] = max(m1, m2)
        notes.append(
            f"GPU {index} memory {max(m1, m2) / 2**30:.1f} GiB ({_source_of(m1, m2, first, second)}"
            f"; the other says {min(m1, m2) / 2**30:.1f} GiB, an iGPU's carve-out)"
        )
    values["sources"] = tuple(dict.fromkeys((*first.sources, *second.sources)))
    return SmiGpu(**values)
