"""An import a package's __init__.py already makes, repeated in the package's modules.

Python runs a package's __init__.py before any module inside it (the import system, Language
Reference 5.4), so where `pkg/__init__.py` imports a CUDA-only library at its top level, a
`pkg/ops.py` importing it again cannot fail or succeed on its own: the package has already done
so. The finding stays at the __init__.py (the place to fix); the repeats below it are info
pointing there, so one hard dependency is not reported once per module.
"""

from __future__ import annotations

import dataclasses

from rocmkit.port.findings import PortFinding
from rocmkit.port.rules import severity_rank


def imported_module(finding: PortFinding) -> str | None:
    """The module of a plain import finding (`import warp`), None for anything else (a lazy
    or optional import carries a note in parentheses and is not what its package runs)."""
    evidence = finding.evidence.split("  (+", 1)[0]
    if not evidence.startswith("import ") or "(" in evidence:
        return None
    return evidence[len("import ") :].split()[0].split(".")[0]


def reported_by_package(findings: list[PortFinding]) -> list[PortFinding]:
    """Findings with imports repeated below an __init__.py that reports the same import turned
    to info, noting where it is reported."""
    inits: dict[tuple[str, str, str], PortFinding] = {}
    for f in findings:
        module = imported_module(f)
        if module and f.path.rsplit("/", 1)[-1] == "__init__.py" and f.severity != "info":
            inits[(f.path.rsplit("/", 1)[0], f.rule_id, module)] = f
    if not inits:
        return findings
    out = []
    for f in findings:
        first = _first_init(f, inits) if f.severity != "info" else None
        if first is None:
            out.append(f)
            continue
        note = f"its package's {first.path}:{first.line} imports it first (reported there)"
        out.append(dataclasses.replace(f, severity="info", note=note))
    return out


def _first_init(
    finding: PortFinding, inits: dict[tuple[str, str, str], PortFinding]
) -> PortFinding | None:
    module = imported_module(finding)
    if module is None or "/" not in finding.path:
        return None
    parts = finding.path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):  # the outermost package first: it runs first
        init = inits.get(("/".join(parts[:depth]), finding.rule_id, module))
        if (
            init is not None
            and init is not finding
            and severity_rank(init.severity) >= severity_rank(finding.severity)
        ):
            return init
    return None
