"""`rocmkit doctor --from FILE...`: diagnose another machine from what its user pasted: tool
outputs (rocminfo, rocm-smi, amd-smi, nvidia-smi) are read for the GPUs and their hardware facts,
anything else is explained as a log. Pure: takes texts, returns a DoctorReport."""

from __future__ import annotations

from collections.abc import Mapping

from rocmkit.doctor.explain import explain
from rocmkit.doctor.findings import DoctorReport, Finding
from rocmkit.platform.pasted import join_outputs, read_pasted
from rocmkit.platform.smi import SmiParseError
from rocmkit.platform.smi_text import SmiGpu, SmiText
from rocmkit.platform.specs import arch_facts, find_spec_by_name, lookup_spec, spec_ambiguity

GIB = 2**30


def diagnose_pasted(texts: Mapping[str, str]) -> DoctorReport:
    """Findings for pasted files (name -> text): one per machine the tool outputs describe (the
    outputs of one machine are joined into one GPU list), then one or more per log."""
    tools: list[tuple[str, SmiText]] = []
    logs: list[Finding] = []
    for name, text in texts.items():
        try:
            tools.append((name, read_pasted(text)))
        except SmiParseError as exc:
            logs.extend(_log_findings(name, text, str(exc)))
    findings = [_tool_finding(names, report) for names, report in join_outputs(tools)]
    return DoctorReport(
        findings=(*findings, *logs), environment={"source": "pasted", "files": list(texts)}
    )


def _tool_finding(names: tuple[str, ...], report: SmiText) -> Finding:
    lines = [_gpu_line(gpu) for gpu in report.gpus]
    versions = ", ".join(f"{k} {v}" for k, v in report.versions.items())
    detail = "\n".join([*lines, *report.notes])
    joined = [n for n in report.notes if n.startswith("joined ")]
    return Finding(
        id="from:" + "+".join(names),
        status="warn" if len(report.notes) > len(joined) else "ok",
        summary=f"{report.format}: {len(report.gpus)} GPU(s)"
        + (f" ({versions})" if versions else "")
        + (f": {lines[0]}" if len(lines) == 1 else ""),
        detail=detail,
    )


def _gpu_line(gpu: SmiGpu) -> str:
    unnamed = f"unnamed (PCI device {gpu.device_id})" if gpu.device_id else "unnamed"
    parts = [f"GPU {gpu.index}: {gpu.name or unnamed}"]
    facts = arch_facts(gpu.arch) if gpu.arch else None
    if gpu.arch:
        family = f"{facts.family}{', iGPU' if facts.integrated else ''}" if facts else ""
        why = ", ".join(x for x in (family, gpu.arch_source) if x)
        parts.append(gpu.arch + (f" ({why})" if why else ""))
    elif gpu.architecture_name:
        parts.append(gpu.architecture_name)
    if gpu.num_compute_units:
        parts.append(f"{gpu.num_compute_units} CUs")
    if gpu.memory_total_bytes:
        parts.append(f"{gpu.memory_total_bytes / GIB:.1f} GiB")
    spec = lookup_spec(gpu.arch, gpu.name) if gpu.arch else find_spec_by_name(gpu.name)
    if spec is not None:
        bf16 = spec.peak_for("bf16")
        unchecked = "" if spec.checked("bf16") else ", not re-checked against the vendor's table"
        parts.append(
            f"peak bf16 {bf16:g} TFLOPS dense ({spec.name}{unchecked})" if bf16 else spec.name
        )
    else:
        parts.append(spec_ambiguity(gpu.name) or "no hardware-facts row: peaks n/a")
    return ", ".join(parts)


def _log_findings(name: str, text: str, why_not_tool: str) -> list[Finding]:
    matches = explain(text)
    if not matches:
        return [
            Finding(
                id=f"from:{name}",
                status="skip",
                summary=f"{why_not_tool}, and no known failure signature in it",
            )
        ]
    return [
        Finding(
            id=f"from:{name}:{m.id}",
            status="fail" if m.level == "error" else ("warn" if m.level == "warning" else "ok"),
            summary=f"line {m.line_number}: {m.cause}",
            detail="\n".join(f"{n}: {t}" for n, t in ((m.line_number, m.line), *m.evidence)),
            fix=m.fix,
        )
        for m in matches
    ]
