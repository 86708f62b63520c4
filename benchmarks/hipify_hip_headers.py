"""Regenerate hip_names/<X.Y>.headers.txt and <X.Y>.definitions.txt from a HIP release's headers.

headers.txt lists the `hip/...` headers the release installs (a mapping to a header the target
lacks, such as `hip/hip_gl_interop.h` before it existed, is reported instead of emitted);
definitions.txt lists the global helpers its headers define that projects also write themselves
(`min`/`max`, `make_<vector>`, vector compound operators; see rocmkit.hipify.redefinitions).

    # installed headers (HIP 5.2 from Debian 12's libamdhip64-dev):
    python benchmarks/hipify_hip_headers.py --version 5.2 --dir /usr/include \
        --source "Debian bookworm libamdhip64-dev 5.2.3-8, /usr/include/hip"
    # a release's git tags (ROCm/HIP include/ and ROCm/clr hipamd/include/):
    python benchmarks/hipify_hip_headers.py --version 6.2 --tag rocm-6.2.2 \
        --git /work/.mirror/ROCm+HIP/repo:include --git /work/.mirror/ROCm+clr/repo:hipamd/include \
        --compiler-header /usr/lib/llvm-15/lib/clang/15.0.6/include/__clang_hip_math.h

The compiler header gives the min/max overloads (identical in clang 15 and upstream clang's
current __clang_hip_math.h, so one file serves both releases).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from rocmkit.atomic import atomic_write_text  # noqa: E402
from rocmkit.hipify.redefinitions import definitions_in_headers  # noqa: E402

# NVIDIA-platform files: an AMD build never sees them.
_NVIDIA_ONLY = ("nvidia_detail/", "nvcc_detail/")
OUT = REPO / "src" / "rocmkit" / "hipify" / "hip_names"


def from_directory(root: Path) -> dict[str, str]:
    """`hip/...` header path -> text, under an include directory."""
    return {
        path.relative_to(root).as_posix(): path.read_text(errors="replace")
        for path in sorted((root / "hip").rglob("*.h"))
        if not any(marker in path.as_posix() for marker in _NVIDIA_ONLY)
    }


def from_git(spec: str, tag: str) -> tuple[dict[str, str], str]:
    """`repo:include-dir` at `tag` -> ({`hip/...`: text}, source line)."""
    repo, _, prefix = spec.partition(":")

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", repo, *args], capture_output=True, check=True)
        return done.stdout.decode(errors="replace")

    texts = {}
    for path in git("ls-tree", "-r", "--name-only", tag, f"{prefix}/hip").splitlines():
        if path.endswith(".h") and not any(marker in path for marker in _NVIDIA_ONLY):
            texts[path.removeprefix(f"{prefix}/")] = git("show", f"{tag}:{path}")
    commit = git("rev-parse", f"{tag}^{{commit}}").strip()
    return texts, f"{Path(repo).parent.name.replace('+', '/')} {tag} {commit} ({prefix}/)"


def header_texts(args: argparse.Namespace) -> tuple[dict[str, str], list[str]]:
    """The HIP headers `--dir` and `--git` name (path -> text), and where each set came from."""
    texts: dict[str, str] = {}
    sources = []
    if args.dir is not None:
        texts |= from_directory(args.dir)
        sources.append(args.source or str(args.dir))
    for spec in args.git:
        found, source = from_git(spec, args.tag)
        texts |= found
        sources.append(source)
    return texts, sources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True)
    parser.add_argument("--dir", type=Path, help="an include directory holding hip/")
    parser.add_argument("--source", help="where --dir's headers come from (package, version)")
    parser.add_argument("--tag", help="the ROCm tag of the --git repositories")
    parser.add_argument("--git", action="append", default=[], help="REPO:INCLUDE_DIR")
    parser.add_argument(
        "--compiler-header",
        type=Path,
        help="the compiler's __clang_hip_math.h: hip-clang takes min/max from it, not from HIP",
    )
    args = parser.parse_args()
    texts, sources = header_texts(args)
    extra = []
    if args.compiler_header is not None:
        extra.append(args.compiler_header.read_text(errors="replace"))
        sources.append(f"{args.compiler_header} (definitions only)")
    head = [f"# source: {source}" for source in sources]
    head.append("# built by benchmarks/hipify_hip_headers.py")
    headers = [f"# HIP {args.version}: the hip/ headers an AMD build can include", *head]
    atomic_write_text(
        OUT / f"{args.version}.headers.txt", "\n".join([*headers, *sorted(texts)]) + "\n"
    )
    defined = sorted(definitions_in_headers([*texts.values(), *extra]))
    title = (
        f"# HIP {args.version}: global helpers its headers define (rocmkit.hipify.redefinitions)"
    )
    atomic_write_text(
        OUT / f"{args.version}.definitions.txt", "\n".join([title, *head, *defined]) + "\n"
    )
    print(f"{args.version}: {len(texts)} headers, {len(defined)} definitions")


if __name__ == "__main__":
    main()
