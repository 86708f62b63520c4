"""CPU cost of `translate` now against an earlier commit, interleaved file by file.

On a shared machine whole-run timings of two versions swing by 30% with the other jobs; timing
the two versions on the same file one after the other, in one process, cancels most of that.
The earlier commit's `src/rocmkit` is extracted with `git archive` and imported as a renamed
package (`rocmkit_base`), so both run side by side on the corpus tree of hipify_throughput.py.

    python benchmarks/hipify_ab.py --base 773ac0c 3ffae72 --mb 2 --repeat 5
    python benchmarks/hipify_ab.py --base 8e59fd0 --mb 1 --repeat 5 --tree

`--tree` times the whole tree run instead (`hipify_paths`, a dry run: the tree pass that reads
every file's `#define`s first, then each file's translation), the two versions alternated per run.

Writes benchmarks/results/hipify_ab.json through resultfile.py: per base, every run's now/base
ratio of CPU time (thread time of this process; both sides alternate file by file) and each
side's CPU milliseconds, with the load around the run.
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from hipify_throughput import build_tree  # noqa: E402
from resultfile import ResultRun, add_result_args  # noqa: E402

from rocmkit.hipify import TranslateOptions, translate  # noqa: E402


def load_base(ref: str, into: Path) -> tuple[Callable[..., object], type]:
    """`translate` and `TranslateOptions` of commit `ref`, imported as package rocmkit_base_<ref>."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "src/rocmkit"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    name = f"rocmkit_base_{ref}"
    package = into / name
    (into / "src" / "rocmkit").rename(package)
    for source in package.rglob("*.py"):
        source.write_text(re.sub(r"\brocmkit\b", name, source.read_text()))
    sys.path.insert(0, str(into))
    module = importlib.import_module(f"{name}.hipify")
    base_translate, BaseOptions = module.translate, module.TranslateOptions
    return base_translate, BaseOptions


def tree_runner(package: str, tree: Path) -> Callable[..., object]:
    """A `translate`-shaped callable that runs package's `hipify_paths` over `tree` (dry run)."""
    project = importlib.import_module(f"{package}.hipify.project")

    def run(_text: str, *, options: object) -> object:
        # one process (jobs=1): the clock is this thread's
        return project.hipify_paths(project.HipifyConfig(paths=(tree,), jobs=1, options=options))

    return run


def measure(
    texts: list[str],
    base: tuple[Callable[..., object], object],
    head: tuple[Callable[..., object], object],
    repeat: int,
) -> tuple[list[float], list[float], list[float]]:
    """(now/base ratio, base ms, now ms) per run; each file is translated by both in turn."""
    clock = time.thread_time_ns
    ratios, base_ms, head_ms = [], [], []
    for _ in range(repeat):
        base_ns = head_ns = 0
        for text in texts:
            start = clock()
            base[0](text, options=base[1])
            base_ns += clock() - start
            start = clock()
            head[0](text, options=head[1])
            head_ns += clock() - start
        ratios.append(head_ns / base_ns)
        base_ms.append(base_ns / 1e6)
        head_ms.append(head_ns / 1e6)
    return ratios, base_ms, head_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", nargs="+", required=True, help="git refs to compare with")
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--hip-version", default="5.2")
    parser.add_argument("--tree", action="store_true", help="time hipify_paths over the tree")
    add_result_args(parser, "hipify_ab")
    args = parser.parse_args()
    run = ResultRun.start("hipify_ab", args)
    with tempfile.TemporaryDirectory() as scratch:  # the base package reads its data files
        tree = Path(scratch) / "tree"
        tree.mkdir()
        build_tree(tree, int(args.mb * 1e6), 6)
        texts = [path.read_text() for path in sorted(tree.rglob("*.cu"))]
        head_options = TranslateOptions(hip_version=args.hip_version)
        print(f"{len(texts)} files, {sum(map(len, texts)) / 1e6:.2f} MB, HIP {args.hip_version}")
        for ref in args.base:
            base_translate, base_options_type = load_base(ref, Path(scratch) / f"base-{ref}")
            base_options = base_options_type(hip_version=args.hip_version)
            head_translate: Callable[..., object] = translate
            if args.tree:  # one "text" per run: the whole tree
                base_translate = tree_runner(f"rocmkit_base_{ref}", tree)
                head_translate = tree_runner("rocmkit", tree)
            ratios, base_ms, head_ms = measure(
                [""] if args.tree else texts,
                (base_translate, base_options),
                (head_translate, head_options),
                args.repeat,
            )
            run.add(f"vs_{ref}.now_over_base", ratios, unit="x CPU time", higher_is_better=False,
                    baseline=f"translate() of commit {ref}, alternated file by file")  # fmt: skip
            run.add(f"vs_{ref}.base_cpu_ms", base_ms, unit="ms", higher_is_better=False)
            run.add(f"vs_{ref}.now_cpu_ms", head_ms, unit="ms", higher_is_better=False)
            ratios.sort()
            print(
                f"now / {ref}: median {ratios[len(ratios) // 2]:.3f} (min {ratios[0]:.3f}, "
                f"max {ratios[-1]:.3f}) over {args.repeat} runs; best {min(base_ms):.0f} ms "
                f"-> {min(head_ms):.0f} ms CPU"
            )
    what = "hipify_paths over the tree (dry run)" if args.tree else "translate() per file"
    run.notes.append(
        f"{len(texts)} corpus-tree files, {what}, hip_version {args.hip_version}, thread CPU time"
    )
    run.finish()


if __name__ == "__main__":
    main()
