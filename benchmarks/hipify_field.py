"""rocmkit hipify on the field corpus: compile rate, exclusions with evidence, coverage, false positives.

benchmarks/hipify_field_corpus.toml pins five PyPI sdists (80 `.cu` units) split by project into a
dev side and a held-out side. For one side, every unit is translated by rocmkit (for the installed
hipcc's HIP, missing libraries passed as `absent_libraries`), torch.utils.hipify and hipify-perl
(same folders; hipify-perl only the files the units include, since it takes ~15 s per file), then
compiled with `HIP_PLATFORM=amd hipcc --offload-arch=gfx90a -x hip -c` and the project's flags.

Reported per tool: the raw compile count. For rocmkit, each failing unit is classified (field_judge):
(a) excluded: the target lacks a library/SDK (hipcc cannot find a header, and the HIP package
that would provide it is named) or an API (the name hipcc rejects is declared by CUDA's headers and
by no header of the target, nor listed in `hip_names/<X.Y>`); or (b) expressible, rocmkit's fault.
Figures: compile rate of expressible units = compiled / (units - excluded); diagnostic coverage
of failing units (a rocmkit warning within 3 lines of the first error, as in hipify_predict.py);
false positives per warning class (field_judge.judge_warnings, the rule of each class written
there). Translation CPU time of the three tools: >= 3 alternated rounds over the same files.

    python benchmarks/hipify_field.py --side dev --hipify-perl /tmp/hipify-perl          # look
    python benchmarks/hipify_field.py --side held_out --hipify-perl /tmp/hipify-perl --write

The projects' own dependencies must be installed: astra-toolbox needs Boost's headers
(`apt-get install libboost-dev`), or its units fail on `<boost/...>` for every tool alike.
`--tools` runs a subset; `--write` then replaces only those tools' figures of that side (with
`--rounds 0` the side's translation timing, measured over all tools alternated, is kept).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hipify_compile
import hipify_corpus
import hipify_field_judge as field_judge
from resultfile import RESULTS, ResultRun

from rocmkit.hipify.check import absent_next_to_hipcc, compile_one, find_hipcc
from rocmkit.hipify.project import HipifyConfig, hipify_paths
from rocmkit.hipify.translate import Diagnostic, TranslateOptions
from rocmkit.hipify.versions import installed_version

MANIFEST = Path(__file__).resolve().parent / "hipify_field_corpus.toml"
CACHE = hipify_corpus.REPO / ".cache" / "hipify-field"
RESULT = RESULTS / "hipify_field.json"
TOOLS = ("rocmkit", "torch.utils.hipify", "hipify-perl")


def load_split(path: Path = MANIFEST) -> dict[str, str]:
    """project name -> "dev" or "held_out"."""
    split = tomllib.loads(path.read_text())["split"]
    return {name: side for side in ("dev", "held_out") for name in split[side]}


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (hipify-perl runs as a child)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def rocmkit_translate(
    source: Path, out: Path, options: TranslateOptions
) -> tuple[dict[Path, Path], dict[Path, list[Diagnostic]]]:
    report = hipify_paths(HipifyConfig(paths=(source,), output_dir=out, options=options))
    outputs = {f.source: f.output for f in report.files if f.output is not None}
    warnings = {f.source: [d for d in f.diagnostics if d.kind != "note"] for f in report.files}
    return outputs, warnings


def tool_for(name: str, options: TranslateOptions, perl: str | None, only: list[str]) -> Any:
    if name == "rocmkit":
        return lambda source, out: rocmkit_translate(source, out, options)[0]
    if name == "torch.utils.hipify":
        return hipify_compile.torch_tool
    assert perl is not None
    return hipify_compile.perl_tool(perl, only)


def translate(
    project: hipify_corpus.Project,
    name: str,
    out: Path,
    options: TranslateOptions,
    perl: str | None,
) -> tuple[dict[Path, Path], dict[str, list[Diagnostic]]]:
    """`out`: the package with its translate folders run through tool `name`. Returns {original:
    translated file} and, for rocmkit, {package-relative file: its warnings}."""
    source = project.root(CACHE)
    roots = [source / r for r in project.translate]
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(source, out, ignore=hipify_corpus._skip(roots), symlinks=True)
    closure = field_judge.closure(project, source)
    translated: dict[Path, Path] = {}
    warnings: dict[str, list[Diagnostic]] = {}
    for root in roots:
        target = out / root.relative_to(source)
        shutil.rmtree(target, ignore_errors=True)
        if name == "rocmkit":
            outputs, found = rocmkit_translate(root, target, options)
            warnings |= {p.relative_to(source).as_posix(): w for p, w in found.items()}
        else:
            only = [
                (source / f).relative_to(root).as_posix()
                for f in closure
                if _under(f, root, source)
            ]
            outputs = tool_for(name, options, perl, only)(root, target)
        translated |= outputs
        shutil.copytree(
            root, target, symlinks=True, dirs_exist_ok=True, copy_function=hipify_corpus._missing
        )
    return translated, warnings


def _under(relative: str, root: Path, source: Path) -> bool:
    return (source / relative).is_relative_to(root)


def compile_units(
    project: hipify_corpus.Project,
    tree: Path,
    translated: dict[Path, Path],
    hipcc: str,
    jobs: int,
) -> dict[str, str | None]:
    """{unit: None if it compiles, else hipcc's whole output}."""
    source = project.root(CACHE)
    # torch.utils.hipify writes a translated header into a `hip/` folder: searched first.
    includes = [tree / d / sub for d in project.include for sub in ("hip", "")]
    includes = [d for d in includes if d.is_dir()]
    outputs: dict[str, str] = {}

    def runner(command: list[str], env: dict[str, str]) -> Any:
        import subprocess

        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        outputs[command[5]] = done.stderr + "\n" + done.stdout
        return done

    def one(unit: str) -> tuple[str, str | None]:
        path = translated.get(source / unit, tree / unit)
        result = compile_one(
            path,
            arch="gfx90a",
            hipcc=hipcc,
            include_dirs=[path.parent, *includes],
            extra_flags=project.flags,
            runner=runner,
        )
        return unit, None if result.ok else outputs.get(str(path), result.first_error)

    with ThreadPoolExecutor(jobs) as pool:
        return dict(pool.map(one, project.compile))


def timing_rounds(
    projects: list[hipify_corpus.Project],
    names: Sequence[str],
    options: TranslateOptions,
    perl: str | None,
    files: int,
    rounds: int,
) -> tuple[list[str], dict[str, list[float]]]:
    """CPU seconds each tool takes to translate the same `files` units (taken in turn from each
    project), tools alternated within each round."""
    queues = [[(p, u) for u in p.compile] for p in projects]
    picked: list[tuple[hipify_corpus.Project, str]] = []
    while len(picked) < files and any(queues):
        picked += [q.pop(0) for q in queues if q][: files - len(picked)]
    times: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="hipify-field-time-") as scratch:
        source = Path(scratch) / "src"
        for index, (project, unit) in enumerate(picked):
            target = source / f"{index:02d}_{Path(unit).name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(project.root(CACHE) / unit, target)
        for round_index in range(rounds):
            order = list(names) if round_index % 2 == 0 else list(reversed(names))
            for name in order:
                out = Path(scratch) / f"out-{round_index}-{name}"
                started = cpu_seconds()
                tool_for(name, options, perl, [])(source, out)
                times[name].append(cpu_seconds() - started)
    return [f"{p.name}/{u}" for p, u in picked], dict(times)


def run_side(args: argparse.Namespace, hipcc: str, hip_version: str) -> dict[str, Any]:
    split = load_split()
    projects = [p for p in hipify_corpus.load_manifest(MANIFEST) if split[p.name] == args.side]
    problems = hipify_corpus.fetch(projects, CACHE)
    if problems:
        raise SystemExit("\n".join(problems))
    absent = absent_next_to_hipcc(hip_version, hipcc)
    options = TranslateOptions(hip_version=hip_version, absent_libraries=absent)
    names = [t for t in TOOLS if t in args.tools.split(",")]
    if "hipify-perl" in names and not args.hipify_perl:
        raise SystemExit("hipify-perl: pass --hipify-perl PATH (ROCm/HIPIFY's bin/hipify-perl)")
    side: dict[str, Any] = {"projects": {}, "tools": {}}
    outcomes: dict[str, dict[tuple[str, str], str | None]] = defaultdict(dict)
    warnings: dict[tuple[str, str], list[Diagnostic]] = {}
    scratch = Path(args.keep or tempfile.mkdtemp(prefix="hipify-field-"))
    for project in projects:
        side["projects"][project.name] = {"version": project.version, "units": len(project.compile)}
        for name in names:
            started = time.perf_counter()
            tree = scratch / name.replace(".", "_") / project.name
            translated, found = translate(project, name, tree, options, args.hipify_perl)
            results = compile_units(project, tree, translated, hipcc, args.jobs)
            outcomes[name] |= {(project.name, u): e for u, e in results.items()}
            if name == "rocmkit":
                warnings |= {(project.name, f): w for f, w in found.items()}
                side["projects"][project.name]["rocmkit_tree"] = str(tree)
            compiled = sum(e is None for e in results.values())
            print(
                f"{project.name} {name}: {compiled}/{len(results)} compile"
                f" ({time.perf_counter() - started:.0f} s wall)",
                flush=True,
            )
    for name in names:
        side["tools"][name] = {
            "units": len(outcomes[name]),
            "compiled": sum(e is None for e in outcomes[name].values()),
        }
    if "rocmkit" in names:
        side["rocmkit"] = field_judge.judge_side(
            projects,
            CACHE,
            outcomes["rocmkit"],
            warnings,
            hip_version,
            scratch / "rocmkit",
            hipcc,
            args.hipify_perl,
        )
    if args.rounds:
        picked, times = timing_rounds(
            projects, names, options, args.hipify_perl, args.timing_files, args.rounds
        )
        side["timing"] = {"files": picked, "cpu_s": times}
    return side


def record(run: ResultRun, side_name: str, side: dict[str, Any]) -> None:
    for tool, counts in side["tools"].items():
        run.count(f"{side_name}.{tool}.compiled", counts["compiled"], unit="units")
        run.count(f"{side_name}.{tool}.units", counts["units"], unit="units")
    judged = side.get("rocmkit")
    if judged:
        for key in ("excluded", "expressible", "expressible_compiled", "failing", "covered"):
            run.count(f"{side_name}.rocmkit.{key}", judged[key], unit="units")
        run.count(f"{side_name}.rocmkit.expressible_rate_pct", judged["expressible_rate_pct"],
                  unit="% of expressible units")  # fmt: skip
        run.count(f"{side_name}.rocmkit.coverage_pct", judged["coverage_pct"],
                  unit="% of failing units")  # fmt: skip
    for tool, runs in side.get("timing", {}).get("cpu_s", {}).items():
        baseline = None if tool == "rocmkit" else "rocmkit, same files, alternated rounds"
        run.add(f"{side_name}.{tool}.translate_cpu_s", runs, unit="CPU-s", clock="process",
                baseline=baseline, higher_is_better=False)  # fmt: skip


def write(run: ResultRun, side_name: str, side: dict[str, Any], path: Path) -> None:
    """Merge this side into the result file: the other side's figures and details stay."""
    from rocmkit.atomic import atomic_write_json

    document = run.record()
    previous = json.loads(path.read_text()) if path.exists() else {}
    tools = tuple(side["tools"])
    old_side = previous.get("details", {}).get(side_name, {})
    kept = {t: c for t, c in old_side.get("tools", {}).items() if t not in tools}
    # A run without timing (--rounds 0) keeps the side's timing figures: they came from rounds
    # alternated over all the tools, which a subset run cannot redo.
    timed = "timing" in side
    figures = {
        k: v
        for k, v in previous.get("figures", {}).items()
        if not k.startswith(f"{side_name}.")
        or any(k.startswith(f"{side_name}.{t}.") for t in kept)
        or (not timed and k.endswith(".translate_cpu_s"))
    }
    document["figures"] = figures | document["figures"]
    # A run of a subset of the tools (--tools) replaces those tools' figures and keeps the others';
    # runs[] records when and where each run (all tools, or the subset) ran.
    runs = previous.get("runs", {})
    key = side_name if set(tools) == set(TOOLS) else f"{side_name} ({', '.join(tools)})"
    runs[key] = {k: document[k] for k in ("started", "finished", "environment", "load")}
    document["runs"] = runs
    details = previous.get("details", {})
    merged = {**old_side, **side, "tools": kept | side["tools"]}
    if "timing" in old_side and "timing" in side:
        merged["timing"] = {
            "files": side["timing"]["files"],
            "cpu_s": {**old_side["timing"]["cpu_s"], **side["timing"]["cpu_s"]},
        }
    details[side_name] = merged
    document["details"] = details
    atomic_write_json(path, document)
    print(f"result: {path}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=("dev", "held_out"), required=True)
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset")
    parser.add_argument("--hipify-perl", default=shutil.which("hipify-perl"))
    parser.add_argument("--jobs", type=int, default=2, help="parallel hipcc processes")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (0: no timing)")
    parser.add_argument("--timing-files", type=int, default=6, help="units timed per round")
    parser.add_argument("--keep", type=Path, help="keep the translated trees here")
    parser.add_argument("--write", action="store_true", help=f"merge into {RESULT.name}")
    parser.add_argument("--result", type=Path, default=RESULT)
    parser.add_argument("--show", action="store_true", help="print every unit's verdict")
    args = parser.parse_args(argv)
    hipcc = find_hipcc()
    hip_version = installed_version(hipcc)
    if hipcc is None or hip_version is None:
        print("needs hipcc with its HIP headers (Debian: apt-get install hipcc)", file=sys.stderr)
        return 2
    run = ResultRun.start("hipify_field", None)
    run.parameters = {k: str(v) for k, v in vars(args).items() if k not in ("write", "result")}
    started = time.perf_counter()
    side = run_side(args, hipcc, hip_version)
    side["wall_s"] = round(time.perf_counter() - started, 1)
    field_judge.print_side(args.side, side, show=args.show)
    run.notes.append(f"HIP {hip_version} (hipcc {hipcc}), gfx90a; hipify-perl {args.hipify_perl}")
    record(run, args.side, side)
    if args.write:
        write(run, args.side, side, args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
