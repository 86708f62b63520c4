"""Findings are reconciled so that a lower-level check cannot fail what a higher-level check
proved works: if the smoke test ran kernels on the GPU, the driver is loaded, whatever a version
file or a device node says. The overruled fail becomes a `note` naming the stronger evidence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rocmkit.doctor.findings import Finding

# Evidence a check may prove (Finding.evidence) -> how a person reads it.
EVIDENCE = {
    "gpu-kernels-ran": "kernels ran and gave correct results on the GPU",
}

# check id -> evidence that overrules its `fail`. Only the checks whose failure would make that
# evidence impossible belong here: a driver that is "not loaded" cannot have run a kernel.
OVERRULED_BY: dict[str, tuple[str, ...]] = {
    "kernel-driver": ("gpu-kernels-ran",),
}


def reconcile(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """The findings with every fail that stronger evidence contradicts turned into a note."""
    proved = {key: f for f in findings for key in f.evidence}
    out = []
    for finding in findings:
        keys = [k for k in OVERRULED_BY.get(finding.id, ()) if k in proved]
        if finding.status != "fail" or not keys:
            out.append(finding)
            continue
        prover = proved[keys[0]]
        out.append(
            replace(
                finding,
                status="note",
                summary=f"{finding.summary}; but {EVIDENCE[keys[0]]} "
                f"(check {prover.id}: {prover.summary}), so this is not a failure",
                detail=_join(finding.detail, f"this check alone suggested: {finding.fix}"),
                fix="",
                overruled=f"fail: {finding.summary}",
            )
        )
    return tuple(out)


def _join(*parts: str) -> str:
    return "\n".join(p for p in parts if p and not p.endswith(": "))
