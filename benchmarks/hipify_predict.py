"""Does `rocmkit hipify` say why a unit will not compile before hipcc does? (issue 29)

Every project of hipify_predict_corpus.toml (pinned PyPI packages, none used while the diagnostics
were written) is translated by rocmkit for the installed HIP, then each listed unit is compiled with
`HIP_PLATFORM=amd hipcc --offload-arch=gfx90a -x hip -c`. Scores, dev and held-out apart:

- coverage: of the units that fail, the share whose first compile error (the innermost location
  inside the project when it is in a system header) has a rocmkit warning (kind unsupported,
  unconverted or hazard: notes do not count) in the same file within 3 lines, mapped back to the
  original line numbers; an error inside a macro expansion also counts a warning within 3 lines
  of the macro's definition that clang names under it ("note: expanded from macro");
- false positives per warning class: of the warnings of a class that predicts a compile failure
  (unsupported/unconverted names, redefinitions, missing libraries), the share sitting in a unit that
  compiles. Classes that predict run-time behaviour (warp size, lowered `*_sync`, device-property
  substitutes, `__CUDA_ARCH__` decisions) are counted, not judged: a compile says nothing of them.

Deterministic counts (one run is exact); written to benchmarks/results/hipify_predict.json.

    python benchmarks/hipify_predict.py              # both sides, writes the result file
    python benchmarks/hipify_predict.py --side dev --no-result --show   # while improving rules
    python benchmarks/hipify_predict.py --corpus seen --no-result --show  # hipify_corpus.toml's packages
"""

from __future__ import annotations

import argparse
import difflib
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hipify_corpus
from resultfile import ResultRun, add_result_args

from rocmkit.hipify.check import absent_next_to_hipcc, compile_one, find_hipcc
from rocmkit.hipify.project import HipifyConfig, hipify_paths
from rocmkit.hipify.translate import Diagnostic, TranslateOptions
from rocmkit.hipify.versions import installed_version

MANIFEST = Path(__file__).resolve().parent / "hipify_predict_corpus.toml"
CACHE = hipify_corpus.REPO / ".cache" / "hipify-predict"
# The compile corpus of issue 13 (hipify_corpus.toml), one side "seen": tuned on, never held out.
CORPORA = {"predict": (MANIFEST, CACHE), "seen": (hipify_corpus.MANIFEST, hipify_corpus.CACHE)}
WITHIN_LINES = 3
# Hazard categories that say "this will not compile": judged by the compile. The others describe
# run-time behaviour and are only counted.
COMPILE_HAZARDS = frozenset({"redefinition", "missing-library", "overload-collision"})
_LOCATION = re.compile(r"^(?:In file included from )?(/[^:]+):(\d+):(?:\d+:)?")
_ERROR = re.compile(r"^(/[^:]+):(\d+):\d+: (?:fatal )?error: (.*)$")


@dataclass
class Unit:
    project: str
    side: str
    path: str  # relative to the package
    error: str | None = None  # first error message, None if it compiles
    error_at: tuple[str, int] | None = None  # (package-relative file, original line)
    covered_by: list[str] = field(default_factory=list)


def load_split(path: Path = MANIFEST) -> dict[str, str]:
    """project name -> "dev" or "held_out" (or "seen" for every project of a manifest without a
    split)."""
    data = tomllib.loads(path.read_text())
    if "split" not in data:
        return {project["name"]: "seen" for project in data["project"]}
    split = data["split"]
    return {name: side for side in ("dev", "held_out") for name in split[side]}


def translate(
    project: hipify_corpus.Project,
    out: Path,
    hip_version: str,
    absent: frozenset[str],
    cache: Path = CACHE,
) -> dict[str, list[Diagnostic]]:
    """The package copied to `out` with its translate folders run through rocmkit; returns
    package-relative path -> its warnings (lines of the original file)."""
    source = project.root(cache)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(source, out, symlinks=True)
    options = TranslateOptions(hip_version=hip_version, absent_libraries=absent)
    found: dict[str, list[Diagnostic]] = defaultdict(list)
    for root in project.translate:
        config = HipifyConfig(paths=(source / root,), output_dir=out / root, options=options)
        for result in hipify_paths(config).files:
            relative = result.source.relative_to(source).as_posix()
            found[relative] += [d for d in result.diagnostics if d.kind != "note"]
    return found


def original_line(original: str, translated: str, line: int) -> int:
    """The line of the original text that translated line `line` (1-based) came from."""
    matcher = difflib.SequenceMatcher(
        None, original.splitlines(), translated.splitlines(), autojunk=False
    )
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if b0 <= line - 1 < b1:
            if tag == "equal" or a1 - a0 == b1 - b0:  # line for line (a rewritten include)
                return a0 + (line - 1 - b0) + 1
            # lines were added (the runtime include, `#if 0` guards): count from the block's end
            return max(a0, a1 - (b1 - (line - 1))) + 1
    return line


def error_site(output: str, tree: Path) -> tuple[str | None, tuple[Path, int] | None]:
    """(first error message, its innermost location inside `tree`): an error in a system header
    is charged to the project line that included it."""
    lines = output.splitlines()
    for index, text in enumerate(lines):
        error = _ERROR.match(text.strip())
        if error is None:
            continue
        where = Path(error.group(1)), int(error.group(2))
        if not where[0].is_relative_to(tree):
            # the include chain printed above the error, innermost last
            for above in reversed(lines[:index]):
                chain = _LOCATION.match(above.strip())
                if chain is None:
                    break
                if Path(chain.group(1)).is_relative_to(tree):
                    where = Path(chain.group(1)), int(chain.group(2))
                    break
        return error.group(3), where if where[0].is_relative_to(tree) else None
    return (lines[0] if lines else "no output"), None


_MACRO_NOTE = re.compile(r"^(/[^:]+):(\d+):\d+: note: expanded from macro")


def macro_sites(output: str, tree: Path) -> list[tuple[Path, int]]:
    """Where the macros the first error expanded from are defined, inside `tree`: clang prints
    them under the error ("note: expanded from macro"), and the name at fault is spelled there."""
    lines = output.splitlines()
    first = next((i for i, text in enumerate(lines) if _ERROR.match(text.strip())), None)
    sites = []
    for text in lines[first + 1 :] if first is not None else ():
        if _ERROR.match(text.strip()):
            break
        note = _MACRO_NOTE.match(text.strip())
        if note is not None and Path(note.group(1)).is_relative_to(tree):
            sites.append((Path(note.group(1)), int(note.group(2))))
    return sites


def compile_units(
    project: hipify_corpus.Project, tree: Path, hipcc: str, jobs: int
) -> list[tuple[str, str | None, tuple[Path, int] | None, list[tuple[Path, int]]]]:
    """Per listed unit: (path, first error or None, its location in the translated tree, the
    definitions of the macros it was expanded from)."""
    includes = [tree / d for d in project.include if (tree / d).is_dir()]
    if project.python_include:
        includes.append(Path(sysconfig.get_paths()["include"]))
    outputs: dict[str, str] = {}

    def runner(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        outputs[command[5]] = done.stderr + "\n" + done.stdout
        return done

    def one(
        relative: str,
    ) -> tuple[str, str | None, tuple[Path, int] | None, list[tuple[Path, int]]]:
        path = tree / relative
        result = compile_one(
            path,
            arch="gfx90a",
            hipcc=hipcc,
            include_dirs=[path.parent, *includes],
            extra_flags=project.flags,
            runner=runner,
        )
        if result.ok:
            return relative, None, None, []
        output = outputs.get(str(path), result.first_error)
        message, where = error_site(output, tree)
        return relative, message, where, macro_sites(output, tree)

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, project.compile))


def score_project(
    project: hipify_corpus.Project,
    side: str,
    hip_version: str,
    hipcc: str,
    jobs: int,
    work: Path,
    cache: Path = CACHE,
) -> tuple[list[Unit], dict[str, list[Diagnostic]]]:
    tree = work / project.name
    absent = absent_next_to_hipcc(hip_version, hipcc)
    warnings = translate(project, tree, hip_version, absent, cache)
    source = project.root(cache)
    units = []
    for relative, message, where, macros in compile_units(project, tree, hipcc, jobs):
        unit = Unit(project.name, side, relative, message)
        for index, site in enumerate([where, *macros] if where is not None else []):
            file = site[0].relative_to(tree).as_posix()
            original = (source / file).read_text(errors="replace")
            line = original_line(original, site[0].read_text(errors="replace"), site[1])
            if index == 0:
                unit.error_at = (file, line)
            unit.covered_by += [
                f"{d.category}:{d.line}" + (" (macro)" if index else "")
                for d in warnings.get(file, ())
                if abs(d.line - line) <= WITHIN_LINES
            ]
        units.append(unit)
    return units, warnings


def warning_class(diagnostic: Diagnostic) -> str:
    return diagnostic.kind if diagnostic.kind != "hazard" else diagnostic.category


def summarize(
    units: list[Unit], warnings: dict[tuple[str, str], list[Diagnostic]]
) -> dict[str, Any]:
    """Coverage and per-class false positives of one side."""
    failing = [u for u in units if u.error is not None]
    covered = [u for u in failing if u.covered_by]
    compiling = {(u.project, u.path) for u in units if u.error is None}
    classes: dict[str, Counter[str]] = defaultdict(Counter)
    for (project, file), found in warnings.items():
        for diagnostic in found:
            name = warning_class(diagnostic)
            judged = diagnostic.kind != "hazard" or diagnostic.category in COMPILE_HAZARDS
            classes[name]["warnings"] += 1
            if judged and (project, file) in compiling:
                classes[name]["in_compiling_unit"] += 1
            if not judged:
                classes[name]["not_judged"] += 1
    return {
        "units": len(units),
        "compile": len(units) - len(failing),
        "failing": len(failing),
        "failing_covered": len(covered),
        "coverage_pct": round(100 * len(covered) / len(failing), 1) if failing else 100.0,
        "classes": {
            name: {
                **counts,
                "false_positive_pct": None
                if counts["not_judged"]
                else round(100 * counts["in_compiling_unit"] / counts["warnings"], 1),
            }
            for name, counts in sorted(classes.items())
        },
        "missed": [
            f"{u.project}/{u.path}: {u.error} (at {u.error_at})"
            for u in failing
            if not u.covered_by
        ],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=("dev", "held_out", "both"), default="both")
    parser.add_argument(
        "--corpus",
        choices=sorted(CORPORA),
        default="predict",
        help="predict: hipify_predict_corpus.toml (dev/held out); seen: hipify_corpus.toml",
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--show", action="store_true", help="print every unit's outcome")
    add_result_args(parser, "hipify_predict")
    args = parser.parse_args(argv)
    hipcc = find_hipcc()
    hip_version = installed_version(hipcc)
    if hipcc is None or hip_version is None:
        print("needs hipcc with its HIP headers (Debian: apt-get install hipcc)", file=sys.stderr)
        return 2
    run = ResultRun.start("hipify_predict", args)
    manifest, cache = CORPORA[args.corpus]
    split = load_split(manifest)
    projects = [
        p
        for p in hipify_corpus.load_manifest(manifest)
        if args.side == "both" or split[p.name] in (args.side, "seen")
    ]
    problems = hipify_corpus.fetch(projects, cache)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="hipify-predict-") as scratch:
        by_side: dict[str, tuple[list[Unit], dict[tuple[str, str], list[Diagnostic]]]] = {}
        for project in projects:
            side = split[project.name]
            units, warnings = score_project(
                project, side, hip_version, hipcc, args.jobs, Path(scratch), cache
            )
            all_units, all_warnings = by_side.setdefault(side, ([], {}))
            all_units += units
            listed = set(project.compile)
            all_warnings.update({(project.name, f): w for f, w in warnings.items() if f in listed})
            if args.show:
                for unit in units:
                    outcome = "ok" if unit.error is None else f"FAIL {unit.error_at} {unit.error}"
                    print(f"{side:8} {project.name}/{unit.path}: {outcome} {unit.covered_by or ''}")
        for side, (side_units, side_warnings) in by_side.items():
            results[side] = summarize(side_units, side_warnings)
    for side, summary in results.items():
        print(
            f"{side}: {summary['compile']}/{summary['units']} compile; coverage "
            f"{summary['failing_covered']}/{summary['failing']} ({summary['coverage_pct']}%)"
        )
        for name, counts in summary["classes"].items():
            print(f"    {name}: {dict(counts)}")
        for missed in summary["missed"]:
            print(f"    missed: {missed}")
        run.count(f"{side}.coverage_pct", summary["coverage_pct"], unit="% of failing units")
        run.count(f"{side}.units_compiling", summary["compile"], unit="units")
    run.notes.append(f"HIP {hip_version} (hipcc {hipcc}), gfx90a; details in 'details'")
    run.finish(details=results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
