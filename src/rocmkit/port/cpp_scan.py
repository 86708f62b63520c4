"""CUDA C++ inside a Python project (.cu, .cuh and CUDA headers): the hazards `rocmkit hipify`
finds (inline PTX, warp-32 assumptions; through its public `translate`, so comments and string
literals are never findings) plus `__CUDA_ARCH__` guards, and the preprocessor switches the
project already has.

- `#if __CUDA_ARCH__ >= 800` (or `>`, `==`) around device code: hipcc never defines
  __CUDA_ARCH__, so under HIP the block compiles to nothing (or to its #else): a kernel that is
  silently empty or takes the slow path. `!defined(__CUDA_ARCH__) || ...` and guards that also
  name a HIP macro are the project's own switch and are left alone.
- Code inside `#ifdef USE_ROCM` / `#ifndef __HIP_PLATFORM_AMD__` / `#if defined(__gfx942__)`
  (either branch) is one side of a vendor switch: its hazards are info.
- Lane arithmetic with 32 (`threadIdx.x % 32`) in a file that already has a HIP path is the
  project's choice (a tile of 32 columns, valid in a 64-lane wavefront): info; elsewhere warn.
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import RuleSet, Severity
from rocmkit.port.warp_mask import narrow_masks

HIP_MACROS = re.compile(
    r"USE_ROCM|__HIP_PLATFORM_(?:AMD|HCC)__|__HIPCC__|__HIP__|__HIP_DEVICE_COMPILE__|"
    r"__gfx\w+__|HIP_BUILD|USE_HIP|__HIP_ARCH|ROCM"
)
_HIP_AWARE = (
    "USE_ROCM",
    "__HIP_PLATFORM",
    "__HIPCC__",
    "hip_runtime",
    "rocprim",
    "hipcub",
    "__gfx",
)
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$", re.MULTILINE)
_ARCH_TEST = re.compile(r"__CUDA_ARCH__\s*\)?\s*(>=|>|==)\s*\d+")
_NOT_DEFINED_ARCH = re.compile(r"!\s*defined\s*\(?\s*__CUDA_ARCH__")
# Anything worth a translate() call: hipify's hazard patterns start with one of these.
_CUDA_PREFILTER = ("asm", "32", "__shfl", "__ballot", "__activemask", "arp")
# A header is CUDA code only if it holds device code or CUDA-only constructs.
_CUDA_HEADER_MARKERS = ("__global__", "__device__", "__CUDA_ARCH__", "asm", "__shfl", "cuda")


def scan_cuda_source(text: str, rules: RuleSet, *, header: bool = False) -> list[Hit]:
    """Hazards of one CUDA source or header."""
    if header and not any(m in text for m in _CUDA_HEADER_MARKERS):
        return []
    switches = _vendor_switch_lines(text) if "#" in text else set()
    hip_aware = any(m in text for m in _HIP_AWARE)
    hits = _arch_guards(text, rules, switches)
    if not header and ("cutlass/" in text or "cute/" in text) and not _HEADER_GUARD.search(text):
        hits += _cutlass_includes(text, rules, switches)
    if any(m in text for m in _CUDA_PREFILTER):
        hits += _hipify_hazards(text, rules, switches, hip_aware)
    if "_sync" in text:
        hits += _narrow_masks(text, rules, switches, hip_aware)
    return hits


def _narrow_masks(text: str, rules: RuleSet, switches: set[int], hip_aware: bool) -> list[Hit]:
    """Warp sync calls whose named mask is 32 bits, reported at the call and at each declaration
    that made it 32 bits (warp_mask.py has the declarations in HIP's header). In a file that
    already has a HIP path (USE_ROCM shims) the project compiles it for HIP its own way: info."""
    rule = rules.by_check.get("cuda-warp-mask")
    if rule is None:
        return []
    hits = []
    for found in narrow_masks(text):
        places = [found.line, *found.declarations]
        if any(line in switches for line in places):
            continue  # the project's own HIP/CUDA switch decides the mask
        at = ", ".join(f"line {line}" for line in found.declarations)
        evidence = f"mask `{found.mask}` is 32 bits" + (f" (declared at {at})" if at else "")
        severity: Severity | None = "info" if hip_aware else None
        if hip_aware:
            evidence += "  (the file already has a HIP path)"
        hits.append(hit(found.line, found.column, rule, evidence, severity))
        hits += [
            hit(line, 1, rule, f"`{found.mask}`: 32-bit lane mask", severity)
            for line in found.declarations
        ]
    return hits


def _hipify_hazards(text: str, rules: RuleSet, switches: set[int], hip_aware: bool) -> list[Hit]:
    from rocmkit.hipify import TranslateOptions, find_hazards, translate

    if next(find_hazards(text), None) is None:
        return []  # the same regexes translate() runs: nothing to confirm, skip the translation
    warp = rules.by_check.get("cuda-source")
    ptx = rules.by_check.get("cuda-inline-ptx") or warp
    translation = translate(text, options=TranslateOptions(mappings="builtin"))
    hits = []
    for d in translation.diagnostics:
        if d.kind != "hazard":
            continue
        rule = ptx if d.category == "inline-ptx" else warp
        if rule is None:
            continue
        severity = rule.severity
        evidence = f"{d.category}: {d.name} - {d.message}"
        if d.line in switches:
            severity, evidence = "info", evidence + "  (inside a HIP/CUDA preprocessor switch)"
        elif hip_aware and d.category == "warp-lane-arithmetic":
            severity, evidence = "info", evidence + "  (the file already has a HIP path)"
        hits.append(hit(d.line, d.column, rule, evidence, severity))
    return hits


# CUTLASS and CuTe are NVIDIA's CUDA C++ template libraries (their own docs: CUDA 11.4+ and
# NVIDIA architectures only); there is no HIP port, so a translation unit that includes them
# does not compile under hipcc whatever the hipify mapping does.
_CUTLASS_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]((?:cutlass|cute)/[^>"]+)', re.M)


# `#pragma once` or an include guard: a header (also a .cuh), compiled only through the sources
# that include it, where the finding already is.
_HEADER_GUARD = re.compile(
    r"^[ \t]*#[ \t]*(?:pragma[ \t]+once|ifndef[ \t]+(\w+)\s+#[ \t]*define[ \t]+\1)", re.M
)


def _cutlass_includes(text: str, rules: RuleSet, switches: set[int]) -> list[Hit]:
    """CUTLASS/CuTe headers included outside a HIP/CUDA preprocessor switch, in a source file
    (a translation unit the extension compiles; a header is compiled only through one)."""
    rule = rules.by_check.get("cuda-extension")
    if rule is None:
        return []
    hits = []
    for match in _CUTLASS_INCLUDE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        evidence = (
            f"#include {match.group(1)}: CUTLASS has no HIP port, so hipcc cannot compile this"
            " source; keep the CUTLASS path under #ifndef USE_ROCM with a HIP fallback"
        )
        inside = line in switches
        hits.append(
            hit(
                line,
                1,
                rule,
                evidence + ("  (inside a HIP/CUDA switch)" if inside else ""),
                "info" if inside else "error",
            )
        )
    return hits


def _arch_guards(text: str, rules: RuleSet, switches: set[int]) -> list[Hit]:
    rule = rules.by_check.get("cuda-arch-guard")
    if rule is None or "__CUDA_ARCH__" not in text:
        return []
    hits = []
    for match in _DIRECTIVE.finditer(text):
        kind, condition = match.group(1), match.group(2).split("//")[0]
        if kind not in ("if", "elif") or not _ARCH_TEST.search(condition):
            continue
        if _NOT_DEFINED_ARCH.search(condition) or HIP_MACROS.search(condition):
            continue
        line = text.count("\n", 0, match.start()) + 1
        evidence = f"#{kind}{condition.rstrip()}"
        if line in switches:
            hits.append(hit(line, 1, rule, evidence + "  (inside a HIP/CUDA switch)", "info"))
        else:
            hits.append(hit(line, 1, rule, evidence))
    return hits


def _vendor_switch_lines(text: str) -> set[int]:
    """Lines inside a preprocessor block (either branch) whose condition names a HIP macro."""
    lines: set[int] = set()
    stack: list[tuple[int, bool]] = []  # (start line, names HIP)
    for match in _DIRECTIVE.finditer(text):
        kind, condition = match.group(1), match.group(2)
        line = text.count("\n", 0, match.start()) + 1
        if kind in ("if", "ifdef", "ifndef"):
            stack.append((line, bool(HIP_MACROS.search(condition))))
        elif kind in ("elif", "else") and stack:
            start, hip = stack[-1]
            stack[-1] = (start, hip or bool(HIP_MACROS.search(condition)))
        elif kind == "endif" and stack:
            start, hip = stack.pop()
            if hip:
                lines.update(range(start, line + 1))
    return lines
