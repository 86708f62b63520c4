"""Regenerate hip_names/<X.Y>.cuda_headers.txt: every CUDA toolkit header and HIP X.Y's answer to it.

The CUDA side is a toolkit's include directory (nvcc's include/ and include/cccl/); its version is
read from cuda_runtime_api.h (CUDART_VERSION) and its components from the dist-info folders of a
pip-installed toolkit, when there are any. The library components a full toolkit adds (cuBLAS,
cuFFT, cuRAND, cuSOLVER, cuSPARSE, NPP, nvJPEG, cuFile, OpenCL, NVML, nvrtc, nvJitLink...) come
from NVIDIA's own wheels (`--wheel`, repeatable; their include/ is unpacked under `--cache`,
outside the repository), each recorded with its version and sha256. The versions that ship with
CUDA 13.0 are the pins of `cuda-toolkit==13.0.3.0` (its `all` extra):

    pip download --no-deps --only-binary=:all: --platform manylinux_2_27_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 \
        --platform manylinux_2_12_x86_64 --python-version 3.11 -d /tmp/cuda13-wheels \
        nvidia-cublas==13.1.1.3 nvidia-cufft==12.0.0.61 nvidia-curand==10.4.0.35 \
        nvidia-cusolver==12.0.4.66 nvidia-cusparse==12.6.3.3 nvidia-npp==13.0.1.2 \
        nvidia-nvjpeg==13.0.1.86 nvidia-cufile==1.15.1.6 nvidia-cuda-nvrtc==13.0.88 \
        nvidia-cuda-opencl==13.0.85 nvidia-nvfatbin==13.0.85 nvidia-nvjitlink==13.0.88 \
        nvidia-nvml-dev==13.0.87 nvidia-nvptxcompiler==13.0.88

The HIP side is what an AMD build of HIP X.Y can see: its hip/ headers (a directory, or git
checkouts at a tag, as in hipify_hip_headers.py) and the compiler's HIP wrapper headers
(`__clang_hip_*.h` and what they include); for the library headers, the HIP libraries' public
headers at the release's ROCm tag (`--library` checkouts, `--library-tag`; a library without the
tag is absent from that release). Each CUDA header gets a verdict (see rocmkit.hipify.toolkit):
`= hip/hip_runtime.h` when HIP spells every function and macro the header declares, including
the toolkit headers it includes; for a library header, the HIP library header standing for it
(`= hipfft/hipfftXt.h`, `~ ... - MISSING`, `! ... - NAMES` declared with other parameters, or
`- <hipblaslt/hipblaslt.h> (...)` when the release does not install it); `- NAMES` otherwise.

A full toolkit install (NVIDIA's packages, not pip) adds a few headers no wheel ships
(crt/nvfunctional, nvfunctional, nvsandboxutils.h, nvsandboxutils_loader.h, seen on a CUDA 13.0
V13.0.88 install); copy them into a folder and pass it with `--headers DIR=SOURCE` (H below),
which records each file's sha256.

    W="--wheel /tmp/cuda13-wheels/*.whl" (each file), H="--headers DIR=SOURCE", L="--library
    /work/.mirror/ROCm+{hipBLAS,hipBLASLt,hipFFT,hipRAND,hipSOLVER,hipSPARSE}/repo" (each):
    python benchmarks/hipify_cuda_headers.py --cuda /usr/local/cuda --version 5.2 \
        --dir /usr/include --source "Debian bookworm libamdhip64-dev 5.2.3-8, /usr/include/hip" \
        --compiler-dir /usr/lib/llvm-15/lib/clang/15.0.6/include --hipcc /usr/bin/hipcc \
        $W $H --library-tag rocm-5.2.3 $L
    python benchmarks/hipify_cuda_headers.py --cuda /usr/local/cuda --version 6.2 --tag rocm-6.2.2 \
        --git /work/.mirror/ROCm+HIP/repo:include --git /work/.mirror/ROCm+clr/repo:hipamd/include \
        --compiler-dir /usr/lib/llvm-15/lib/clang/15.0.6/include --hipcc /usr/bin/hipcc \
        $W $H --library-tag rocm-6.2.2 $L
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hipify_hip_headers import header_texts  # noqa: E402
from hipify_library_names import header_texts as library_header_texts  # noqa: E402

from rocmkit.atomic import atomic_write_text  # noqa: E402
from rocmkit.hipify.lexer import mask_protected  # noqa: E402
from rocmkit.hipify.mappings import CUDA_LOOKING, MappingTable, load_table  # noqa: E402
from rocmkit.hipify.toolkit import (  # noqa: E402
    LIBRARY_FOLDERS,
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


def wheel_includes(wheel: Path, cache: Path) -> tuple[Path, str]:
    """Unpack the include/ files of an NVIDIA component wheel (nvidia-cufft...) under `cache`,
    outside the repository; return that include directory and `name version sha256:HEX`."""
    digest = hashlib.sha256()
    with wheel.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    name, version = wheel.name.split("-")[:2]
    into = cache / f"{name}-{version}" / "include"
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            _, found, relative = member.partition("/include/")
            if found and relative and not member.endswith("/"):
                (into / relative).parent.mkdir(parents=True, exist_ok=True)
                (into / relative).write_bytes(archive.read(member))
    return into, f"{name.replace('_', '-')} {version} sha256:{digest.hexdigest()}"


class HipLibraries(NamedTuple):
    """What a ROCm release's HIP libraries install: header paths (`hipfft/hipfftXt.h`), the
    identifiers those headers spell, and where each library's headers were read."""

    headers: frozenset[str]
    spelled: frozenset[str]
    sources: tuple[str, ...]
    arity: dict[str, int]  # function -> number of parameters, as first declared


def hip_libraries(repos: list[Path], tag: str | None) -> HipLibraries:
    """The AMD-side public headers of the HIP library checkouts at `tag` (as in
    hipify_library_names.py), each at the path it installs to: every library installs its
    library/include/ files under include/<library>/ (their CMakeLists at rocm-5.2.3 and 6.2.2)."""
    headers: set[str] = set()
    texts: list[str] = []
    sources = []
    for repo in sorted(repos):
        library = repo.parent.name.split("+")[-1]
        folder = library.lower()
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", "-q", f"{tag}^{{commit}}"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        if not commit:
            sources.append(f"{library}: no {tag} tag (not in this release)")
            continue
        found = library_header_texts(repo, str(tag))
        for path in found:
            relative = path.split("/include/", 1)[1].removesuffix(".in")
            headers.add(relative if relative.startswith(f"{folder}/") else f"{folder}/{relative}")
        texts.extend(found.values())
        sources.append(f"github.com/ROCm/{library} {tag} {commit}")
    spelled = frozenset(spelled_names(texts))
    return HipLibraries(frozenset(headers), spelled, tuple(sources), arities(texts))


_DECLARATION = re.compile(r"\b([A-Za-z_]\w*)\s*\(([^;{}()]*)\)\s*(?:[;{]|__\w+|[A-Z_]{4,})")


def arities(texts: list[str]) -> dict[str, int]:
    """Each function's parameter count where it is first declared (a prototype or a
    definition with a plain parameter list): cuBLAS's legacy `cublasSdot(n, x, incx, y, incy)`
    and hipBLAS's `hipblasSdot(handle, n, ...)` differ by the handle."""
    found: dict[str, int] = {}
    for text in texts:
        for name, parameters in _DECLARATION.findall(mask_protected(text)):
            plain = parameters.strip()
            count = 0 if plain in ("", "void") else plain.count(",") + 1
            found.setdefault(name, count)
    return found


def reachable(header: str, files: dict[str, Path], mapped: set[str]) -> set[str]:
    """`header` and the toolkit headers it includes, transitively; not through headers the
    include table maps (`cuda_runtime_api.h`: translated on their own) nor into libcu++."""
    seen, todo = {header}, [header]
    while todo:
        current = todo.pop()
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
    return seen


def closure(
    header: str, files: dict[str, Path], names: dict[str, set[str]], mapped: set[str]
) -> set[str]:
    """What `header` declares together with the toolkit headers it reaches (see reachable)."""
    return set().union(*(names[h] for h in reachable(header, files, mapped)))


# A CUDA library name's HIP counterpart when the mapping table has none: HIP's libraries keep the
# cuBLAS/cuFFT/cuRAND/cuSPARSE/cuSOLVER names after the prefix (hipblasSgemm, HIPFFT_R2C).
_LIBRARY_PREFIX = re.compile(r"\A(cu|CU)(blas|BLAS|fft|FFT|rand|RAND|sparse|SPARSE|solver|SOLVER)")


def _hip_name(table: MappingTable) -> Callable[[str], str | None]:
    def hip_name(name: str) -> str | None:
        if name in table.identifiers:
            return table.identifiers[name].hip
        prefix = _LIBRARY_PREFIX.match(name)
        if prefix is not None:  # cuBLAS's `_v2` entry points are hipBLAS's unsuffixed ones
            renamed = ("hip" if prefix.group(1) == "cu" else "HIP") + name[2:]
            return re.sub(r"_v2(?=_64\Z|\Z)", "", renamed)
        return None if name in table.unsupported or CUDA_LOOKING.match(name) else name

    return hip_name


def library_target(
    header: str,
    table: MappingTable,
    reached: dict[str, set[str]],
    translated: list[str | None],
) -> tuple[str | None, bool]:
    """The HIP library header standing for a CUDA library header, and whether the include table
    says so: the table's own entry (`cufftXt.h` -> hipfft/hipfftXt.h), else that of a mapped
    header whose includes reach it (`curand_normal.h` through curand_kernel.h); else the main
    header of the HIP library most of its `translated` names belong to (`cusolverSp.h`:
    hipsolver/hipsolver.h). None: a runtime header, or a library HIP has no counterpart of."""
    target = table.includes.get(header)
    if target is None:
        reaching = sorted(m for m, found in reached.items() if header in found and m != header)
        target = table.includes[reaching[0]] if reaching else None
    if target is not None:
        return (target, True) if target.split("/", 1)[0] in LIBRARY_FOLDERS else (None, False)
    folders = [n.lower() for n in translated if n is not None]
    library = [n for n in folders if n.startswith(LIBRARY_FOLDERS)]
    if not library or len(library) * 2 < len(translated):
        return None, False
    main = max(LIBRARY_FOLDERS, key=lambda f: sum(n.startswith(f) for n in library))
    return f"{main}/{main}.h", False


# What a component header declares beyond functions and macros: `typedef ... Npp8u;`, constant
# tables (`mtgp32dc_params_fast_11213[] = {`; not a parameter `float alpha_array[],`).
_TYPEDEF = re.compile(r"\btypedef\b[^;{}]*?(?:\{[^{}]*\}\s*)?\**\s*([A-Za-z_]\w*)\s*;")
_TABLE = re.compile(
    r"^[ \t]*(?:(?:static|extern|const|inline|__\w+__)\s+)*\w+\s+([A-Za-z_]\w*)\s*\[[^\]]*\]"
    r"[ \t]*(?:=|$)",
    re.MULTILINE,
)


def library_verdict(
    header: str,
    target: str,
    curated: bool,
    declared: set[str],
    own: set[str],
    hip_spelled: set[str],
    libraries: HipLibraries,
    hip_name: Callable[[str], str | None],
    cuda_arity: dict[str, int],
) -> str:
    """The verdict against a HIP library header. `! TARGET - NAMES`: the library declares
    these with another number of parameters (cuBLAS's legacy `cublasSdot(n, ...)` against
    `hipblasSdot(handle, n, ...)`), so a translated call cannot compile and no use-site check
    sees it; else `~ TARGET - NAMES` for what it lacks, `= TARGET` for nothing. `_x` names are
    the header's internals. A counterpart the include table names stays one however much of
    the API it lacks; one found by the names' prefix must have some of what the header itself
    declares (`own`)."""
    if target not in libraries.headers:
        return f"- <{target}> (this release's HIP libraries do not install it)"
    spelled = hip_spelled | libraries.spelled
    public = {n for n in declared if not n.startswith("_")}
    differing = sorted(
        n
        for n in public
        if hip_name(n) in libraries.arity
        and n in cuda_arity
        and cuda_arity[n] != libraries.arity[hip_name(n)]  # type: ignore[index]
    )
    if differing:
        more = f" (+{len(differing) - 6} more)" if len(differing) > 6 else ""
        return f"! {target} - {' '.join(differing[:6])}{more}"
    decided = verdict(public, spelled, hip_name, target=target)
    # kept as written, the include would hide what the library does have (hipSOLVER 6.2's
    # SpCreate/csrlsvchol behind cusolverSp.h): mapped with a note unless it has none of it
    has_some = any(hip_name(n) in spelled for n in own if not n.startswith("_"))
    if decided.startswith("- ") and (curated or has_some):
        return f"~ {target} - {decided[2:]}"
    return decided


def decide(
    files: dict[str, Path], hip_spelled: set[str], libraries: HipLibraries, components: set[str]
) -> dict[str, str]:
    """Each header's verdict; `components` (headers from component wheels) also count their
    typedefs and constant tables as declarations."""
    table = load_table("auto")
    mapped = set(table.includes)
    hip_name = _hip_name(table)
    texts = {h: p.read_text(errors="replace") for h, p in files.items()}
    names = {h: declared_names(text) for h, text in texts.items()}
    codes = {h: mask_protected(texts[h]) for h in components}
    for header, code in codes.items():
        names[header] |= set(_TYPEDEF.findall(code)) | set(_TABLE.findall(code))
    for header, code in codes.items():
        if not closure(header, files, names, mapped - {header}):
            # macros only (CL/cl_version.h): those are its API
            names[header] = {m for m in _DEFINE.findall(code) if not re.search(r"_H_*\Z", m)}
    reached = {m: reachable(m, files, mapped - {m}) for m in mapped if m in files}
    targets = {}
    for header in files:
        declared = closure(header, files, names, mapped - {header})
        targets[header] = library_target(header, table, reached, [hip_name(n) for n in declared])
    decided = {}
    for header in files:
        target, curated = targets[header]
        if header.startswith("cub/"):
            decided[header] = "= hipcub/hipcub.hpp"
        elif header.startswith(_LIBCUXX):
            decided[header] = "- libcu++ (cuda::, nv/target)"
        elif target is None:
            declared = closure(header, files, names, mapped - {header})
            decided[header] = verdict(declared, hip_spelled, hip_name)
        else:
            # the headers it reaches that stand for the same HIP header (cublasLt.h reaches
            # cublas_api.h, hipBLAS's): their declarations, arities as first declared there
            own = [
                h
                for h in sorted(reachable(header, files, mapped - {header}))
                if h == header or targets[h][0] == target
            ]
            declared = set().union(*(names[h] for h in own))
            cuda_arity = arities([texts[h] for h in [header, *own]])
            decided[header] = library_verdict(
                header,
                target,
                curated,
                declared,
                names[header],
                hip_spelled,
                libraries,
                hip_name,
                cuda_arity,
            )
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
    parser.add_argument(
        "--wheel",
        type=Path,
        action="append",
        default=[],
        help="an NVIDIA component wheel (nvidia-cublas...) whose include/ joins the toolkit's",
    )
    parser.add_argument(
        "--cache", type=Path, default=Path("/tmp/rocmkit-cuda-wheels"), help="unpacked wheels"
    )
    parser.add_argument(
        "--headers",
        metavar="DIR=SOURCE",
        action="append",
        default=[],
        help="an include directory of a full toolkit install whose headers no wheel ships "
        "(crt/nvfunctional, nvsandboxutils.h), and where it comes from; each added file's "
        "sha256 is recorded",
    )
    parser.add_argument(
        "--library", type=Path, action="append", default=[], help="a HIP library git checkout"
    )
    parser.add_argument("--library-tag", help="the ROCm tag of the --library checkouts")
    args = parser.parse_args()
    include_dir = args.cuda / "include"
    texts, sources = header_texts(args)
    compiler = sorted(p for p in args.compiler_dir.glob("*.h") if _COMPILER_HIP.search(p.name))
    sources.append(f"{args.compiler_dir}: {', '.join(p.name for p in compiler)}")
    hip_texts = [*texts.values(), *(p.read_text() for p in compiler)]
    defined = {m for text in hip_texts for m in _DEFINE.findall(text)} | predefined(args.hipcc)
    hip_spelled = spelled_names(active_text(text, defined) for text in hip_texts)
    files = toolkit_headers(include_dir)
    absent = device_absent(files, hip_spelled, set(LOWERED))
    head = [
        f"# CUDA {cuda_release(include_dir)}: {include_dir} and {include_dir}/cccl (no thrust/)",
        f"# HIP {args.version}: " + "; ".join(sources),
        "# built by benchmarks/hipify_cuda_headers.py; verdicts: rocmkit/hipify/toolkit.py",
    ]
    components, from_wheels = [], set()
    for wheel in args.wheel:
        wheel_dir, component = wheel_includes(wheel, args.cache)
        added = {h: p for h, p in toolkit_headers(wheel_dir).items() if h not in files}
        files |= added
        from_wheels |= set(added)
        components.append(f"# component: {component} ({len(added)} headers)")
    for spec in args.headers:
        folder, _, source = spec.partition("=")
        if not source:
            raise SystemExit(f"--headers {spec}: give DIR=SOURCE (where the headers come from)")
        added = {h: p for h, p in toolkit_headers(Path(folder)).items() if h not in files}
        files |= added
        from_wheels |= set(added)
        digests = ", ".join(
            f"{h} sha256:{hashlib.sha256(p.read_bytes()).hexdigest()}"
            for h, p in sorted(added.items())
        )
        components.append(f"# headers: {source}: {digests}")
    libraries = hip_libraries(args.library, args.library_tag)
    components += [f"# HIP library: {source}" for source in libraries.sources]
    decided = decide(files, hip_spelled, libraries, from_wheels)
    lines = [f"{header}\t{decided[header]}" for header in sorted(decided)]
    listing = [*head, *components, *lines]
    atomic_write_text(OUT / f"{args.version}.cuda_headers.txt", "\n".join(listing) + "\n")
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
