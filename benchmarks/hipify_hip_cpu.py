"""Run translated CUDA programs on the CPU with HIP-CPU: does rocmkit's output compute right?

HIP-CPU (github.com/ROCm/HIP-CPU) is ROCm's header-only HIP runtime for the CPU (C++17 parallel
algorithms, TBB underneath). It is in no package registry, so CI cannot run this; give it a checkout:

    apt-get install libtbb-dev   # HIP-CPU's parallel algorithms need TBB
    git clone https://github.com/ROCm/HIP-CPU /tmp/hip-cpu
    python benchmarks/hipify_hip_cpu.py --hip-cpu /tmp/hip-cpu [--checkouts DIR]

The programs are self-checking CUDA programs from three public repositories, pinned below (cloned
into a cache at their commit unless --checkouts DIR holds DIR/<owner>+<name> at that commit). Each
checks its GPU result against a reference on the host; what it prints when right (and when wrong)
was written down from its source, below, before the first run. Each candidate is
  1. kept out, with the reason, when its CUDA source relies on what HIP-CPU cannot model (warps in
     lockstep, cooperative groups, textures, inline PTX, half intrinsics, CUDA libraries): no
     semantics are shimmed;
  2. translated with rocmkit hipify (`--launch hip`: g++ has no `<<<>>>`), with its helpers;
  3. kept out when it calls a hip* name HIP-CPU's headers do not declare (the API is not there);
  4. compiled with g++ -std=c++17 against HIP-CPU + -ltbb -lpthread, run with a timeout, and its
     output compared with what the CUDA program prints when its result is right.
Writes benchmarks/results/hipify_hip_cpu.json (counts, and every program with its verdict and why).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from resultfile import ResultRun, add_result_args  # noqa: E402

from rocmkit.atomic import atomic_write_json  # noqa: E402
from rocmkit.hipify.project import HipifyConfig, hipify_paths  # noqa: E402
from rocmkit.hipify.translate import TranslateOptions  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rocmkit-bench"


@dataclass(frozen=True)
class Source:
    repo: str  # owner/name on GitHub
    commit: str
    shared: tuple[str, ...] = ()  # helper folders every program of it includes (-I)


SOURCES = {
    "cuda-samples": Source(
        "NVIDIA/cuda-samples", "c94ff366aed18c797b8a85dfaac7817b0228b420", ("Common",)
    ),
    "olcf": Source("olcf/cuda-training-series", "9cd77d539d85ee3457e09a083ba299b787b7a16e"),
    "devblog": Source(
        "NVIDIA-developer-blog/code-samples", "72d62ec464442786a36754508bcb1094d197d6a5"
    ),
}


@dataclass(frozen=True)
class Candidate:
    source: str
    path: str  # a program's folder (all its .cu/.cpp) or one .cu file
    prints: tuple[str, ...] = ()  # lines (regexes) the program prints when its result is right
    never: str = r"(?i)\bfail|mismatch|\berror\b"  # what it prints when its result is wrong
    defines: tuple[str, ...] = ()  # as its own build does

    @property
    def name(self) -> str:
        return f"{self.source}/{self.path}"


_SAMPLE_PASS = (r"(?i)\bpass(ed)?\b",)  # cuda-samples: "Test passed", "Result = PASS"...


def _sample(path: str) -> Candidate:
    return Candidate(source="cuda-samples", path=f"Samples/{path}", prints=_SAMPLE_PASS)


# Chosen before the first run: the programs of these repositories that check their own result and
# need no data file, display, second GPU or hours of CPU (olcf's 8192^3 matrix products are left
# out for that). Programs HIP-CPU cannot model stay in the list: the scan keeps them out, saying why.
CANDIDATES = (
    *(
        _sample(p)
        for p in (
            "0_Introduction/asyncAPI",
            "0_Introduction/clock",
            "0_Introduction/fp16ScalarProduct",
            "0_Introduction/matrixMul",
            "0_Introduction/mergeSort",
            "0_Introduction/simpleAtomicIntrinsics",
            "0_Introduction/simpleCallback",
            "0_Introduction/simpleCooperativeGroups",
            "0_Introduction/simpleMultiCopy",
            "0_Introduction/simpleOccupancy",
            "0_Introduction/simpleStreams",
            "0_Introduction/simpleTemplates",
            "0_Introduction/simpleVoteIntrinsics",
            "0_Introduction/simpleZeroCopy",
            "0_Introduction/template",
            "0_Introduction/vectorAdd",
            "2_Concepts_and_Techniques/convolutionSeparable",
            "2_Concepts_and_Techniques/histogram",
            "2_Concepts_and_Techniques/inlinePTX",
            "2_Concepts_and_Techniques/reduction",
            "2_Concepts_and_Techniques/scalarProd",
            "2_Concepts_and_Techniques/scan",
            "2_Concepts_and_Techniques/shfl_scan",
            "2_Concepts_and_Techniques/sortingNetworks",
            "2_Concepts_and_Techniques/threadFenceReduction",
            "3_CUDA_Features/simpleCudaGraphs",
            "5_Domain_Specific/BlackScholes",
            "5_Domain_Specific/binomialOptions",
            "5_Domain_Specific/fastWalshTransform",
            "5_Domain_Specific/MonteCarloMultiGPU",
            "5_Domain_Specific/quasirandomGenerator",
            "5_Domain_Specific/SobolQRNG",
            "6_Performance/alignedTypes",
            "6_Performance/transpose",
        )
    ),
    Candidate(source="olcf", path="exercises/hw2/stencil_1d_solution.cu", prints=(r"^Success!$",)),
    Candidate(
        source="olcf",
        path="exercises/hw4/matrix_sums_solution.cu",
        prints=(r"^row sums correct!$", r"^column sums correct!$"),
    ),
    Candidate(
        source="olcf",
        path="exercises/hw5/matrix_sums_solution.cu",
        prints=(r"^row sums correct!$", r"^column sums correct!$"),
    ),
    Candidate(
        source="olcf",
        path="exercises/hw5/max_reduction_solution.cu",
        prints=(r"reduction output: (\S+), expected sum reduction output: \1,",),
    ),
    Candidate(source="olcf", path="exercises/hw6/array_inc_solution.cu", prints=(r"^success!$",)),
    # host and device both print element 3 of a managed-memory list whose keys are 0..4
    Candidate(source="olcf", path="exercises/hw6/linked_list_solution.cu", prints=(r"^key = 3$",)),
    Candidate(
        source="olcf",
        path="exercises/hw7/overlap_solution.cu",
        prints=(r"^streams elapsed time:",),
        defines=("-DUSE_STREAMS",),
    ),
    Candidate(source="olcf", path="exercises/hw9/task1_solution.cu"),
    Candidate(
        source="olcf",
        path="exercises/hw10/streams_solution.cu",
        prints=(r"^streams elapsed time:",),
        defines=("-DUSE_STREAMS",),
    ),
    # prints nothing when right, "Error: d[i]!=r[i]" per wrong element
    Candidate(source="devblog", path="series/cuda-cpp/shared-memory/shared-memory.cu"),
    Candidate(
        source="devblog",
        path="series/cuda-cpp/transpose/transpose.cu",
        prints=(r"conflict-free transpose\s+\d",),
    ),
    Candidate(
        source="devblog",
        path="series/cuda-cpp/optimize-data-transfers/bandwidthtest.cu",
        prints=(r"Device to Host bandwidth",),
    ),
    Candidate(source="devblog", path="posts/mixed-precision/haxpy.cu"),
    # Added after the first run, from the same repositories, expected lines written from the source:
    # the kernel prints the element, then sets name[0] = 'd' and value += 1; the host prints it.
    *(
        Candidate(
            source="devblog",
            path=f"posts/unified-memory/{name}.cu",
            prints=(r"^On device: name=hello, value=10$", r"^On host: name=dello, value=11$"),
        )
        for name in ("dataElem", "dataElem_um", "dataElem_um_c++_1")
    ),
    # a[i] += sqrt(sin^2 + cos^2) on zeros, checked against 1 in three ways: float rounding only
    Candidate(
        source="devblog",
        path="series/cuda-cpp/overlap-data-transfers/async.cu",
        prints=(r"max error: (0\.0+e\+00|\d\.\d+e-(0[6-9]|[1-9]\d))",),
        never=r"(?i)max error: [1-9]\.\d+e(\+\d+|-0[0-5])|runtime error",
    ),
)

# What HIP-CPU cannot model, found in the CUDA source. Its docs (docs/overview.md, "Portability")
# name inline assembly and reliance on lock-stepped warps as non-portable; the rest is absent from
# its headers or needs a library or driver it does not have.
BLOCKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("warps in lockstep (warp shuffle/vote/sync intrinsics)",
     re.compile(r"\b__(?:shfl\w*|ballot\w*|any_sync|all_sync|any|all|activemask|syncwarp|"
                r"match_\w+|reduce_\w+_sync)\s*\(")),
    ("cooperative groups: HIP-CPU has no cooperative-groups header (and its tiles are warps "
     "in lockstep)", re.compile(r"cooperative_groups")),
    ("inline PTX", re.compile(r"\basm\s*(?:volatile\s*)?\(")),
    ("textures or surfaces", re.compile(r"\b(?:texture\s*<|cudaTextureObject_t|surf\dD|tex\dD)")),
    ("the CUDA driver API or NVRTC", re.compile(r"#\s*include\s*[<\"](?:cuda\.h|nvrtc\.h)[>\"]")),
    ("a CUDA library (cuBLAS, cuRAND, cuFFT...)",
     re.compile(r"#\s*include\s*[<\"](?:cublas|curand|cufft|cusparse|cusolver|npp)\w*\.h")),
    ("half-precision intrinsics (cuda_fp16)", re.compile(r"#\s*include\s*[<\"]cuda_fp16\.h")),
)  # fmt: skip
_HIP_NAME = re.compile(r"\bhip[A-Z]\w*")
_SOURCES = (".cu", ".cpp", ".cc")
# The include guard of ROCm's own driver_types.h, which hipify writes for CUDA's (cuda-samples'
# helper_cuda.h declares its error-name functions under `#ifdef __DRIVER_TYPES_H__`). HIP-CPU
# declares the same error codes behind `#pragma once` and defines no such macro, so the build
# defines it: a name, no semantics. The runtime guard is left undefined: what it hides needs
# hipDeviceGetAttribute (see DEVICE_HELPERS).
_ROCM_GUARDS = ("-DHIP_INCLUDE_HIP_DRIVER_TYPES_H",)
# helper_cuda.h's device selection (findCudaDevice...) is compiled only under that runtime guard:
# it reads device attributes (hipDeviceGetAttribute) that HIP-CPU does not declare, so a program
# calling one of those functions is kept out, with the missing names, rather than handed a made-up
# attribute query. The functions are read from the guarded block of the helper itself.
_RUNTIME_BLOCK = re.compile(r"^#ifdef HIP_INCLUDE_HIP_HIP_RUNTIME_H\n(.*?)^#endif", re.M | re.S)
_INLINE_FUNCTION = re.compile(r"^inline\s[\w\s*]*?\b(\w+)\s*\(", re.M)


@dataclass
class Program:
    name: str
    verdict: str  # passed | failed | excluded | compile error | timed out
    why: str = ""
    compile_s: float = 0.0
    run_s: float = 0.0


def checkout(key: str, checkouts: Path | None) -> Path:
    """The source's tree at its pinned commit: under --checkouts, or a cached clone."""
    source = SOURCES[key]
    folder = source.repo.replace("/", "+")
    if checkouts is not None:
        return checkouts / folder
    target = CACHE / f"{folder}-{source.commit[:12]}"
    if not target.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder}.", dir=CACHE))
        url = f"https://github.com/{source.repo}"
        subprocess.run(["git", "clone", "--quiet", "--filter=blob:none", "--no-checkout", url,
                        str(staging)], check=True)  # fmt: skip
        subprocess.run(
            ["git", "-C", str(staging), "checkout", "--quiet", source.commit], check=True
        )
        staging.rename(target)
    return target


def program_files(root: Path, candidate: Candidate) -> list[Path]:
    path = root / candidate.path
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.suffix in (*_SOURCES, ".cuh", ".h"))


def blockers(files: list[Path]) -> list[str]:
    """Why HIP-CPU cannot run this CUDA program as written ([] when nothing is in the way)."""
    text = "\n".join(p.read_text(errors="replace") for p in files)
    return [reason for reason, pattern in BLOCKERS if pattern.search(text)]


def hip_cpu_names(hip_cpu: Path) -> set[str]:
    """Every hip* identifier HIP-CPU's headers mention: the API a translated program may call."""
    names: set[str] = set()
    for header in (hip_cpu / "include").rglob("*"):
        if header.is_file():
            names.update(_HIP_NAME.findall(header.read_text(errors="replace")))
    return names


def stage(kept: list[Candidate], roots: dict[str, Path], stage_dir: Path) -> None:
    """Copy each kept program (and its source's shared helpers) to stage_dir/<source>/..."""
    for key in {c.source for c in kept}:
        for shared in SOURCES[key].shared:
            shutil.copytree(roots[key] / shared, stage_dir / key / shared)
    for candidate in kept:
        for file in program_files(roots[candidate.source], candidate):
            relative = file.relative_to(roots[candidate.source])
            target = stage_dir / candidate.source / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, target)


def translate(stage_dir: Path, out: Path, hip_version: str) -> None:
    options = TranslateOptions(launch="hip", hip_version=hip_version)
    hipify_paths(HipifyConfig(paths=(stage_dir,), output_dir=out, options=options))


def guarded_helpers(
    helper_text: str, declared: set[str]
) -> tuple[re.Pattern[str] | None, list[str]]:
    """The translated helper's runtime-guarded functions (as a call pattern) and the hip* names
    they use that HIP-CPU lacks; (None, []) when HIP-CPU has them all."""
    block = _RUNTIME_BLOCK.search(helper_text)
    absent = sorted(set(_HIP_NAME.findall(block.group(1) if block else "")) - declared,
                    key=_functions_first)  # fmt: skip
    functions = _INLINE_FUNCTION.findall(block.group(1)) if block else []
    if not absent or not functions:
        return None, []
    return re.compile(rf"\b(?:{'|'.join(functions)})\s*\("), absent


def absent_api(
    files: list[Path], declared: set[str], helpers: tuple[re.Pattern[str] | None, list[str]]
) -> str:
    """Why the translated program cannot compile against HIP-CPU's API ("" when it can)."""
    text = "\n".join(p.read_text(errors="replace") for p in files)
    absent = sorted(set(_HIP_NAME.findall(text)) - declared)
    if absent:
        return f"HIP-CPU does not declare {', '.join(absent[:4])}"
    pattern, helper_absent = helpers
    if pattern is not None and (call := pattern.search(text)):
        return (f"calls {call.group(0).rstrip('( ')} (cuda-samples' Common/helper_cuda.h), which "
                f"needs {', '.join(helper_absent[:3])}...: HIP-CPU declares none of them")  # fmt: skip
    return ""


def judge(candidate: Candidate, returncode: int, output: str) -> str:
    """ "" when the output is what the CUDA program prints when right, else what differs."""
    if returncode != 0:
        return f"exit {returncode}: {(output.strip().splitlines() or [''])[-1][:160]}"
    if wrong := re.search(candidate.never, output, re.MULTILINE):
        line = output[output.rfind("\n", 0, wrong.start()) + 1 :].splitlines()[0]
        return f"printed {line.strip()[:160]!r}"
    for expected in candidate.prints:
        if not re.search(expected, output, re.MULTILINE):
            return f"never printed /{expected}/"
    return ""


def build_and_run(
    candidate: Candidate, files: list[Path], includes: list[Path], hip_cpu: Path, timeout_s: float
) -> Program:
    directory = files[0].parent
    sources = [str(p) for p in files if p.suffix in _SOURCES]
    binary = directory / f"{files[0].stem}.bin"
    cmd = ["g++", "-std=c++17", "-O2", "-w", *_ROCM_GUARDS, *candidate.defines, "-x", "c++",
           *sources, "-x", "none", f"-I{hip_cpu / 'include'}", *(f"-I{i}" for i in includes),
           f"-I{directory}", "-o", str(binary), "-ltbb", "-lpthread"]  # fmt: skip
    started = time.monotonic()
    built = subprocess.run(cmd, capture_output=True, text=True)
    compile_s = time.monotonic() - started
    if built.returncode != 0:
        lines = built.stderr.splitlines()
        # a link failure names its missing symbol on an "undefined reference" line, not "error"
        first = next((ln for ln in lines if "undefined reference" in ln), None) or next(
            (ln for ln in lines if "error" in ln), built.stderr[:200]
        )
        return Program(candidate.name, "compile error", first.split("/")[-1][:240], compile_s)
    started = time.monotonic()
    try:
        ran = subprocess.run([str(binary)], cwd=directory, capture_output=True, text=True,
                             timeout=timeout_s)  # fmt: skip
    except subprocess.TimeoutExpired:
        return Program(candidate.name, "timed out", f"still running after {timeout_s:.0f} s",
                       compile_s, timeout_s)  # fmt: skip
    run_s = time.monotonic() - started
    wrong = judge(candidate, ran.returncode, ran.stdout + ran.stderr)
    if wrong:
        return Program(candidate.name, "failed", wrong, compile_s, run_s)
    shown = candidate.prints[-1] if candidate.prints else f"exit 0, no /{candidate.never}/"
    return Program(candidate.name, "passed", f"as under CUDA: {shown}", compile_s, run_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hip-cpu", type=Path, required=True, help="a HIP-CPU checkout")
    parser.add_argument("--checkouts", type=Path,
                        help="a folder of <owner>+<name> checkouts at the pinned commits")  # fmt: skip
    parser.add_argument("--hip-version", default="5.2", help="HIP names to emit (hipify)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per program run")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="programs built at once")
    add_result_args(parser, "hipify_hip_cpu")
    args = parser.parse_args()
    if not (args.hip_cpu / "include" / "hip" / "hip_runtime.h").is_file():
        sys.exit(f"error: {args.hip_cpu} is not a HIP-CPU checkout (no include/hip/hip_runtime.h)")
    run = ResultRun.start("hipify_hip_cpu", args)
    roots = {key: checkout(key, args.checkouts) for key in SOURCES}
    programs: list[Program] = []
    kept = []
    for candidate in CANDIDATES:
        reasons = blockers(program_files(roots[candidate.source], candidate))
        if reasons:
            programs.append(Program(candidate.name, "excluded", "; ".join(reasons)))
        else:
            kept.append(candidate)
    with tempfile.TemporaryDirectory(prefix="hip-cpu-run.") as tmp:
        stage(kept, roots, Path(tmp) / "cuda")
        work = Path(tmp) / "hip"
        translate(Path(tmp) / "cuda", work, args.hip_version)
        programs += run_kept(kept, work, args)
    for program in programs:
        if program.verdict == "excluded":
            print(f"{program.verdict:>13}  {program.name}: {program.why}")
    record(run, args, programs)


def run_kept(kept: list[Candidate], work: Path, args: argparse.Namespace) -> list[Program]:
    """Check each translated program against HIP-CPU's API, then build and run the rest."""
    declared = hip_cpu_names(args.hip_cpu)
    helper = work / "cuda-samples" / "Common" / "helper_cuda.h"
    helper_text = helper.read_text(errors="replace") if helper.is_file() else ""
    helpers = guarded_helpers(helper_text, declared)
    programs, jobs = [], []
    for candidate in kept:
        files = program_files(work / candidate.source, candidate)
        if why := absent_api(files, declared, helpers):
            programs.append(Program(candidate.name, "excluded", why))
            continue
        includes = [work / candidate.source / shared for shared in SOURCES[candidate.source].shared]
        jobs.append((candidate, files, includes))
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = pool.map(lambda j: build_and_run(j[0], j[1], j[2], args.hip_cpu, args.timeout), jobs)
        for program in done:
            programs.append(program)
            print(f"{program.verdict:>13}  {program.name}: {program.why}", flush=True)
    return programs


def _functions_first(name: str) -> tuple[bool, str]:
    """Calls (hipDeviceGetAttribute) before the enumerators they take."""
    return ("Get" not in name, name)


def record(run: ResultRun, args: argparse.Namespace, programs: list[Program]) -> None:
    def count(verdict: str) -> int:
        return sum(p.verdict == verdict for p in programs)

    tried = len(programs) - count("excluded")
    run.count("programs_candidates", len(programs), unit="programs")
    run.count("programs_excluded", count("excluded"), unit="programs",
              note="CUDA features HIP-CPU cannot model, or hip* names its headers lack")  # fmt: skip
    run.count("programs_run", tried, unit="programs")
    run.count("programs_passed", count("passed"), unit="programs",
              note="exit 0 with the program's own PASS line, as under CUDA")  # fmt: skip
    run.count("programs_passed_pct", round(100 * count("passed") / max(tried, 1), 1), unit="%")
    commit = subprocess.run(["git", "-C", str(args.hip_cpu), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    pinned = "; ".join(f"{s.repo} {s.commit}" for s in SOURCES.values())
    run.notes.append(f"HIP-CPU {commit or '(not a git checkout)'}; programs from {pinned}")
    compiler = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout
    run.notes.append(f"compiler: {compiler.splitlines()[0] if compiler else 'g++ not found'}")
    run.notes.append(f"build defines {' '.join(_ROCM_GUARDS)}: the ROCm header guard the "
                     "translated helper tests, which HIP-CPU's headers do not define")  # fmt: skip
    document = run.record()
    document["programs"] = [asdict(p) for p in sorted(programs, key=lambda p: p.name)]
    if run.path is not None:
        atomic_write_json(run.path, document)
        print(f"result: {run.path}; {count('passed')} of {tried} run passed")


if __name__ == "__main__":
    main()
