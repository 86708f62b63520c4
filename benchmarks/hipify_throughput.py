"""Throughput of `rocmkit hipify` next to PyTorch's hipify (and hipify-perl when installed).

Builds a large CUDA tree from the test corpus (each program copied many times with renamed kernels,
plus a licence header and a block of CUDA names in comments, as real trees have), then converts it
with each tool into a fresh output directory in the same run and prints MB/s, files/s and ratios.

    python benchmarks/hipify_throughput.py --mb 8
"""

from __future__ import annotations

import argparse
import functools
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

sys.path.insert(0, str(REPO / "benchmarks"))

from resultfile import ResultRun, add_result_args, ratios  # noqa: E402

from rocmkit.hipify.project import HipifyConfig, hipify_paths  # noqa: E402

CORPUS = REPO / "tests" / "hipify" / "corpus"
HEADER = (
    "/*\n * Copyright (c) example. Licensed under the Apache License 2.0.\n"
    " * Uses cudaMalloc, cudaMemcpy and cublasSgemm; see cuda_runtime.h.\n */\n"
)


def build_tree(root: Path, target_bytes: int, programs_per_file: int) -> tuple[int, int]:
    """Write files of several corpus programs each (kernels renamed) under `root` until
    `target_bytes`; returns (files, bytes). Real .cu files are a few to tens of kB."""
    programs = [p.read_text() for p in sorted(CORPUS.glob("*.cu"))]
    num_files = num_bytes = 0
    while num_bytes < target_bytes:
        directory = root / f"module{num_files // 50:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        parts = [HEADER]
        for k in range(programs_per_file):
            text = programs[(num_files * programs_per_file + k) % len(programs)]
            tag = f"f{num_files}_{k}"
            parts.append(
                text.replace("__global__ void ", f"__global__ void {tag}_").replace(
                    "int main(", f"int main_{tag}("
                )
            )
        body = "\n".join(parts)
        (directory / f"unit{num_files}.cu").write_text(body)
        num_files += 1
        num_bytes += len(body.encode())
    return num_files, num_bytes


def time_it(run: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def run_rocmkit(source: Path, out: Path, jobs: int) -> None:
    hipify_paths(HipifyConfig(paths=(source,), output_dir=out, jobs=jobs))


def run_torch(source: Path, out: Path) -> None:
    from torch.utils.hipify import hipify_python

    hipify_python.HIPIFY_FINAL_RESULT.clear()  # its per-process cache would skip repeated runs
    hipify_python.hipify(
        project_directory=str(source),
        output_directory=str(out),
        extensions=(".cu",),
        includes=["*"],
        show_progress=False,
        hip_clang_launch=True,
    )


def run_hipify_perl(perl: str, source: Path, out: Path, max_files: int) -> None:
    """hipify-perl's own in-place mode on a copy of the tree, many files per invocation."""
    shutil.copytree(source, out)
    files = [str(p) for p in sorted(out.rglob("*.cu"))][:max_files]
    for start in range(0, len(files), 100):
        batch = files[start : start + 100]
        subprocess.run([perl, "-inplace", *batch], check=True, capture_output=True)


def time_one_big_file(size_mb: float) -> None:
    """One file of `size_mb` and one a tenth of it: seconds per MB should match (linear time)."""
    from rocmkit.hipify.translate import translate

    unit = "\n".join(p.read_text() for p in sorted(CORPUS.glob("*.cu")))
    unit += "".join(f"void cudaUser{i}();\ncudaGone{i}();\n" for i in range(200))
    rates = []
    for mb in (size_mb / 10, size_mb):
        text = unit * (int(mb * 1e6) // len(unit) + 1)
        wall, cpu = time_it(functools.partial(translate, text))
        # CPU time: on a shared machine the wall time also measures the other jobs.
        rates.append(cpu / (len(text) / 1e6))
        print(
            f"one {len(text) / 1e6:.1f} MB file: {wall:.2f} s wall, {cpu:.2f} s CPU "
            f"({rates[-1]:.3f} CPU s/MB)"
        )
    print(f"CPU s/MB of the big file vs the small one: {rates[1] / rates[0]:.2f}x (1.0 = linear)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=8.0, help="size of the generated tree in MB")
    parser.add_argument("--jobs", type=int, default=0, help="rocmkit worker processes (0: auto)")
    parser.add_argument("--programs-per-file", type=int, default=6, help="corpus programs per file")
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool; the fastest counts")
    parser.add_argument(
        "--hipify-perl", default=shutil.which("hipify-perl"), help="path of hipify-perl"
    )
    parser.add_argument(
        "--perl-files", type=int, default=100, help="hipify-perl is timed on this many files only"
    )
    parser.add_argument(
        "--big-file-mb", type=float, default=0, help="also time one file this large (linearity)"
    )
    add_result_args(parser, "hipify_throughput")
    args = parser.parse_args()
    run = ResultRun.start("hipify_throughput", args)
    if args.big_file_mb:
        time_one_big_file(args.big_file_mb)
    with tempfile.TemporaryDirectory(prefix="hipify-bench-") as scratch:
        root = Path(scratch)
        num_files, num_bytes = build_tree(root / "src", int(args.mb * 1e6), args.programs_per_file)
        print(f"corpus: {num_files} files, {num_bytes / 1e6:.2f} MB")
        tools: dict[str, Callable[[Path], object]] = {
            "rocmkit (1 process)": lambda out: run_rocmkit(root / "src", out, jobs=1),
            "rocmkit (parallel)": lambda out: run_rocmkit(root / "src", out, jobs=args.jobs),
        }
        try:
            from torch.utils.hipify import hipify_python  # noqa: F401
        except ImportError:
            print("torch.utils.hipify: not installed, skipped")
        else:
            tools["torch.utils.hipify"] = lambda out: run_torch(root / "src", out)
        perl = args.hipify_perl
        subset = min(args.perl_files, num_files)
        if perl:
            tools["hipify-perl"] = lambda out: run_hipify_perl(perl, root / "src", out, subset)
        else:
            print("hipify-perl: not installed, skipped (pass --hipify-perl PATH)")
        walls: dict[str, list[float]] = {name: [] for name in tools}
        cpus: dict[str, list[float]] = {name: [] for name in tools}
        # Interleave the tools: the machine may be shared. The table shows each one's best run;
        # the result file keeps every run.
        for attempt in range(args.repeat):
            for name, tool in tools.items():
                out = root / f"out-{attempt}-{len(name)}"
                wall_s, cpu_s = time_it(functools.partial(tool, out))
                walls[name].append(wall_s)
                cpus[name].append(cpu_s)
                shutil.rmtree(out, ignore_errors=True)
        wall = {name: min(v) for name, v in walls.items()}
        cpu = {name: min(v) for name, v in cpus.items()}
        record(run, walls, cpus, num_files, num_bytes)
        print(f"{'tool':24s} {'wall s':>8s} {'MB/s':>8s} {'files/s':>9s} {'CPU s':>8s}")
        for name in tools:
            # CPU time of this process only: meaningless for worker processes and hipify-perl.
            own_cpu = (
                f"{cpu[name]:8.2f}"
                if name in ("rocmkit (1 process)", "torch.utils.hipify")
                else "     n/a"
            )
            files = subset if name == "hipify-perl" else num_files
            size_mb = num_bytes / 1e6 * files / num_files
            print(
                f"{name:24s} {wall[name]:8.2f} {size_mb / wall[name]:8.3g} "
                f"{files / wall[name]:9.4g} {own_cpu}"
                + (f"  ({files} of {num_files} files)" if files != num_files else "")
            )
        base = "rocmkit (1 process)"
        for name in tools:
            if not name.startswith("rocmkit"):
                per_file = (wall[name] / (subset if name == "hipify-perl" else num_files)) / (
                    wall[base] / num_files
                )
                print(
                    f"rocmkit (1 process) vs {name}: {per_file:.2f}x faster per file (wall)"
                    + (
                        f", {cpu[name] / cpu[base]:.2f}x less CPU"
                        if name == "torch.utils.hipify"
                        else ""
                    )
                )
    run.finish()
    return 0


def record(
    run: ResultRun,
    walls: dict[str, list[float]],
    cpus: dict[str, list[float]],
    num_files: int,
    num_bytes: int,
) -> None:
    """rocmkit (1 process) in MB per CPU-second, and against PyTorch's hipify per round."""
    base = "rocmkit (1 process)"
    run.add(
        "rocmkit_1proc.mb_per_cpu_s", [num_bytes / 1e6 / c for c in cpus[base]], unit="MB/CPU-s"
    )
    run.add(
        "rocmkit_1proc.files_per_cpu_s", [num_files / c for c in cpus[base]], unit="files/CPU-s"
    )
    torch_name = "torch.utils.hipify"
    if torch_name in cpus:
        run.add(
            "torch_hipify.mb_per_cpu_s",
            [num_bytes / 1e6 / c for c in cpus[torch_name]],
            unit="MB/CPU-s",
        )
        run.add("rocmkit_over_torch.cpu", ratios(cpus[torch_name], cpus[base]), unit="x",
                baseline=torch_name)  # fmt: skip
        run.add("rocmkit_over_torch.wall", ratios(walls[torch_name], walls[base]), unit="x",
                clock="wall", baseline=torch_name)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
