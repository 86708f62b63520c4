"""Compile rate of translated CUDA: rocmkit next to PyTorch's hipify and hipify-perl, same files.

Each tool translates the same source tree into its own output tree; every selected `.cu` of the
result is then compiled with `HIP_PLATFORM=amd hipcc --offload-arch=ARCH -x hip -c`, with the
translated include directories (`-I`) and the file's own directory on the include path. Prints
pass/fail per program and tool, each failure's first error line, and the rate per tool.

    python benchmarks/hipify_compile.py --src cuda-samples --include Common \\
        --programs 'Samples/0_Introduction/*' --hipify-perl /path/to/hipify-perl
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

sys.path.insert(0, str(REPO / "benchmarks"))

from resultfile import ResultRun, add_result_args  # noqa: E402

from rocmkit.hipify.check import compile_one  # noqa: E402
from rocmkit.hipify.project import HipifyConfig, hipify_paths  # noqa: E402
from rocmkit.hipify.translate import TranslateOptions  # noqa: E402
from rocmkit.hipify.versions import (  # noqa: E402
    hip_names,
    installed_version,
    is_checked,
    resolve_version,
)

# What every tool translates: rocmkit's own default set, so that all three see the same files.
EXTENSIONS = (".cu", ".cuh", ".h", ".hpp", ".hxx", ".inl", ".cpp", ".cc", ".cxx", ".c")
_PERL_PAIR = re.compile(r'subst\("(\w+)", "(\w+)"')
_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include.*$", re.MULTILINE)
_HIP_NAME = re.compile(r"(?<![\w$])(?:hip|HIP_|__hip)\w*")

# A tool translates the tree `source` into `out` and returns {original .cu: translated file}.
Tool = Callable[[Path, Path], dict[Path, Path]]


def rocmkit_tool(hip_version: str | None) -> Tool:
    def run(source: Path, out: Path) -> dict[Path, Path]:
        options = TranslateOptions(hip_version=hip_version)
        report = hipify_paths(HipifyConfig(paths=(source,), output_dir=out, options=options))
        return {f.source: f.output for f in report.files if f.output is not None}

    return run


def torch_tool(source: Path, out: Path) -> dict[Path, Path]:
    from torch.utils.hipify import hipify_python

    hipify_python.HIPIFY_FINAL_RESULT.clear()
    results = hipify_python.hipify(
        project_directory=str(source),
        output_directory=str(out),
        extensions=EXTENSIONS,
        header_include_dirs=[],
        includes=["*"],
        show_progress=False,
        hip_clang_launch=True,
    )
    mapped = {}
    for path, result in results.items():
        hipified = getattr(result, "hipified_path", None) or path
        # torch copies the tree to `out` first and names results by their path there.
        original = source / Path(path).relative_to(out) if Path(path).is_relative_to(out) else path
        mapped[Path(original)] = Path(hipified)
    return mapped


def perl_tool(perl: str, only: list[str]) -> Tool:
    """hipify-perl in place on a copy; `only` (globs relative to the tree) limits the files it
    translates, since it takes seconds per file (the rest is copied as it is)."""

    def run(source: Path, out: Path) -> dict[Path, Path]:
        shutil.copytree(source, out)
        files = [p for p in sorted(out.rglob("*")) if p.suffix in EXTENSIONS]
        if only:
            files = [
                p
                for p in files
                if any(fnmatch.fnmatch(p.relative_to(out).as_posix(), g) for g in only)
            ]
        for start in range(0, len(files), 50):
            batch = [str(p) for p in files[start : start + 50]]
            subprocess.run([perl, "-inplace", *batch], check=True, capture_output=True)
        return {source / p.relative_to(out): p for p in files}

    return run


def select_tools(
    wanted: list[str], hip_version: str | None, perl: str | None, perl_only: list[str]
) -> dict[str, Tool]:
    """The tools named in `wanted` (rocmkit, torch, perl), in that order; hipify-perl only when
    its path is known. `perl_only`: see perl_tool."""
    tools: dict[str, Tool] = {}
    if "rocmkit" in wanted:
        tools["rocmkit"] = rocmkit_tool(hip_version)
    if "torch" in wanted:
        tools["torch.utils.hipify"] = torch_tool
    if "perl" in wanted and perl:
        tools["hipify-perl"] = perl_tool(perl, perl_only)
    return tools


def compile_all(
    paths: list[Path],
    includes: list[Path],
    *,
    arch: str,
    hipcc: str,
    jobs: int,
    flags: tuple[str, ...] = (),
) -> list[str | None]:
    """Per path (headers too, compiled as HIP): None if it compiles, else hipcc's first error
    line. Each file's own directory is searched first, then `includes` (`rocmkit hipify
    --check`'s compile_one)."""

    def one(path: Path) -> str | None:
        result = compile_one(
            path, arch=arch, hipcc=hipcc, include_dirs=[path.parent, *includes], extra_flags=flags
        )
        if result.ok:
            return None
        # The message alone, without the file's path, so that the summary groups alike errors.
        return result.first_error.partition("error: ")[2] or result.first_error

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, paths))


def audit_names(source: Path, out: Path, hip_version: str, perl: str | None) -> None:
    """Print rocmkit's unconverted tokens that have a HIP equivalent in `hip_version` and the
    HIP-namespace names the output spells that the release does not declare."""
    shipped = resolve_version(hip_version)
    left = left_unconverted([source], hip_version)
    lacking = names_lacking(list(out.rglob("*")), hip_names(shipped))
    print(f"\nrocmkit, HIP {hip_version}: {sum(left.values())} tokens left unconverted")
    if perl:
        known = with_hip_equivalent(left, hip_version, perl)
        print(f"  with a HIP {shipped} equivalent (hipify-perl's table): {sum(known.values())}")
        pairs = perl_pairs(perl)
        for name, count in sorted(known.items(), key=lambda item: -item[1]):
            print(f"    {count:3d}x {name} -> {pairs[name]}")
    print(f"  HIP-namespace names in the output that HIP {shipped} lacks: {dict(lacking)}")


def left_unconverted(paths: list[Path], hip_version: str) -> Counter[str]:
    """The CUDA tokens rocmkit reports as unconverted or unsupported in `paths` (files or trees)."""
    options = TranslateOptions(hip_version=hip_version)
    report = hipify_paths(HipifyConfig(paths=tuple(paths), options=options))
    return Counter(d.name for d in report.diagnostics if d.kind in ("unconverted", "unsupported"))


@functools.cache
def perl_pairs(perl: str) -> dict[str, str]:
    """hipify-perl's CUDA -> HIP table, read from its `subst` lines."""
    return dict(_PERL_PAIR.findall(Path(perl).read_text(errors="replace")))


def with_hip_equivalent(left: Counter[str], hip_version: str, perl: str) -> dict[str, int]:
    """The tokens of `left` that have a HIP `hip_version` equivalent by hipify-perl's table (its
    target is declared by that release)."""
    declared = hip_names(resolve_version(hip_version))
    pairs = perl_pairs(perl)
    return {name: count for name, count in left.items() if pairs.get(name) in declared}


def names_lacking(files: list[Path], declared: frozenset[str] | set[str]) -> Counter[str]:
    """HIP-namespace names the translated `files` spell that the HIP release (`declared`, its
    name list) does not declare; include lines are left out (header paths are not names)."""
    emitted: Counter[str] = Counter()
    for path in files:
        if path.suffix in EXTENSIONS:
            text = _INCLUDE_LINE.sub("", path.read_text(errors="replace"))
            names = _HIP_NAME.findall(text)
            emitted.update(n for n in names if is_checked(n) and n not in declared)
    return emitted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, required=True, help="root of the CUDA tree")
    parser.add_argument("--programs", action="append", required=True, help="dir glob to compile")
    parser.add_argument("--include", action="append", default=[], help="include dir (relative)")
    parser.add_argument(
        "--system-include",
        action="append",
        default=[],
        type=Path,
        help="include dir outside the tree, for every tool (a library's headers, e.g. hipBLAS)",
    )
    parser.add_argument("--arch", default="gfx90a")
    parser.add_argument("--hipcc", default=shutil.which("hipcc") or "hipcc")
    parser.add_argument("--hipify-perl", default=shutil.which("hipify-perl"))
    parser.add_argument(
        "--perl-files", action="append", default=[], help="glob: hipify-perl translates only these"
    )
    parser.add_argument("--tools", default="rocmkit,torch,perl", help="comma-separated subset")
    parser.add_argument("--jobs", type=int, default=2, help="parallel hipcc processes")
    parser.add_argument("--keep", type=Path, help="keep the translated trees here")
    parser.add_argument("--audit-only", action="store_true", help="only the name audit")
    add_result_args(parser, "hipify_compile")
    args = parser.parse_args()
    run = ResultRun.start("hipify_compile", args)
    source = args.src.resolve()
    programs = sorted(
        p
        for p in source.rglob("*.cu")
        if any(fnmatch.fnmatch(p.parent.relative_to(source).as_posix(), g) for g in args.programs)
    )
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="hipify-compile-"))
    hip_version = installed_version(args.hipcc)
    if args.audit_only:
        audit_names(source, scratch / "rocmkit", hip_version or "6.2", args.hipify_perl)
        return 0
    tools = select_tools(args.tools.split(","), hip_version, args.hipify_perl, args.perl_files)
    print(f"{len(programs)} .cu files under {args.programs}; hipcc {args.hipcc}, {args.arch}")
    outcome: dict[str, dict[Path, str | None]] = {}
    for name, tool in tools.items():
        out = scratch / name.replace(".", "_")
        shutil.rmtree(out, ignore_errors=True)
        translated = tool(source, out)
        # PyTorch's hipify writes a header it changes to `hip/` beside the original: search there
        # first, as a build using its output would.
        includes = [p for d in args.include for p in (out / d / "hip", out / d) if p.is_dir()]
        includes += [d.resolve() for d in args.system_include]
        targets = [translated.get(p, out / p.relative_to(source)) for p in programs]
        errors = compile_all(targets, includes, arch=args.arch, hipcc=args.hipcc, jobs=args.jobs)
        outcome[name] = dict(zip(programs, errors, strict=True))
    for program in programs:
        cells = ["ok" if outcome[n][program] is None else "FAIL" for n in tools]
        print(f"{program.relative_to(source).as_posix():70s} " + " ".join(f"{c:6s}" for c in cells))
    for name in tools:
        failures = {p: e for p, e in outcome[name].items() if e is not None}
        print(f"\n{name}: {len(programs) - len(failures)}/{len(programs)} compile")
        run.count(f"{name}.compiled", len(programs) - len(failures), unit="files")
        run.count(f"{name}.files", len(programs), unit="files")
        for error, count in Counter(failures.values()).most_common():
            print(f"  {count:3d}x {error[:150]}")
        for program, error in failures.items():
            print(f"      {program.relative_to(source).as_posix()}: {error[:120]}")
    if "rocmkit" in tools:
        audit_names(source, scratch / "rocmkit", hip_version or "6.2", args.hipify_perl)
    run.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
