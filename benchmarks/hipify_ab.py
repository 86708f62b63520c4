"""CPU cost of `translate` now against an earlier commit, interleaved file by file.

On a shared machine whole-run timings of two versions swing by 30% with the other jobs; timing
the two versions on the same file one after the other, in one process, cancels most of that.
The earlier commit's `src/rocmkit` is extracted with `git archive` and imported as a renamed
package (`rocmkit_base`), so both run side by side on the corpus tree of hipify_throughput.py.

    python benchmarks/hipify_ab.py --base 773ac0c --mb 2 --repeat 5
"""

from __future__ import annotations

import argparse
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

from rocmkit.hipify import TranslateOptions, translate  # noqa: E402


def load_base(ref: str, into: Path) -> tuple[Callable[..., object], type]:
    """`translate` and `TranslateOptions` of commit `ref`, imported as package rocmkit_base."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "src/rocmkit"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    package = into / "rocmkit_base"
    (into / "src" / "rocmkit").rename(package)
    for source in package.rglob("*.py"):
        source.write_text(re.sub(r"\brocmkit\b", "rocmkit_base", source.read_text()))
    sys.path.insert(0, str(into))
    from rocmkit_base.hipify import (
        TranslateOptions as BaseOptions,  # type: ignore[import-not-found]
    )
    from rocmkit_base.hipify import translate as base_translate

    return base_translate, BaseOptions


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
    parser.add_argument("--base", required=True, help="git ref to compare with (e.g. a commit)")
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--hip-version", default="5.2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:  # the base package reads its data files
        base_translate, base_options_type = load_base(args.base, Path(scratch) / "base")
        tree = Path(scratch) / "tree"
        tree.mkdir()
        build_tree(tree, int(args.mb * 1e6), 6)
        texts = [path.read_text() for path in sorted(tree.rglob("*.cu"))]
        head_options = TranslateOptions(hip_version=args.hip_version)
        base_options = base_options_type(hip_version=args.hip_version)
        ratios, base_ms, head_ms = measure(
            texts, (base_translate, base_options), (translate, head_options), args.repeat
        )
    ratios.sort()
    print(
        f"{len(texts)} files, {sum(map(len, texts)) / 1e6:.2f} MB, hip_version {args.hip_version}"
    )
    print(f"base {args.base}: best {min(base_ms):.0f} ms CPU; now: best {min(head_ms):.0f} ms CPU")
    print(
        f"now / base: median {ratios[len(ratios) // 2]:.3f} "
        f"(min {ratios[0]:.3f}, max {ratios[-1]:.3f}) over {args.repeat} interleaved runs"
    )


if __name__ == "__main__":
    main()
