"""`rocmkit doctor --from FILE...`: diagnose another machine from what its user pasted: tool
outputs (rocminfo, rocm-smi, amd-smi, nvidia-smi) are read for the GPUs and their hardware facts,
anything else is explained as a log. Pure: takes texts, returns a DoctorReport."""

from __future__ import annotations

from collections.abc import Mapping

from rocmkit.doctor.explain import explain
from rocmkit.doctor.findings import DoctorReport, Finding
from rocmkit.platform.pasted import read_pasted
from rocmkit.platform.smi import SmiParseError
from rocmkit.platform.smi_text import SmiGpu, SmiText
from rocmkit.platform.specs import arch_facts, find_spec_by_name, lookup_spec, spec_ambiguity

GIB = 2**30


def diagnose_pasted(texts: Mapping[str, str]) -> DoctorReport:
    """One or more findings per pasted file (name -> text), in the order given."""
    findings: list[Finding] = []
    for name, text in texts.items():
        try:
            report = read_pasted(text)
        except SmiParseError as exc:
            findings.extend(_log_findings(name, text, str(exc)))
            continue
        findings.append(_tool_finding(name, report))
    return DoctorReport(
        findings=tuple(findings), environment={"source": "pasted", "files": list(texts)}
    )


def _tool_finding(name: str, report: SmiText) -> Finding:
    lines = [_gpu_line(gpu) for gpu in report.gpus]
    versions = ", ".join(f"{k} {v}" for k, v in report.versions.items())
    detail = "\n".join([*lines, *report.notes])
    return Finding(
        id=f"from:{name}",
        status="warn" if report.notes else "ok",
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
        parts.append(
            gpu.arch + (f" ({facts.family}{', iGPU' if facts.integrated else ''})" if facts else "")
        )
    elif gpu.architecture_name:
        parts.append(gpu.architecture_name)
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
