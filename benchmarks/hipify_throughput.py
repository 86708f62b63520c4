"""Throughput of `rocmkit hipify` next to PyTorch's hipify (and hipify-perl when installed).

Builds a large CUDA tree from the test corpus (each program copied many times with renamed kernels,
plus a licence header and a block of CUDA names in comments, as real trees have), then converts it
with each tool into a fresh output directory in the same run and prints MB/s, files/s and ratios.

    python benchmarks/hipify_throughput.py --mb 8
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

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
            parts.append(text.replace("__global__ void ", f"__global__ void {tag}_").replace("int main(", f"int main_{tag}("))
        body = "\n".join(parts)
        (directory / f"unit{num_files}.cu").write_text(body)
        num_files += 1
        num_bytes += len(body.encode())
    return num_files, num_bytes


def time_it(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


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


def run_hipify_perl(perl: str, source: Path, out: Path) -> None:
    for path in sorted(source.rglob("*.cu")):
        target = out / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([perl, str(path), "-o", str(target)], check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=8.0, help="size of the generated tree in MB")
    parser.add_argument("--jobs", type=int, default=0, help="rocmkit worker processes (0: auto)")
    parser.add_argument("--programs-per-file", type=int, default=6, help="corpus programs per file")
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool; the fastest counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hipify-bench-") as scratch:
        root = Path(scratch)
        num_files, num_bytes = build_tree(root / "src", int(args.mb * 1e6), args.programs_per_file)
        print(f"corpus: {num_files} files, {num_bytes / 1e6:.2f} MB")
        timings: dict[str, float] = {}

        def measure(name: str, run: Callable[[Path], object]) -> None:
            best = float("inf")
            for attempt in range(args.repeat):  # the machine may be shared: keep the best run
                out = root / f"out-{len(timings)}-{attempt}"
                best = min(best, time_it(lambda out=out: run(out)))
                shutil.rmtree(out, ignore_errors=True)
            timings[name] = best
            print(
                f"{name:28s} {best:8.2f} s  {num_bytes / 1e6 / best:8.2f} MB/s  "
                f"{num_files / best:9.1f} files/s"
            )

        measure("rocmkit (1 process)", lambda out: run_rocmkit(root / "src", out, jobs=1))
        measure("rocmkit (parallel)", lambda out: run_rocmkit(root / "src", out, jobs=args.jobs))
        try:
            import torch.utils.hipify  # noqa: F401
            from torch.utils.hipify import hipify_python
        except ImportError:
            print("torch.utils.hipify: not installed, skipped")
        else:
            measure("torch.utils.hipify", lambda out: run_torch(root / "src", out))
        perl = shutil.which("hipify-perl")
        if perl:
            measure("hipify-perl", lambda out: run_hipify_perl(perl, root / "src", out))
        else:
            print("hipify-perl: not installed, skipped")
        base = timings["rocmkit (1 process)"]
        for name, seconds in timings.items():
            if not name.startswith("rocmkit"):
                print(f"rocmkit (1 process) is {seconds / base:.1f}x faster than {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
