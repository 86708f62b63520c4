"""Regenerate hip_names/<X.Y>.cuda_headers.txt: every CUDA toolkit header and HIP X.Y's answer to it.

The CUDA side is a toolkit's include directory (nvcc's include/ and include/cccl/); its version is
read from cuda_runtime_api.h (CUDART_VERSION) and its components from the dist-info folders of a
pip-installed toolkit, when there are any. The HIP side is what an AMD build of HIP X.Y can see:
its hip/ headers (a directory, or git checkouts at a tag, as in hipify_hip_headers.py) and the
compiler's HIP wrapper headers (`__clang_hip_*.h` and what they include). Each CUDA header gets a
verdict (see rocmkit.hipify.toolkit): `= hip/hip_runtime.h` when HIP spells every function and
macro the header declares, including the toolkit headers it includes; `- NAMES` otherwise.

    python benchmarks/hipify_cuda_headers.py --cuda /usr/local/cuda --version 5.2 \
        --dir /usr/include --source "Debian bookworm libamdhip64-dev 5.2.3-8, /usr/include/hip" \
        --compiler-dir /usr/lib/llvm-15/lib/clang/15.0.6/include
    python benchmarks/hipify_cuda_headers.py --cuda /usr/local/cuda --version 6.2 --tag rocm-6.2.2 \
        --git /work/.mirror/ROCm+HIP/repo:include --git /work/.mirror/ROCm+clr/repo:hipamd/include \
        --compiler-dir /usr/lib/llvm-15/lib/clang/15.0.6/include
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hipify_hip_headers import from_directory, from_git  # noqa: E402

from rocmkit.atomic import atomic_write_text  # noqa: E402
from rocmkit.hipify.mappings import CUDA_LOOKING, load_table  # noqa: E402
from rocmkit.hipify.toolkit import (  # noqa: E402
    declared_names,
    spelled_names,
    toolkit_headers,
    verdict,
)

OUT = REPO / "src" / "rocmkit" / "hipify" / "hip_names"
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.MULTILINE)
_RUNTIME_VERSION = re.compile(r"#define\s+CUDART_VERSION\s+(\d+)")
# hip-clang's own HIP headers in the compiler's resource directory (and what they include).
_COMPILER_HIP = re.compile(r"__clang_(?:hip|cuda_math_forward|cuda_complex)\w*\.h\Z")
# libcu++ (`cuda/...`) and NVIDIA's target macros (`nv/...`): no HIP counterpart at all.
_LIBCUXX = ("cuda/", "nv/")


def cuda_release(include_dir: Path) -> str:
    """`13.0 (nvidia-cuda-runtime 13.0.96, ...)` from the headers and any dist-info folders."""
    text = (include_dir / "cuda_runtime_api.h").read_text(errors="replace")
    number = int(_RUNTIME_VERSION.search(text).group(1))  # type: ignore[union-attr]
    release = f"{number // 1000}.{number % 1000 // 10}"
    infos = sorted(
        p.name.removesuffix(".dist-info") for p in include_dir.parent.glob("*/*.dist-info")
    )
    return f"{release} ({', '.join(infos)})" if infos else release


def closure(
    header: str, files: dict[str, Path], names: dict[str, set[str]], mapped: set[str]
) -> set[str]:
    """What `header` declares together with the toolkit headers it includes, transitively; not
    through headers the include table maps (`cuda_runtime_api.h`: translated on their own)."""
    seen, todo, found = {header}, [header], set()
    while todo:
        current = todo.pop()
        found |= names[current]
        text = files[current].read_text(errors="replace")
        folder = current.rpartition("/")[0]
        for included in _INCLUDE.findall(text):
            for candidate in (f"{folder}/{included}" if folder else included, included):
                if candidate.startswith(_LIBCUXX) or candidate in mapped:
                    break  # libcu++ is judged as a whole; a mapped header is translated itself
                if candidate in files and candidate not in seen:
                    seen.add(candidate)
                    todo.append(candidate)
                    break
    return found


def decide(files: dict[str, Path], hip_spelled: set[str]) -> dict[str, str]:
    table = load_table("auto")
    mapped = set(table.includes)

    def hip_name(name: str) -> str | None:
        if name in table.identifiers:
            return table.identifiers[name].hip
        return None if name in table.unsupported or CUDA_LOOKING.match(name) else name

    names = {h: declared_names(p.read_text(errors="replace")) for h, p in files.items()}
    decided = {}
    for header in files:
        if header.startswith("cub/"):
            decided[header] = "= hipcub/hipcub.hpp"
        elif header.startswith(_LIBCUXX):
            decided[header] = "- libcu++ (cuda::, nv/target)"
        else:
            decided[header] = verdict(closure(header, files, names, mapped), hip_spelled, hip_name)
    return decided


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuda", type=Path, required=True, help="the CUDA toolkit's root")
    parser.add_argument("--version", required=True, help="the HIP release (5.2, 6.2)")
    parser.add_argument("--dir", type=Path, help="an include directory holding hip/")
    parser.add_argument("--source", help="where --dir's headers come from (package, version)")
    parser.add_argument("--tag", help="the ROCm tag of the --git repositories")
    parser.add_argument("--git", action="append", default=[], help="REPO:INCLUDE_DIR")
    parser.add_argument("--compiler-dir", type=Path, required=True, help="clang's include dir")
    args = parser.parse_args()
    include_dir = args.cuda / "include"
    texts: dict[str, str] = {}
    sources = []
    if args.dir is not None:
        texts |= from_directory(args.dir)
        sources.append(args.source or str(args.dir))
    for spec in args.git:
        found, source = from_git(spec, args.tag)
        texts |= found
        sources.append(source)
    compiler = sorted(p for p in args.compiler_dir.glob("*.h") if _COMPILER_HIP.search(p.name))
    sources.append(f"{args.compiler_dir}: {', '.join(p.name for p in compiler)}")
    hip_spelled = spelled_names([*texts.values(), *(p.read_text() for p in compiler)])
    files = toolkit_headers(include_dir)
    decided = decide(files, hip_spelled)
    head = [
        f"# CUDA {cuda_release(include_dir)}: {include_dir} and {include_dir}/cccl (no thrust/)",
        f"# HIP {args.version}: " + "; ".join(sources),
        "# built by benchmarks/hipify_cuda_headers.py; verdicts: rocmkit/hipify/toolkit.py",
    ]
    lines = [f"{header}\t{decided[header]}" for header in sorted(decided)]
    atomic_write_text(OUT / f"{args.version}.cuda_headers.txt", "\n".join([*head, *lines]) + "\n")
    covered = sum(1 for v in decided.values() if v.startswith("="))
    print(f"HIP {args.version}: {len(decided)} CUDA headers, {covered} with a HIP header")


if __name__ == "__main__":
    main()
