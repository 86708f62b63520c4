"""CUDA toolkit headers and what a HIP release has for each: `#include <X>` decided from definitions.

`hip_names/<X.Y>.cuda_headers.txt` lists every header a CUDA toolkit installs (the CUDA version
and components in its first lines) with a verdict for HIP X.Y, built by
benchmarks/hipify_cuda_headers.py from both sides' headers:

- `= hip/hip_runtime.h`: every function and macro the CUDA header declares is declared by HIP's
  headers that hip_runtime.h brings in (hip-clang's wrappers included), so the include becomes
  HIP's runtime header;
- `= hipcub/hipcub.hpp`: a CUB header (hipCUB's umbrella header declares the same API);
- `- NAME ...`: what the CUDA header declares that HIP's headers never spell (the first few):
  there is no counterpart, the include is reported at its line.

The include table of mappings.toml wins over this list; a project's own header of the same name
(`#include "..."` of a file in the tree) is never touched.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from rocmkit.hipify.lexer import mask_protected
from rocmkit.hipify.versions import available_versions, resolve_version

# Folders nvcc searches for `#include <X>`: the toolkit's include/ and, since CUDA 13, include/cccl
# (CUB, Thrust, libcu++). Thrust is left out: rocThrust installs the same paths.
_SEARCHED = ("", "cccl")
_SKIPPED = ("thrust/",)
RUNTIME = "hip/hip_runtime.h"
# The HIP libraries the include table maps CUDA's library headers to (cuBLAS -> hipBLAS...): the
# lists judge these headers against what each library installs at the release's ROCm tag.
LIBRARY_FOLDERS = ("hipblas", "hipblaslt", "hipfft", "hiprand", "hipsolver", "hipsparse")
# `type name(` at the start of a declaration: the name a header declares as a function.
_FUNCTION = re.compile(r"(?:[\w*&]\s+|[*&])([A-Za-z_]\w*)\s*\(")
_TYPE = re.compile(r"\b(?:struct|class|union)\s+(?:__\w+__\s+)*([A-Za-z_]\w*)\s*[:{]")
_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# `#pragma message("...")` and `_Pragma(...)` are not declarations (`message(` looks like one).
_PRAGMA = re.compile(r"^[ \t]*#[ \t]*pragma\b.*$|\b_+Pragma\s*\([^)]*\)", re.MULTILINE)
# Words `_FUNCTION` finds that are not declarations, and the header's own plumbing: include
# guards, declaration macros (`__DEVICE_FUNCTIONS_DECL__`), nvcc internals (`__nv_*`, `__cuda*`).
# ALL-CAPS macros are mostly the headers' plumbing; `__x__` names are attributes and qualifiers
# (`__device_builtin__`; hip_runtime.h defines the ones a program spells); `__` + camel case are
# nvcc's internal builtins (`__iAtomicAdd`, behind the public `atomicAdd`).
_NOT_API = re.compile(
    r"(?:if|for|while|switch|return|sizeof|defined|decltype|alignof|static_assert|operator"
    r"|__attribute__|__declspec|__asm__|asm|__builtin\w*|_*[A-Z][A-Z0-9_]*[a-z]?|_[A-Z]\w*"
    r"|__\w+__|__[a-z]+[A-Z]\w*|__nv_dummy\w*|__cuda\w*|__cudart\w*|__internal\w*|__CUDA\w*|__NV\w*"
    r"|__cdecl|__stdcall|__alignof|__specialization_static|va_\w+|intptr_t|ret_type|fn_name|local)\Z"
)


def toolkit_headers(include_dir: Path) -> dict[str, Path]:
    """Every header `#include <X>` reaches in a CUDA toolkit's include directory: X -> file."""
    found: dict[str, Path] = {}
    for sub in _SEARCHED:
        root = include_dir / sub if sub else include_dir
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root).as_posix()
            if path.is_dir() or (not sub and relative.startswith("cccl/")):
                continue
            if not relative.startswith(_SKIPPED):
                found.setdefault(relative, path)
    return found


def declared_names(text: str) -> set[str]:
    """The functions and macros a header text declares (comments and literals skipped), without
    its plumbing (guards, declaration macros, nvcc internals)."""
    code = _PRAGMA.sub("", mask_protected(text))
    names = set(_FUNCTION.findall(code)) | set(_MACRO.findall(code)) | set(_TYPE.findall(code))
    return {name for name in names if not _NOT_API.match(name)}


def spelled_names(texts: Iterable[str]) -> set[str]:
    """Every identifier the texts spell outside comments and literals: what a HIP release's
    headers declare, generously (a name never spelled is surely not declared)."""
    names: set[str] = set()
    for text in texts:
        names.update(_IDENTIFIER.findall(mask_protected(text)))
    return names


def verdict(
    declared: set[str],
    hip_spelled: set[str],
    hip_name: Callable[[str], str | None],
    limit: int = 6,
    target: str = RUNTIME,
) -> str:
    """What HIP has for a header declaring `declared` (a CUDA name as `hip_name` translates it;
    None: no HIP name): `= TARGET` when HIP spells every name; `~ TARGET - MISSING...` when it
    spells most (the include is mapped, what is missing is noted); else `- MISSING...` (no
    counterpart). TARGET is HIP's runtime header, or a HIP library's (`hipfft/hipfftXt.h`)."""
    missing = sorted(n for n in declared if hip_name(n) not in hip_spelled)
    if not missing:
        return f"= {target}"
    more = f" (+{len(missing) - limit} more)" if len(missing) > limit else ""
    listed = " ".join(missing[:limit]) + more
    if len(declared) - len(missing) >= len(missing):
        return f"~ {target} - {listed}"
    return f"- {listed}"


class IncludeDecision(NamedTuple):
    """What `#include <X>` of a listed CUDA header becomes: the new path (None: kept as
    written) and a diagnostic (kind None: silent)."""

    path: str | None
    kind: str | None
    message: str


def is_library_header(path: str) -> bool:
    """A header of one of the HIP libraries the lists judge (`hipfft/hipfftXt.h`)."""
    return path.split("/", 1)[0] in LIBRARY_FOLDERS


def include_decision(
    path: str, decided: str, release: str, table_path: str | None
) -> IncludeDecision:
    """The include of CUDA header `path` under its verdict `decided` for HIP `release`.
    `table_path`: where the include table maps it (a library header: then a missing name is
    left to the check at each use, and only a header the release lacks or a signature that
    differs is reported here)."""
    header = f"<{path}> is a CUDA {cuda_version()} toolkit header"
    kind, _, rest = decided.partition(" ")
    target, _, names = rest.partition(" - ")
    if kind == "=" or (kind == "~" and table_path is not None):
        return IncludeDecision(target, None, "")
    if kind == "!":
        message = (
            f"{header}; HIP {release}'s {target} declares the counterparts of {names} with "
            "other parameters (a translated call cannot compile: rewrite it to the HIP "
            "library's signature)"
        )
        return IncludeDecision(target, "hazard", message)
    if kind == "~":
        message = (
            f"{header}; its HIP {release} counterpart {target} lacks {names} "
            "(a use of those will not compile)"
        )
        return IncludeDecision(target, "note", message)
    message = (
        f"{header} with no HIP counterpart in HIP {release} (HIP's headers lack {rest}): "
        "remove the include and port or drop the code that needs it "
        "(or keep it out of AMD builds with #ifndef __HIP_PLATFORM_AMD__)"
    )
    return IncludeDecision(None, "unsupported", message)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _release_with_list(version: str) -> str | None:
    """The newest release not newer than `version` that ships a cuda_headers list."""
    folder = resources.files("rocmkit.hipify").joinpath("hip_names")
    shipped = {e.name.removesuffix(".cuda_headers.txt") for e in folder.iterdir()}
    release = resolve_version(version)
    newest = _key(release)
    candidates = [v for v in available_versions() if v in shipped and _key(v) <= newest]
    return candidates[-1] if candidates else None


@functools.cache
def header_verdicts(version: str) -> tuple[str, dict[str, str]]:
    """(the HIP release the verdicts are for, CUDA header -> verdict) for target `version`."""
    release = _release_with_list(version)
    if release is None:
        return version, {}
    data = resources.files("rocmkit.hipify").joinpath("hip_names", f"{release}.cuda_headers.txt")
    verdicts = {}
    for line in data.read_text().splitlines():
        if line and not line.startswith("#"):
            header, _, decided = line.partition("\t")
            verdicts[header] = decided
    return release, verdicts


def unlisted_headers(include_dir: Path, version: str) -> list[str]:
    """The headers a CUDA toolkit's include directory has that the list for HIP `version`
    lacks (regenerate it with benchmarks/hipify_cuda_headers.py, `--wheel` for a component)."""
    listed = header_verdicts(version)[1]
    return sorted(set(toolkit_headers(include_dir)) - set(listed))


@functools.cache
def cuda_version() -> str:
    """The CUDA version the shipped header lists were read from (their `# CUDA` line)."""
    folder = resources.files("rocmkit.hipify").joinpath("hip_names")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".cuda_headers.txt"):
            match = re.search(r"^# CUDA (\S+)", entry.read_text(), re.MULTILINE)
            if match:
                return match.group(1)
    return "?"


# The header an entry of HIPIFY's device table names in place of CUDA's (toolkit messages say
# "CUDA's <header>").
HIPIFY_TABLE = "HIPIFY's device API table"


class AbsentDeviceApi(NamedTuple):
    """The CUDA device functions a HIP release lacks, from every list shipped for it."""

    release: str
    entries: dict[str, tuple[str, str]]  # name -> (CUDA header or HIPIFY_TABLE, hint)
    sources: tuple[str, ...]  # the list files read


@functools.cache
def absent_device_api(version: str) -> AbsentDeviceApi:
    """The CUDA device API target `version`'s headers never declare (`__fmaf_rd`, `__dp4a`,
    `atomicInc_system`, `umin`), one list from two definitions: CUDA's device headers against
    HIP's (`hip_names/<X.Y>.cuda_device_absent.txt`, benchmarks/hipify_cuda_headers.py; the
    newest release not newer than `version`) and, where shipped, HIPIFY's device API table
    checked against the release's preprocessed headers (`<X.Y>.device_absent.txt`,
    benchmarks/hipify_device_functions.py). A name both list keeps CUDA's header and hint."""
    release = _release_with_list(version)
    if release is None:
        return AbsentDeviceApi(version, {}, ())
    folder = resources.files("rocmkit.hipify").joinpath("hip_names")
    entries: dict[str, tuple[str, str]] = {}
    sources = []
    hipify_list = folder.joinpath(f"{resolve_version(version)}.device_absent.txt")
    if hipify_list.is_file():
        sources.append(hipify_list.name)
        advice = "use what HIP has (the round-to-nearest `_rn` form, a plain operator) or guard it"
        entries |= {name: (HIPIFY_TABLE, advice) for name in _entries(hipify_list.read_text())}
    cuda_list = folder.joinpath(f"{release}.cuda_device_absent.txt")
    sources.append(cuda_list.name)
    for line in _entries(cuda_list.read_text()):
        name, header, *hint = line.split("\t")
        entries[name] = (header, hint[0] if hint else "")
    return AbsentDeviceApi(release, entries, tuple(sources))


def _entries(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]
