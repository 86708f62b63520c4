"""Regenerate `src/rocmkit/hipify/hip_names/<X.Y>.libraries.txt` from the HIP libraries' headers.

rocmkit emits hipBLAS, hipRAND, hipFFT, hipSPARSE, hipSOLVER and hipCUB names; a HIP release ships
those libraries at the same ROCm tag. Each list is built from the AMD side of the libraries' public
headers at that tag (the `*_nvcc.h`, `nvcc_detail/` and hipCUB `backend/cub/` files, which only an
NVIDIA build sees, are left out), read straight from git checkouts of the ROCm repositories:

    python benchmarks/hipify_library_names.py --version 5.2 --tag rocm-5.2.3 \
        --repos /work/.mirror/ROCm+{hipBLAS,hipCUB,hipFFT,hipRAND,hipSOLVER,hipSPARSE}/repo
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from rocmkit.atomic import atomic_write_text  # noqa: E402
from rocmkit.hipify.versions import LIBRARIES, library_names_in_headers  # noqa: E402

# Files only the NVIDIA build of a library includes: their names are not the AMD library's.
_NVIDIA_ONLY = ("_nvcc.h", "/nvcc_detail/", "/backend/cub/", "nvidia_detail")
_HEADER_SUFFIXES = (".h", ".hpp", ".hh")
# The installed headers (not clients/include, the test and benchmark programs' own).
_PUBLIC = ("library/include/", "hipcub/include/")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def header_texts(repo: Path, tag: str) -> dict[str, str]:
    """path -> text of every AMD-side public header of `repo` at `tag`."""
    texts = {}
    for path in _git(repo, "ls-tree", "-r", "--name-only", tag).splitlines():
        if not path.startswith(_PUBLIC) or not path.endswith(_HEADER_SUFFIXES):
            continue
        if any(marker in path for marker in _NVIDIA_ONLY):
            continue
        texts[path] = _git(repo, "show", f"{tag}:{path}")
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True, help="the HIP release, e.g. 5.2")
    parser.add_argument("--tag", required=True, help="the ROCm tag, e.g. rocm-5.2.3")
    parser.add_argument("--repos", nargs="+", type=Path, required=True)
    args = parser.parse_args()
    lines = [
        f"# HIP {args.version} libraries: the names the AMD side of each library's public headers "
        f"spells at ROCm tag {args.tag}",
        "# built by benchmarks/hipify_library_names.py with "
        "rocmkit.hipify.versions.library_names_in_headers",
    ]
    names: set[str] = set()
    for repo in sorted(args.repos):
        texts = header_texts(repo, args.tag)
        commit = _git(repo, "rev-parse", f"{args.tag}^{{commit}}").strip()
        library = repo.parent.name.split("+")[-1]
        lines.append(
            f"# source: github.com/ROCm/{library} {args.tag} {commit} ({len(texts)} headers)"
        )
        names |= library_names_in_headers(texts.values(), hipcub=library == "hipCUB")
    lines.append(f"# libraries checked: {' '.join(sorted(LIBRARIES))}")
    out = REPO / "src" / "rocmkit" / "hipify" / "hip_names" / f"{args.version}.libraries.txt"
    atomic_write_text(out, "\n".join([*lines, *sorted(names)]) + "\n")
    print(f"{out}: {len(names)} names")


if __name__ == "__main__":
    main()
