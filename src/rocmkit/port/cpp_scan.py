"""CUDA C++ inside a Python project (.cu, .cuh and CUDA headers): the hazards `rocmkit hipify`
finds (inline PTX, warp-32 assumptions; through its public `translate`, so comments and string
literals are never findings) plus `__CUDA_ARCH__` guards, and the preprocessor switches the
project already has.

- `#if __CUDA_ARCH__ >= 800` (or `>`, `==`) around device code: hip-clang never defines
  __CUDA_ARCH__, so under HIP the block compiles to nothing. What a ROCm build gets instead
  decides the severity: nothing, for a path that needs what AMD lacks (hipify's cuda_arch.toml:
  AMD has what sm_60 and below gate), is warn; an `#else`/`#elif` the project wrote (it compiles
  instead) or a guard on a feature HIP has is info, "check". `!defined(__CUDA_ARCH__) || ...`
  and guards that also name a HIP macro are the project's own switch and are left alone.
- Code inside `#ifdef USE_ROCM` / `#ifndef __HIP_PLATFORM_AMD__` / `#ifdef MMCV_WITH_HIP`
  (either branch; a macro is a HIP switch when hip-clang or torch's ROCm build defines it, or
  its name has the word HIP or ROCM) is one side of a vendor switch: its hazards are info. Code
  in a branch no AMD compile takes (hipify's evaluator: `#if CUDA_VERSION >= 9000`, HIP has no
  CUDA_VERSION) is info.
- Lane arithmetic with 32 (`threadIdx.x % 32`) in a file that already has a HIP path is the
  project's choice (a tile of 32 columns, valid in a 64-lane wavefront): info; elsewhere warn.
  A warp width bound to 32 by name (`const int WARP_SZ = 32;`) is reported at its definition,
  where the fix goes, naming its uses; a width the project defines per vendor is info.
"""

from __future__ import annotations

import itertools
import re

from rocmkit.port import hip_atomics
from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import Rule, RuleSet, Severity
from rocmkit.port.warp_mask import NarrowMask, narrow_masks

# Macros every ROCm build of a torch extension defines (torch/utils/cpp_extension.py,
# COMMON_HIP_FLAGS: -D__HIP_PLATFORM_AMD__=1 -DUSE_ROCM=1 -DHIPBLAS_V2), those hip-clang
# predefines (__HIP__, __HIPCC__, __HIP_DEVICE_COMPILE__, __AMDGCN__, __gfx942__, ...), and a
# project's own flag named for HIP (`MMCV_WITH_HIP`, `WITH_ROCM`): a test of one is a HIP switch.
TORCH_HIP_DEFINES = ("__HIP_PLATFORM_AMD__", "USE_ROCM", "HIPBLAS_V2")
_HIP_WORDS = frozenset({"HIP", "HIPCC", "ROCM", "AMDGCN"})
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


# Removed in ROCm 6.0 (for __HIP_PLATFORM_AMD__): a test of it is no switch on a current ROCm.
REMOVED_HIP_MACRO = "__HIP_PLATFORM_HCC__"


def names_hip(condition: str) -> bool:
    """Whether a preprocessor condition tests a macro of a HIP build (see above)."""
    for name in _IDENTIFIER.findall(condition):
        if name == REMOVED_HIP_MACRO:
            continue
        if name in TORCH_HIP_DEFINES or name.startswith("__gfx"):
            return True
        if any(word.upper() in _HIP_WORDS and word[:1].isupper() for word in name.split("_")):
            return True
    return False


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
_ARCH_TESTS = re.compile(r"__CUDA_ARCH__\s*\)?\s*(>=|>|==|<=|<|!=)\s*\(?\s*(\d+)")
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
    hip_aware = bool(switches) or any(m in text for m in _HIP_AWARE)
    hits = _arch_guards(text, rules, switches)
    if REMOVED_HIP_MACRO in text:
        hits += _removed_platform_tests(text, rules)
    if not header and ("cutlass/" in text or "cute/" in text) and not _HEADER_GUARD.search(text):
        hits += _cutlass_includes(text, rules, switches)
    if "include" in text:
        hits += _headers_without_hip(text, rules, switches, hip_aware)
    if any(m in text for m in _CUDA_PREFILTER):
        hits += _hipify_hazards(text, rules, switches, hip_aware)
    if "_sync" in text:
        hits += _narrow_masks(text, rules, switches, hip_aware)
    if "atomic" in text and "__device__" in text:
        hits += _atomic_redefinitions(text, rules, switches)
    return _not_compiled_for_amd(text, hits) if hits and "#" in text else hits


def _not_compiled_for_amd(text: str, hits: list[Hit]) -> list[Hit]:
    """Port's own C++ findings inside a branch no AMD compile takes become info, as hipify's
    translate() does for its warnings: `#if CUDA_VERSION >= 9000` is false under hip-clang (HIP
    defines no CUDA_VERSION), so hipcc never sees that code (amd_branches.py's evaluator)."""
    from rocmkit.hipify import amd_dead_branches

    if all(h.severity == "info" for h in hits):
        return hits
    dead_branch = amd_dead_branches(text)
    starts = _line_starts(text, {h.line for h in hits})
    kept = []
    for h in hits:
        branch = dead_branch(starts[h.line]) if h.line in starts else None
        if branch is not None and h.severity != "info":
            h = h._replace(
                severity="info", evidence=f"not compiled for AMD ({branch}): {h.evidence}"
            )
        kept.append(h)
    return kept


def _narrow_masks(text: str, rules: RuleSet, switches: set[int], hip_aware: bool) -> list[Hit]:
    """Warp sync calls whose named mask is 32 bits, reported at the call and at each declaration
    that made it 32 bits (warp_mask.py has the declarations in HIP's header). In a file that
    already has a HIP path (USE_ROCM shims) the project compiles it for HIP its own way: info."""
    rule = rules.by_check.get("cuda-warp-mask")
    if rule is None:
        return []
    hits = []
    found_masks = narrow_masks(text)
    live, dead_lines = _live_declarations(text, found_masks)
    for found in found_masks:
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
            if line in live or line in dead_lines
            else hit(line, 1, rule, f"`{found.mask}`: {_ONLY_DEAD_USES}", "info")
            for line in found.declarations
        ]
    return hits


_ONLY_DEAD_USES = "32-bit lane mask, read only by calls no AMD compile takes"


def _live_declarations(text: str, found_masks: list[NarrowMask]) -> tuple[set[int], set[int]]:
    """(the declaration lines that a call an AMD compile takes reads, the lines of all calls and
    declarations that are themselves in a branch no AMD compile takes). A mask declared outside
    a branch (a parameter's default) and read only in `#if CUDA_VERSION >= 9000` is dead on AMD
    with that branch; what is inside one is lowered by _not_compiled_for_amd, saying which."""
    from rocmkit.hipify import amd_dead_branches

    declared = {line for found in found_masks for line in found.declarations}
    if not declared or "#" not in text:
        return declared, set()
    dead_branch = amd_dead_branches(text)
    lines = {found.line for found in found_masks} | declared
    starts = _line_starts(text, lines)
    dead = {line for line in lines if line in starts and dead_branch(starts[line]) is not None}
    live = {line for found in found_masks if found.line not in dead for line in found.declarations}
    return live, dead


def _atomic_redefinitions(text: str, rules: RuleSet, switches: set[int]) -> list[Hit]:
    """The source's own `__device__` definitions of atomics HIP's header defines (hip_atomics):
    hipcc rejects them (a branch no AMD compile takes is lowered by _not_compiled_for_amd; one
    on a line of the project's own HIP/CUDA switch is the project's decision)."""
    rule = rules.by_check.get("hip-atomic-redefinition")
    if rule is None:
        return []
    hits = []
    for offset, evidence in hip_atomics.redefinitions(text):
        line = text.count("\n", 0, offset) + 1
        if line not in switches:
            hits.append(hit(line, offset - text.rfind("\n", 0, offset), rule, evidence))
    return hits


def _line_starts(text: str, lines: set[int]) -> dict[int, int]:
    """{line: offset of its first character} for the given 1-based lines (split, len and
    accumulate all run in C: a Python step per line cost more than the rest of this pass)."""
    parts = text.split("\n", max(lines) - 1)
    # line n starts after the n - 1 lines before it and their newlines
    lengths = list(itertools.accumulate(map(len, parts[:-1]), initial=0))
    return {line: lengths[line - 1] + line - 1 for line in lines if line <= len(lengths)}


# hipify's categories that follow a warp width; `cuda-arch` is the arch guard rule's own finding.
_WIDTH_CATEGORIES = frozenset({"warp-size", "warp-lane-arithmetic", "warp-size-literal"})
# Each starts with a literal (the regex engine jumps between candidates); what precedes `#` on
# its line, and the word boundary before `const`, are checked apart.
_WIDTH_32 = (
    re.compile(r"\#[ \t]*define[ \t]+(\w+)[ \t]+\(?32\)?[ \t]*(?:$|//|/\*)", re.MULTILINE),
    re.compile(r"const(?:expr)?\b[^;=(){}\n]*?\b(\w+)\s*[={]\s*32\s*[;},]"),
)
_DEFINE_NAME = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.MULTILINE)


def _hipify_hazards(text: str, rules: RuleSet, switches: set[int], hip_aware: bool) -> list[Hit]:
    from rocmkit.hipify import TranslateOptions, find_hazards, hazard_diagnostics

    if next(find_hazards(text), None) is None:
        return []  # the same regexes translate() runs: nothing to confirm, skip the translation
    warp = rules.by_check.get("cuda-source")
    ptx = rules.by_check.get("cuda-inline-ptx") or warp
    # translate()'s hazards without its translation (no identifier mapped, no text rewritten)
    diagnostics = hazard_diagnostics(text, options=TranslateOptions(mappings="builtin"))
    widths = _width_definitions(text, switches)
    hits = []
    uses: dict[str, list[int]] = {}
    for d in diagnostics:
        if d.category == "cuda-arch":
            continue
        rule = ptx if d.category == "inline-ptx" else warp
        if rule is None:
            continue
        severity = rule.severity
        evidence = f"{d.category}: {d.name} - {d.message}"
        named = _width_named(d.name, widths) if d.category in _WIDTH_CATEGORIES else None
        if d.line in switches:
            severity, evidence = "info", evidence + "  (inside a HIP/CUDA preprocessor switch)"
        elif named is not None and widths[named] is None:
            severity, evidence = "info", f"{named} is defined per vendor: {evidence}"
        elif hip_aware and _lane_arithmetic(d.category, d.message):
            severity, evidence = "info", evidence + "  (the file already has a HIP path)"
        elif named is not None and "warp" not in named.lower():
            # CUDA's warp is warpSize; a 32 the project names for threads, a tile or a pixel
            # (THREADS_X, BLOCK, EPB) is a launch or tiling size, valid on AMD unless the group
            # must be one hardware warp, which the code alone does not say.
            severity, evidence = "info", f"{named} = 32 is not named for a warp: {evidence}"
        elif named is not None:
            uses.setdefault(named, []).append(d.line)
        hits.append(hit(d.line, d.column, rule, evidence, severity))
    if warp is not None:
        hits += _at_definitions(uses, widths, warp)
    return hits


def _lane_arithmetic(category: str, message: str) -> bool:
    """hazards.py's fixed spellings (`threadIdx.x % 32`) and warpsize.py's lane indices through
    a name (`tid % THREADS_PER_PIXEL`) are one hazard: a lane index computed with 32."""
    return category == "warp-lane-arithmetic" or message.startswith("lane/warp index")


def _width_definitions(text: str, switches: set[int]) -> dict[str, list[int] | None]:
    """{name: lines} of each warp width bound to 32 (`#define WARP_SIZE 32`, `const int WARP_SZ =
    32;`, once per scope that binds it); None for a name the project also defines inside a
    HIP/CUDA switch (64 under HIP)."""
    if "32" not in text:
        return {}
    widths: dict[str, list[int] | None] = {}
    found = [m for pattern in _WIDTH_32 for m in pattern.finditer(text) if _bound(text, m.start())]
    for match in sorted(found, key=lambda m: m.start()):
        name = match.group(1)
        line = text.count("\n", 0, match.start()) + 1
        known = widths.setdefault(name, [])
        if line in switches:
            widths[name] = None
        elif known is not None:
            known.append(line)
    if switches:
        for match in _DEFINE_NAME.finditer(text):
            if match.group(1) in widths and text.count("\n", 0, match.start()) + 1 in switches:
                widths[match.group(1)] = None
    return widths


def _bound(text: str, start: int) -> bool:
    """A `#define` alone at its line's start, a `const` not inside a longer name."""
    if text[start] == "#":
        return not text[text.rfind("\n", 0, start) + 1 : start].strip(" \t")
    return not (start and (text[start - 1].isalnum() or text[start - 1] == "_"))


def _width_named(snippet: str, widths: dict[str, list[int] | None]) -> str | None:
    return next((n for n in _IDENTIFIER.findall(snippet) if n in widths), None)


def _at_definitions(
    uses: dict[str, list[int]], widths: dict[str, list[int] | None], rule: Rule
) -> list[Hit]:
    """A width used in warp code is fixed where it is defined (every hazard list of the corpus
    puts it there): one hit at the definition that reaches the uses (the last one above them),
    naming them."""
    hits = []
    for name, lines in uses.items():
        defined = [line for line in widths.get(name) or () if line < min(lines)]
        if not defined:
            continue
        used = sorted(set(lines))
        shown = ", ".join(str(n) for n in used[:6]) + ("..." if len(used) > 6 else "")
        evidence = (
            f"{name} = 32 sizes warp code at lines {shown}: derive it from warpSize (64 on CDNA)"
        )
        hits.append(hit(defined[-1], 1, rule, evidence))
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


# `#include <X>` of a header the CUDA toolkit installs (CUDA 13's list, hipify's toolkit.py).
_ANGLE_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<([^>\s]+)>", re.M)
# What PyTorch's hipify rewrites in an include (torch.utils.hipify.cuda_to_hip_mappings'
# CUDA_INCLUDE_MAP, torch 2.14: each key is replaced wherever it occurs in the path), so these
# headers reach hipcc as HIP's. tests/port checks the list against the installed torch.
TORCH_HIPIFY_INCLUDES = (
    "cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "cuda_profiler_api.h",
    "channel_descriptor.h", "device_functions.h", "driver_types.h", "library_types.h",
    "cuComplex.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_texture_types.h", "cooperative_groups.h",
    "vector_types.h", "cublas.h", "cublas_v2.h", "cublasLt.h", "curand.h", "curand_kernel.h",
    "curand_discrete.h", "curand_discrete2.h", "curand_globals.h", "curand_lognormal.h",
    "curand_mrg32k3a.h", "curand_mtgp32.h", "curand_mtgp32_host.h", "curand_mtgp32_kernel.h",
    "curand_mtgp32dc_p_11213.h", "curand_normal.h", "curand_normal_static.h",
    "curand_philox4x32_x.h", "curand_poisson.h", "curand_precalc.h", "curand_uniform.h",
    "cusparse.h", "cusparseLt.h", "cufft.h", "cufftXt.h", "cufile.h", "nccl.h", "nvrtc.h",
    "thrust/system/cuda", "cub/", "nvtx3/nvtx3.hpp", "nvToolsExt.h", "nvml.h",
    "tensorpipe/tensorpipe_cuda.h",
)  # fmt: skip


def _headers_without_hip(
    text: str, rules: RuleSet, switches: set[int], hip_aware: bool
) -> list[Hit]:
    """`#include <X>` of a CUDA toolkit header that HIP has no counterpart for (its verdict in
    hipify's header list: HIP's headers declare none of what X declares in full: libcu++'s
    cuda/std/..., WMMA's mma.h, cuda_fp8.h, cooperative_groups/reduce.h, cuda_pipeline.h) and
    that PyTorch's hipify does not rewrite: hipcc (or hipRTC) finds no such file on ROCm. In a
    file that already has a HIP path the include is the CUDA side's (info); inside a HIP/CUDA
    switch it is left to the switch."""
    rule = rules.by_check.get("cuda-header")
    if rule is None:
        return []
    from rocmkit.hipify import LATEST_HIP_VERSION, header_verdicts  # lists load on first use

    release, verdicts = header_verdicts(LATEST_HIP_VERSION)
    hits = []
    for match in _ANGLE_INCLUDE.finditer(text):
        path = match.group(1)
        decided = verdicts.get(path, "")
        if not decided.startswith("-") or any(key in path for key in TORCH_HIPIFY_INCLUDES):
            continue
        line = text.count("\n", 0, match.start()) + 1  # rare: only an include HIP lacks
        if line in switches:
            continue
        lacks = decided.removeprefix("-").strip()
        evidence = f"#include <{path}>: no HIP {release} counterpart (HIP lacks {lacks})"
        if hip_aware:
            evidence += "  (the file already has a HIP path)"
        severity: Severity | None = "info" if hip_aware else None
        hits.append(hit(line, 1, rule, evidence[:200], severity))
        hits += _header_uses(text, path, rule, switches, severity)
    return hits


# What code uses of a header HIP lacks, by the names CUDA 13's header declares (read from
# /usr/local/cuda/include): cooperative_groups/reduce.h declares cooperative_groups::reduce,
# reduce_update_async and reduce_store_async, scan.h inclusive_scan and exclusive_scan,
# memcpy_async.h memcpy_async, wait and wait_prior (each called through the namespace or its
# alias: `cg::reduce(tile, v, cg::plus<float>())`); mma.h the nvcuda::wmma namespace;
# cuda_pipeline.h (and _primitives) the __pipeline_* functions; cuda_fp8.h the __nv_fp8 types and
# conversions; libcu++'s cuda/... headers the cuda:: namespace. The lines that use them are the
# places to change, beside the include.
_HEADER_USES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "cooperative_groups/reduce.h",
        re.compile(r"::\s*(?:reduce|reduce_update_async|reduce_store_async)\s*[(<]"),
    ),
    ("cooperative_groups/scan.h", re.compile(r"::\s*(?:inclusive_scan|exclusive_scan)\s*[(<]")),
    (
        "cooperative_groups/memcpy_async.h",
        re.compile(r"::\s*(?:memcpy_async|wait|wait_prior)\s*[(<]"),
    ),
    ("mma.h", re.compile(r"\bwmma::")),
    ("cuda_pipeline", re.compile(r"\b__pipeline_\w+\s*\(")),
    ("cuda_fp8.h", re.compile(r"\b__nv_(?:fp8|cvt_\w*fp8)\w*")),
    ("cuda/", re.compile(r"(?<![:\w])cuda::")),
)


def _header_uses(
    text: str, path: str, rule: Rule, switches: set[int], severity: Severity | None
) -> list[Hit]:
    """The lines that use what the included header (HIP lacks) declares, outside HIP/CUDA
    switches, each a place of the include's finding."""
    pattern = next((p for prefix, p in _HEADER_USES if path.startswith(prefix)), None)
    if pattern is None:
        return []
    hits: list[Hit] = []
    seen: set[int] = set()
    for match in pattern.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if line in seen or line in switches or _commented(text, match.start()):
            continue
        seen.add(line)
        hits.append(hit(line, 1, rule, f"uses {match.group(0).strip()} from <{path}>", severity))
    return hits


def _commented(text: str, position: int) -> bool:
    """Whether a `//` comment starts before `position` on its line."""
    start = text.rfind("\n", 0, position) + 1
    return "//" in text[start:position]


def _arch_guards(text: str, rules: RuleSet, switches: set[int]) -> list[Hit]:
    rule = rules.by_check.get("cuda-arch-guard")
    if rule is None or "__CUDA_ARCH__" not in text:
        return []
    hits = []
    hip_copy = _HIP_COPY.search(text) is not None and _CUDA_HEADER.search(text) is None
    for match in _DIRECTIVE.finditer(text):
        kind, condition = match.group(1), match.group(2).split("//")[0]
        if kind not in ("if", "elif") or not _ARCH_TEST.search(condition):
            continue
        if _NOT_DEFINED_ARCH.search(condition) or names_hip(condition):
            continue
        line = text.count("\n", 0, match.start()) + 1
        evidence = f"#{kind}{condition.rstrip()}"
        if line in switches:
            hits.append(hit(line, 1, rule, evidence + "  (inside a HIP/CUDA switch)", "info"))
            continue
        lost = _hip_copy_loses(condition) if hip_copy else None
        instead = _what_amd_compiles(text, match.end(), condition) if lost is None else None
        if lost is not None:
            hits.append(hit(line, 1, rule, f"{evidence.strip()}: {lost}"))
        elif instead is None:
            hits.append(hit(line, 1, rule, evidence))
        else:
            hits.append(hit(line, 1, rule, f"{evidence.strip()}: {instead}", "info"))
    return hits


def _removed_platform_tests(text: str, rules: RuleSet) -> list[Hit]:
    """`#if defined(__HIP_PLATFORM_HCC__)` (or #ifdef/#ifndef/#elif) naming no current HIP
    macro: ROCm 6 no longer defines it, so the branch written for AMD is never compiled and
    the other one (CUDA's values: a warp of 32, cuSPARSE) is: warn, at the directive."""
    rule = rules.by_check.get("hip-platform-hcc")
    if rule is None:
        return []
    hits = []
    for match in _DIRECTIVE.finditer(text):
        kind, condition = match.group(1), match.group(2).split("//")[0]
        tests_it = kind in ("if", "ifdef", "ifndef", "elif") and REMOVED_HIP_MACRO in condition
        if tests_it and not names_hip(condition):
            line = text.count("\n", 0, match.start()) + 1
            hits.append(hit(line, 1, rule, f"#{kind} {condition.strip()}"))
    return hits


# A HIP copy of CUDA kernels (it includes HIP's headers and none of CUDA's) is compiled by
# hipcc only, which never defines __CUDA_ARCH__: a guard there is false on every build.
_HIP_COPY = re.compile(r"(?m)^[ \t]*#[ \t]*include[ \t]*[<\"]hip/")
_CUDA_HEADER = re.compile(
    r"(?m)^[ \t]*#[ \t]*include[ \t]*[<\"](?:cuda|cuda_runtime|cuda_fp16)[\w.]*[>\"]"
)


def _hip_copy_loses(condition: str) -> str | None:
    """What a HIP copy loses under a guard whose lowest threshold AMD meets (hipify's
    cuda_arch.toml, from HIP's headers): the guarded path HIP could compile never is, on the only
    compiler the file has, so its fallback always runs. None where AMD lacks the feature."""
    from rocmkit.hipify import arch_table

    table = arch_table()
    thresholds = [int(n) for op, n in _ARCH_TESTS.findall(condition) if op in (">=", ">", "==")]
    if not thresholds or min(thresholds) > table.amd_value:
        return None
    gate = table.gates.get(min(thresholds), "a feature HIP has")
    return (
        f"this HIP copy is built by hipcc only, which never defines __CUDA_ARCH__: the {gate}"
        " path is compiled out on every build; test `defined(__HIP_DEVICE_COMPILE__)` too"
    )


def _what_amd_compiles(text: str, end: int, condition: str) -> str | None:
    """Why a ROCm build does not lose work under this guard, or None when it does. hip-clang
    never defines __CUDA_ARCH__, so the guarded block is always dropped; what replaces it is the
    group's next `#elif`/`#else` (the project's path for GPUs below the threshold), and a guard
    whose lowest threshold AMD meets (hipify's cuda_arch.toml, from HIP's headers) drops code
    HIP could compile: a lost path, whose effect port cannot judge."""
    from rocmkit.hipify import arch_table

    alternative = _branch_amd_takes(text, end)
    if alternative is not None:
        line = text.count("\n", 0, alternative[0]) + 1
        if not _STUB.fullmatch(_COMMENT.sub("", text[alternative[0] : alternative[1]])):
            return f"AMD compiles the branch at line {line} instead: check it is the path for AMD"
    table = arch_table()
    table = arch_table()
    thresholds = [int(n) for op, n in _ARCH_TESTS.findall(condition) if op in (">=", ">", "==")]
    if thresholds and min(thresholds) <= table.amd_value:
        gate = table.gates.get(min(thresholds), "an old feature")
        return f"HIP has {gate}: `|| defined(__HIP_DEVICE_COMPILE__)` keeps it on AMD"
    return None


# An alternative that only stops or says it is unsupported is no path: the work is still lost.
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_STUB = re.compile(
    r"[ \t]*\#[ \t]*(?:else|elif)[^\n]*"
    r"(?:\s|assert\s*\([^;]*\)\s*;|__trap\s*\(\s*\)\s*;|printf\s*\([^;]*\)\s*;|return\s*;"
    r"|(?:asm|__asm__)\s*(?:volatile\s*|__volatile__\s*)?\(\s*\"trap;\"\s*\)\s*;|\#[ \t]*error[^\n]*)*"
)


def _branch_amd_takes(text: str, end: int) -> tuple[int, int] | None:
    """(start, end) of the `#elif`/`#else` branch of the group whose condition ends at `end`
    that an AMD compile may take: not an `#elif` on `__CUDA_ARCH__ >= N` (false there too)."""
    depth, start = 0, None
    for match in _DIRECTIVE.finditer(text, end):
        kind, condition = match.group(1), match.group(2).split("//")[0]
        if kind in ("if", "ifdef", "ifndef"):
            depth += 1
            continue
        if depth > 0:
            depth -= kind == "endif"
            continue
        if start is not None:
            return start, match.start()
        if kind == "endif":
            return None
        skipped = _ARCH_TEST.search(condition) and not _NOT_DEFINED_ARCH.search(condition)
        if kind == "else" or not skipped or names_hip(condition):
            start = match.start()
    return None


def _vendor_switch_lines(text: str) -> set[int]:
    """Lines inside a preprocessor block (either branch) whose condition names a HIP macro."""
    lines: set[int] = set()
    stack: list[tuple[int, bool]] = []  # (start line, names HIP)
    line, counted = 1, 0  # the line number at offset `counted`, advanced match by match
    for match in _DIRECTIVE.finditer(text):
        kind, condition = match.group(1), match.group(2)
        line += text.count("\n", counted, match.start())
        counted = match.start()
        if kind in ("if", "ifdef", "ifndef"):
            stack.append((line, names_hip(condition)))
        elif kind in ("elif", "else") and stack:
            start, hip = stack[-1]
            stack[-1] = (start, hip or names_hip(condition))
        elif kind == "endif" and stack:
            start, hip = stack.pop()
            if hip:
                lines.update(range(start, line + 1))
    return lines
