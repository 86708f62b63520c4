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
        --compiler-dir /usr/lib/llvm-15/lib/clang/15.0.6/include --hipcc /usr/bin/hipcc
    python benchmarks/hipify_cuda_headers.py --cuda /usr/local/cuda --version 6.2 --tag rocm-6.2.2 \
        --git /work/.mirror/ROCm+HIP/repo:include --git /work/.mirror/ROCm+clr/repo:hipamd/include \
        --compiler-dir /usr/lib/llvm-15/lib/clang/15.0.6/include --hipcc /usr/bin/hipcc
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hipify_hip_headers import header_texts  # noqa: E402

from rocmkit.atomic import atomic_write_text  # noqa: E402
from rocmkit.hipify.mappings import CUDA_LOOKING, load_table  # noqa: E402
from rocmkit.hipify.toolkit import (  # noqa: E402
    declared_names,
    spelled_names,
    toolkit_headers,
    verdict,
)
from rocmkit.hipify.warp import LOWERED  # noqa: E402

OUT = REPO / "src" / "rocmkit" / "hipify" / "hip_names"
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.MULTILINE)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
_RUNTIME_VERSION = re.compile(r"#define\s+CUDART_VERSION\s+(\d+)")
# hip-clang's own HIP headers in the compiler's resource directory (and what they include).
_COMPILER_HIP = re.compile(r"__clang_(?:hip|cuda_math_forward|cuda_complex)\w*\.h\Z")
# libcu++ (`cuda/...`) and NVIDIA's target macros (`nv/...`): no HIP counterpart at all.
_LIBCUXX = ("cuda/", "nv/")


_CONDITION = re.compile(
    r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b[ \t]*(.*)$", re.MULTILINE
)
_ONE_MACRO = re.compile(r"\(?\s*(?:defined\s*\(?\s*)?([A-Za-z_]\w*)\s*\)?\s*\)?\s*\Z")
# CUDA's device API: what its device headers declare (a name there is usable in any kernel).
_DEVICE_HEADERS = re.compile(
    r"\A(?:crt/(?:device_functions|device_double_functions|sm_\d+_rt)|sm_\d+_(?:intrinsics"
    r"|atomic_functions)|device_atomic_functions)\.h\Z"
)
# Public device API spelling: `__name` (not nvcc's `__nv*`, `__nvvm*` plumbing) and the
# `atomicX_block/_system` scopes, plus the integer min/max helpers (`umin`, `llmax`).
_PUBLIC_DEVICE = re.compile(
    r"\A(?:__(?!nv|host|libcpp|pm\d|cmath|pow_helper|local_|is|signbit|finite)[a-z]\w*"
    r"|atomic[A-Z]\w*_(?:block|system)|u?ll(?:min|max)|u(?:min|max))\Z"
)


def active_text(text: str, defined: set[str]) -> str:
    """`text` without the branches an AMD build never compiles: `#ifdef X` / `#if defined(X)`
    of a macro X that no header defines and the compiler does not predefine (HIP's directed-
    rounding math sits behind OCML_BASIC_ROUNDED_OPERATIONS). Every other condition counts as
    true, so the result errs on the side of "HIP has it"."""
    kept: list[str] = []
    stack: list[bool] = []  # per open #if: is its current branch dropped?
    last = 0
    for match in _CONDITION.finditer(text):
        if not any(stack):
            kept.append(text[last : match.start()])
        last = match.end()
        word, condition = match.group(1), match.group(2).split("//")[0].strip()
        if word in ("if", "ifdef"):
            macro = _ONE_MACRO.match(condition)
            stack.append(macro is not None and macro.group(1) not in defined)
        elif word == "ifndef":
            stack.append(False)
        elif word in ("elif", "else") and stack:
            stack[-1] = False
        elif word == "endif" and stack:
            stack.pop()
    if not any(stack):
        kept.append(text[last:])
    return "".join(kept)


def device_absent(
    files: dict[str, Path], hip_spelled: set[str], skipped: set[str]
) -> list[tuple[str, str, str]]:
    """(name, CUDA header, hint) for the public device API CUDA's device headers declare and
    HIP's active headers never spell; names rocmkit rewrites itself (`skipped`) are left out."""
    found: dict[str, str] = {}
    for header, path in files.items():
        if _DEVICE_HEADERS.match(header):
            for name in declared_names(path.read_text(errors="replace")):
                if _PUBLIC_DEVICE.match(name) and not name.endswith("_impl"):
                    found.setdefault(name, header)
    rows = []
    for name in sorted(set(found) - hip_spelled - skipped):
        nearest = re.sub(r"_r[dzu]\Z", "_rn", name)
        hint = f"HIP has {nearest} (round to nearest)" if nearest in hip_spelled - {name} else ""
        rows.append((name, found[name], hint))
    return rows


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
    parser.add_argument(
        "--hipcc", help="a hipcc whose predefined macros count as defined (hipcc -dM -E)"
    )
    args = parser.parse_args()
    include_dir = args.cuda / "include"
    texts, sources = header_texts(args)
    compiler = sorted(p for p in args.compiler_dir.glob("*.h") if _COMPILER_HIP.search(p.name))
    sources.append(f"{args.compiler_dir}: {', '.join(p.name for p in compiler)}")
    hip_texts = [*texts.values(), *(p.read_text() for p in compiler)]
    defined = {m for text in hip_texts for m in _DEFINE.findall(text)} | predefined(args.hipcc)
    hip_spelled = spelled_names(active_text(text, defined) for text in hip_texts)
    files = toolkit_headers(include_dir)
    decided = decide(files, hip_spelled)
    absent = device_absent(files, hip_spelled, set(LOWERED))
    head = [
        f"# CUDA {cuda_release(include_dir)}: {include_dir} and {include_dir}/cccl (no thrust/)",
        f"# HIP {args.version}: " + "; ".join(sources),
        "# built by benchmarks/hipify_cuda_headers.py; verdicts: rocmkit/hipify/toolkit.py",
    ]
    lines = [f"{header}\t{decided[header]}" for header in sorted(decided)]
    atomic_write_text(OUT / f"{args.version}.cuda_headers.txt", "\n".join([*head, *lines]) + "\n")
    covered = sum(1 for v in decided.values() if v.startswith("="))
    rows = [f"{name}\t{header}\t{hint}".rstrip() for name, header, hint in absent]
    title = (
        f"# CUDA device API that HIP {args.version}'s headers do not declare: name, header, hint"
    )
    atomic_write_text(
        OUT / f"{args.version}.cuda_device_absent.txt", "\n".join([title, *head, *rows]) + "\n"
    )
    print(f"HIP {args.version}: {len(decided)} CUDA headers, {covered} with a HIP header")
    print(f"HIP {args.version}: {len(absent)} CUDA device functions it does not declare")


def predefined(hipcc: str | None) -> set[str]:
    """The macros hipcc predefines for gfx90a, host and device pass (none without hipcc)."""
    if hipcc is None:
        return set()
    names: set[str] = set()
    for extra in ([], ["--cuda-device-only"]):
        command = [hipcc, "-x", "hip", "--offload-arch=gfx90a", *extra, "-dM", "-E", "/dev/null"]
        done = subprocess.run(
            command, capture_output=True, text=True, env={**os.environ, "HIP_PLATFORM": "amd"}
        )
        names |= set(_DEFINE.findall(done.stdout))
    return names


if __name__ == "__main__":
    main()
