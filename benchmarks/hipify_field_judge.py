"""Judging rocmkit's output on the field corpus (benchmarks/hipify_field.py): exclusions, coverage,
false positives. Rules, written down once:

Exclusion (a failing unit HIP cannot express here), from hipcc's output of rocmkit's translation:
- a missing library: hipcc reports `'H' file not found` for a header of a HIP library (its folder
  or name is in LIBRARIES); the evidence names the header, the library and its Debian package with
  what apt knows of it on this machine;
- a missing CUDA SDK header: `'H' file not found` where H is a CUDA toolkit header (it exists
  under the CUDA include directory) that neither rocmkit's nor hipify-perl's table maps to a header
  the target has (hip_names/<X.Y>.headers.txt);
- a missing API: the first error names an identifier (undeclared, unknown type, no member) that
  CUDA's headers declare and the target's do not: not in the text hipcc compiles for an empty HIP
  unit (`hip_runtime.h`, device and host passes), and its HIP counterpart by rocmkit's or
  hipify-perl's table, if any, is not there either; or a `hipDeviceProp_t` member that
  hip_names/<X.Y>.fields.txt lacks.
Anything else is expressible: rocmkit's fault.

Coverage: as hipify_predict.py (the first error, or the project line that included the system
header it is in, mapped back to the original file; a rocmkit warning within 3 lines).

False positives, per warning class, over the warnings in the files the units include:
- classes that predict a compile failure (unsupported and unconverted names, `missing-library`,
  `redefinition`, `overload-collision`, `inline-ptx`, an unsupported include): a warning is a false
  positive when a unit that includes its file compiles (the construct compiled, or was not compiled
  for the target, so it was harmless); judged only in files some unit includes;
- classes about run-time behaviour (`warp-*`, `device-prop`, `signature`...): a warning in a
  compiling unit is a false positive when the warned line is not in the code hipcc compiles for
  the target (`hipcc -E`, device and host passes: a 32-lane assumption in a CUDA-only branch or
  in code preprocessed away is harmless); a warned line that is compiled counts as a true warning;
- `cuda-arch` hazards sit on `#if` lines, which no preprocessed text shows: counted, not judged.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import subprocess
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import hipify_compile
import hipify_corpus
import hipify_predict

from rocmkit.hipify.mappings import load_table
from rocmkit.hipify.translate import Diagnostic
from rocmkit.hipify.versions import device_prop_fields, hip_headers, hip_names, is_checked

CUDA_INCLUDE = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
# HIP library header (first path part or file stem, lower case) -> (library, Debian package)
LIBRARIES = {
    "hipblas": ("hipBLAS", "libhipblas-dev"),
    "hipblaslt": ("hipBLASLt", "libhipblaslt-dev"),
    "hipfft": ("hipFFT", "libhipfft-dev"),
    "hipsolver": ("hipSOLVER", "libhipsolver-dev"),
    "hipcub": ("hipCUB", "libhipcub-dev"),
    "thrust": ("rocThrust", "librocthrust-dev"),
    "rccl": ("RCCL", "librccl-dev"),
    "miopen": ("MIOpen", "libmiopen-dev"),
    "rocblas": ("rocBLAS", "librocblas-dev"),
    "rocfft": ("rocFFT", "librocfft-dev"),
    "roctracer": ("roctracer", "libroctracer-dev"),
    "hiprand": ("hipRAND", "libhiprand-dev"),
    "hipsparse": ("hipSPARSE", "libhipsparse-dev"),
    # PyTorch's C++ API: its ROCm wheel ships these headers (torch/include), not Debian
    "aten": ("PyTorch C++ (ATen)", "pip: torch, a ROCm build"),
    "c10": ("PyTorch C++ (c10)", "pip: torch, a ROCm build"),
    "torch": ("PyTorch C++ (torch)", "pip: torch, a ROCm build"),
}
COMPILE_CLASSES = frozenset(
    {"unsupported", "unconverted", "missing-library", "redefinition", "overload-collision",
     "inline-ptx", "include"}
)  # fmt: skip
NOT_JUDGED = frozenset({"cuda-arch"})
_NOT_FOUND = re.compile(r"fatal error: '([^']+)' file not found")
_NAMED = [
    re.compile(r"use of undeclared identifier '(\w+)'"),
    re.compile(r"unknown type name '(\w+)'"),
    re.compile(r"no type named '(\w+)' in"),
    re.compile(r"no template named '(\w+)'"),
    re.compile(r"no member named '(\w+)' in (?:namespace )?'([\w:]+)'"),
]
_WORD = re.compile(r"[A-Za-z_]\w*")
_LINEMARK = re.compile(r'^# (\d+) "([^"]+)"')
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def closure(project: hipify_corpus.Project, source: Path) -> list[str]:
    """Package-relative files the units include through `#include "..."` (the unit's folder, the
    including file's folder, then the project's include folders), units first."""
    folders = [source / d for d in project.include]
    seen: dict[Path, None] = {}
    todo = [source / u for u in project.compile]
    while todo:
        path = todo.pop(0)
        if path in seen:
            continue
        seen[path] = None
        for name in _INCLUDE.findall(path.read_text(errors="replace")):
            for folder in (path.parent, *folders):
                found = Path(os.path.normpath(folder / name))
                if found.is_file() and found.is_relative_to(source):
                    todo.append(found)
                    break
    return [p.relative_to(source).as_posix() for p in seen]


def unit_closures(project: hipify_corpus.Project, source: Path) -> dict[str, set[str]]:
    """unit -> the package-relative files it includes (itself too)."""
    return {
        unit: set(closure(dataclasses.replace(project, compile=(unit,)), source))
        for unit in project.compile
    }


@functools.cache
def apt_state(package: str) -> str:
    """What apt knows of a Debian package here: installed, installable, or not packaged."""
    try:
        out = subprocess.run(
            ["apt-cache", "policy", package], capture_output=True, text=True, timeout=60
        ).stdout
    except OSError:
        return "apt-cache not available"
    installed = re.search(r"Installed: (\S+)", out)
    candidate = re.search(r"Candidate: (\S+)", out)
    if installed and installed.group(1) != "(none)":
        return f"installed {installed.group(1)}"
    if candidate and candidate.group(1) != "(none)":
        return f"installable {candidate.group(1)}"
    return "not packaged by this machine's Debian release"


@functools.cache
def target_words(hipcc: str) -> frozenset[str]:
    """Every identifier in what hipcc compiles for an empty HIP unit (runtime headers, device and
    host passes, macros included): what the target declares by default."""
    words: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="hipify-field-target-") as scratch:
        unit = Path(scratch) / "empty.hip"
        unit.write_text("#include <hip/hip_runtime.h>\n")
        env = dict(os.environ, HIP_PLATFORM="amd")
        for side in ("--cuda-device-only", "--cuda-host-only"):
            for extra in ([], ["-dM"]):
                command = [hipcc, "--offload-arch=gfx90a", "-x", "hip", side, "-E", *extra]
                done = subprocess.run(
                    [*command, str(unit)], env=env, capture_output=True, text=True, timeout=300
                )
                words.update(_WORD.findall(done.stdout))
    return frozenset(words)


@functools.cache
def cuda_words() -> frozenset[str]:
    """Identifiers CUDA's own headers spell (top level and crt/): what CUDA declares."""
    words: set[str] = set()
    for pattern in ("*.h", "*.hpp", "crt/*.h", "crt/*.hpp"):
        for path in CUDA_INCLUDE.glob(pattern):
            words.update(_WORD.findall(path.read_text(errors="replace")))
    return frozenset(words)


@functools.cache
def perl_includes(perl: str) -> dict[str, str]:
    text = Path(perl).read_text(errors="replace")
    pairs = re.findall(r'subst\("([^"]+)", "([^"]+)", "include"\)', text)
    return {a.replace("\\/", "/"): b.replace("\\/", "/") for a, b in pairs}


def exclusion(output: str, hip_version: str, hipcc: str, perl: str | None) -> str | None:
    """Why HIP cannot express this unit here, with the evidence; None: rocmkit's fault."""
    missing = _NOT_FOUND.search(output)
    if missing:
        return _missing_header(missing.group(1), hip_version, perl)
    first = next((line for line in output.splitlines() if " error: " in line), "")
    for pattern in _NAMED:
        match = pattern.search(first)
        if match:
            return _missing_name(match, hip_version, hipcc, perl)
    return None


def _missing_header(header: str, hip_version: str, perl: str | None) -> str | None:
    key = header.split("/")[0].removesuffix(".h").removesuffix(".hpp").lower()
    if key in LIBRARIES or key.split("_")[0] in LIBRARIES:
        library, package = LIBRARIES.get(key) or LIBRARIES[key.split("_")[0]]
        state = "not on the include path" if package.startswith("pip:") else apt_state(package)
        return f"library: <{header}> not found; {library} ({package}: {state})"
    if not (CUDA_INCLUDE / header).is_file():
        return None  # a project header: the translation lost it
    headers = hip_headers(hip_version)
    counterparts = [
        load_table("auto").includes.get(header),
        perl_includes(perl).get(header) if perl else None,
    ]
    if any(c and (c in headers or not c.startswith("hip/")) for c in counterparts):
        return None  # a HIP header exists: rocmkit should have rewritten the include
    return (
        f"SDK: <{header}> is a CUDA toolkit header; no HIP {hip_version} header stands for it "
        f"(counterparts {[c for c in counterparts if c]} not in hip_names/{hip_version}.headers.txt)"
    )


def _missing_name(
    match: re.Match[str], hip_version: str, hipcc: str, perl: str | None
) -> str | None:
    name = match.group(1)
    if match.re.pattern.startswith("no member") and match.group(2) == "hipDeviceProp_t":
        if name not in device_prop_fields(hip_version):
            return f"API: hipDeviceProp_t::{name} is not in hip_names/{hip_version}.fields.txt"
        return None
    declared = target_words(hipcc)
    if is_checked(name) and name not in hip_names(hip_version):
        return f"API: {name} is not in hip_names/{hip_version}.txt"
    if name not in cuda_words() or name in declared:
        return None
    mapping = load_table("auto").identifiers.get(name)
    counterparts = {mapping.hip if mapping else None}
    if perl:
        counterparts.add(hipify_compile.perl_pairs(perl).get(name))
    present = [c for c in counterparts if c and c in declared]
    if present:
        return None  # HIP has it: rocmkit should have translated it
    named = sorted(c for c in counterparts if c)
    return (
        f"API: {name} is declared by CUDA's headers and by no HIP {hip_version} runtime header"
        + (
            f" (counterparts {named} absent too)"
            if named
            else " (no HIP counterpart in either table)"
        )
    )


def preprocessed_lines(
    unit: Path, includes: list[Path], flags: Iterable[str], hipcc: str
) -> set[tuple[str, int]]:
    """(file, line) of every line hipcc compiles for the target (device and host passes)."""
    present: set[tuple[str, int]] = set()
    env = dict(os.environ, HIP_PLATFORM="amd")
    for side in ("--cuda-device-only", "--cuda-host-only"):
        command = [hipcc, "--offload-arch=gfx90a", "-x", "hip", side, "-E", str(unit)]
        command += [f"-I{d}" for d in [unit.parent, *includes]] + list(flags)
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        file, line = "", 0
        for text in done.stdout.splitlines():
            mark = _LINEMARK.match(text)
            if mark:
                line, file = int(mark.group(1)), mark.group(2)
                continue
            if text.strip():
                present.add((os.path.normpath(file), line))
            line += 1
    return present


def judge_side(
    projects: list[hipify_corpus.Project],
    cache: Path,
    outcomes: dict[tuple[str, str], str | None],
    warnings: dict[tuple[str, str], list[Diagnostic]],
    hip_version: str,
    tree_root: Path,
    hipcc: str,
    perl: str | None,
) -> dict[str, Any]:
    units: list[dict[str, Any]] = []
    classes: dict[str, Counter[str]] = defaultdict(Counter)
    places: dict[str, dict[str, list[str]]] = {}
    for project in projects:
        source, tree = project.root(cache), tree_root / project.name
        closures = unit_closures(project, source)
        for unit in project.compile:
            output = outcomes[(project.name, unit)]
            units.append(
                _judge_unit(project, unit, output, warnings, source, tree, hip_version, hipcc, perl)
            )
        _judge_warnings(project, closures, outcomes, warnings, source, tree, hipcc, classes, places)
    summary = summarize(units, classes)
    summary["judged_places"] = places  # where each false positive / compiled warning sits
    return summary


def _judge_unit(
    project: hipify_corpus.Project,
    unit: str,
    output: str | None,
    warnings: dict[tuple[str, str], list[Diagnostic]],
    source: Path,
    tree: Path,
    hip_version: str,
    hipcc: str,
    perl: str | None,
) -> dict[str, Any]:
    verdict: dict[str, Any] = {"unit": f"{project.name}/{unit}", "compiles": output is None}
    if output is None:
        return verdict
    message, where = hipify_predict.error_site(output, tree)
    verdict["error"] = message
    verdict["excluded"] = exclusion(output, hip_version, hipcc, perl)
    covered: list[str] = []
    if where is not None:
        # hipcc names an included file as the include spelled it (`cuda/3d/../2d/fft.h`)
        file = Path(os.path.normpath(where[0])).relative_to(tree).as_posix()
        original = (source / file).read_text(errors="replace")
        line = hipify_predict.original_line(
            original, where[0].read_text(errors="replace"), where[1]
        )
        verdict["error_at"] = f"{file}:{line}"
        covered = [
            f"{hipify_predict.warning_class(d)}:{d.line}"
            for d in warnings.get((project.name, file), ())
            if abs(d.line - line) <= hipify_predict.WITHIN_LINES
        ]
    verdict["covered_by"] = covered
    return verdict


def _judge_warnings(
    project: hipify_corpus.Project,
    closures: dict[str, set[str]],
    outcomes: dict[tuple[str, str], str | None],
    warnings: dict[tuple[str, str], list[Diagnostic]],
    source: Path,
    tree: Path,
    hipcc: str,
    classes: dict[str, Counter[str]],
    places: dict[str, dict[str, list[str]]],
) -> None:
    compiling = [u for u in project.compile if outcomes[(project.name, u)] is None]
    compiled_files = set().union(*(closures[u] for u in compiling)) if compiling else set()
    included = set().union(*closures.values())
    compiled_lines: set[tuple[str, int]] | None = None
    for (name, file), found in warnings.items():
        if name != project.name or file not in included:
            continue
        for diagnostic in found:
            kind = hipify_predict.warning_class(diagnostic)
            counts = classes[kind]
            counts["warnings"] += 1
            if kind in NOT_JUDGED:
                counts["not_judged"] += 1
            elif kind in COMPILE_CLASSES or diagnostic.kind in ("unsupported", "unconverted"):
                verdict = "false_positive" if file in compiled_files else "in_failing_units"
            elif file not in compiled_files:
                verdict = "in_failing_units"
            else:
                if compiled_lines is None:
                    compiled_lines = _compiled_original_lines(
                        project, compiling, source, tree, hipcc
                    )
                harmless = (file, diagnostic.line) not in compiled_lines
                verdict = "false_positive" if harmless else "compiled_for_target"
            if kind not in NOT_JUDGED:
                counts[verdict] += 1
                if verdict != "in_failing_units":
                    where = f"{project.name}/{file}:{diagnostic.line} {diagnostic.name}"
                    places.setdefault(kind, {}).setdefault(verdict, []).append(where)


def _compiled_original_lines(
    project: hipify_corpus.Project, compiling: list[str], source: Path, tree: Path, hipcc: str
) -> set[tuple[str, int]]:
    """(package-relative file, original line) of every line hipcc compiles in the compiling units."""
    includes = [tree / d for d in project.include if (tree / d).is_dir()]
    found: set[tuple[str, int]] = set()
    cache: dict[str, Any] = {}
    for unit in compiling:
        for file, line in preprocessed_lines(tree / unit, includes, project.flags, hipcc):
            path = Path(file)
            if not path.is_relative_to(tree):
                continue
            relative = path.relative_to(tree).as_posix()
            if relative not in cache:
                original = source / relative
                cache[relative] = (
                    original.read_text(errors="replace") if original.is_file() else "",
                    path.read_text(errors="replace"),
                )
            before, after = cache[relative]
            found.add((relative, _mapped(before, after, line)))
    return found


@functools.lru_cache(maxsize=200_000)
def _mapped(before: str, after: str, line: int) -> int:
    return hipify_predict.original_line(before, after, line)


def summarize(units: list[dict[str, Any]], classes: dict[str, Counter[str]]) -> dict[str, Any]:
    failing = [u for u in units if not u["compiles"]]
    excluded = [u for u in failing if u["excluded"]]
    expressible = len(units) - len(excluded)
    compiled = len(units) - len(failing)
    covered = [u for u in failing if u["covered_by"]]
    judged = {}
    for kind, counts in sorted(classes.items()):
        decided = (
            counts["false_positive"] + counts["in_failing_units"] + counts["compiled_for_target"]
        )
        judged[kind] = dict(counts) | {
            "false_positive_pct": round(100 * counts["false_positive"] / decided, 1)
            if decided
            else None
        }
    return {
        "units": len(units),
        "compiled": compiled,
        "failing": len(failing),
        "excluded": len(excluded),
        "expressible": expressible,
        "expressible_compiled": compiled,
        "expressible_rate_pct": round(100 * compiled / expressible, 1) if expressible else 100.0,
        "covered": len(covered),
        "coverage_pct": round(100 * len(covered) / len(failing), 1) if failing else 100.0,
        "expressible_failing_covered": sum(1 for u in covered if not u["excluded"]),
        "classes": judged,
        "unit_verdicts": units,
    }


def print_side(name: str, side: dict[str, Any], *, show: bool) -> None:
    print(
        f"\n{name}: "
        + ", ".join(f"{t} {c['compiled']}/{c['units']}" for t, c in side["tools"].items())
    )
    judged = side.get("rocmkit")
    if judged:
        print(
            f"  rocmkit: {judged['excluded']} excluded; expressible {judged['expressible_compiled']}/"
            f"{judged['expressible']} ({judged['expressible_rate_pct']}%); coverage "
            f"{judged['covered']}/{judged['failing']} ({judged['coverage_pct']}%)"
        )
        for kind, counts in judged["classes"].items():
            print(f"    {kind}: {counts}")
            for place in judged["judged_places"].get(kind, {}).get("false_positive", [])[:8]:
                print(f"        false positive: {place}")
        for unit in judged["unit_verdicts"]:
            if show or (not unit["compiles"] and not (unit["excluded"] and unit["covered_by"])):
                state = (
                    "ok"
                    if unit["compiles"]
                    else ("EXCLUDED " + unit["excluded"] if unit["excluded"] else "FAULT")
                )
                print(
                    f"    {unit['unit']}: {state} {unit.get('error_at', '')} {unit.get('error', '')[:140]} {unit.get('covered_by', '')}"
                )
    for tool, runs in side.get("timing", {}).get("cpu_s", {}).items():
        print(f"  {tool}: translate CPU s {[round(r, 2) for r in runs]}")
