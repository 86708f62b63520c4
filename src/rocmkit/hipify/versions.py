"""Which HIP names exist in which HIP release: name lists built from HIP's public headers.

A mapping is only as good as its target: `hipErrorNotPermitted` compiles nowhere. Each data file
`hip_names/<major.minor>.txt` lists every `hip*`/`HIP*`/`__hip*` identifier and warp intrinsic
the AMD headers of that release spell (comments removed), with the source (repository or Debian
package, tag and commit) in its first lines. A translation for a target version emits only names
in that list; the others are reported as unconverted.

`hip_names/<major.minor>.fields.txt` lists the members of that release's `hipDeviceProp_t`: HIP
6.0 added many of CUDA's device properties, and a program reading one that the target lacks gets
the substitute in props.py.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from rocmkit.errors import UserError
from rocmkit.hipify.lexer import mask_protected

# The newest release a list is shipped for: the default when no hipcc is installed.
LATEST = "6.2"
# Targets in HIP's own namespace are checked; library names (hipblas*, hiprand*, ...) live in
# headers of other packages, so they are not.
_CHECKED = re.compile(
    r"(?:hip(?!blas|rand|fft|sparse|solver|cub|Cub|tensor)|HIP_|__hip|__shfl)\w*\Z"
)
_DECLARED = re.compile(r"(?<![\w$])(?:hip|HIP|__hip|__HIP|__shfl|__ballot|__any|__all|__sync)\w*")
_VERSION = re.compile(r"\A(\d+)\.(\d+)\Z")
# `type name;`, `type name[3];`, `type name : 1;` inside a struct body (comments masked).
_MEMBER = re.compile(r"(\w+)\s*(?:\[[^\]]*\]\s*)*(?::\s*\d+\s*)?;")
_HEADER_VERSION = re.compile(r"#define\s+HIP_VERSION_(MAJOR|MINOR)\s+(\d+)")

# The HIP libraries rocmkit emits names of, by the prefixes of their C names. Their headers ship in
# packages of their own; hip_names/<X.Y>.libraries.txt lists what each spells at the ROCm tag of
# that release (benchmarks/hipify_library_names.py). hipCUB is C++: its entries are `hipcub::Name`.
LIBRARIES: dict[str, tuple[str, ...]] = {
    "hipBLAS": ("hipblas", "HIPBLAS"),
    "hipCUB": ("hipcub::",),
    "hipFFT": ("hipfft", "HIPFFT"),
    "hipRAND": ("hiprand", "HIPRAND"),
    "hipSOLVER": ("hipsolver", "HIPSOLVER"),
    "hipSPARSE": ("hipsparse", "HIPSPARSE"),
}
_LIBRARY_PREFIXES = tuple((p, lib) for lib, ps in LIBRARIES.items() for p in ps if p[-1] != ":")
_LIBRARY_DECLARED = re.compile(rf"(?<![\w$])(?:{'|'.join(p for p, _ in _LIBRARY_PREFIXES)})\w*")
_UNLISTED = ("hipblasLt", "HIPBLASLT", "hipsparseLt", "HIPSPARSELT")
_IDENTIFIER = re.compile(r"(?<![\w$])[A-Za-z_]\w*")


def names_in_headers(texts: Iterable[str]) -> set[str]:
    """Every HIP-looking identifier the header texts spell outside comments and literals."""
    names: set[str] = set()
    for text in texts:
        names.update(_DECLARED.findall(mask_protected(text)))
    return names


def library_names_in_headers(texts: Iterable[str], *, hipcub: bool = False) -> set[str]:
    """The library names (`hipblasSgemm`, `HIPRAND_STATUS_SUCCESS`) the header texts spell
    outside comments and literals; for hipCUB, every identifier as `hipcub::Name` (a superset of
    what its namespace declares: a name it never spells is surely missing)."""
    names: set[str] = set()
    for text in texts:
        code = mask_protected(text)
        if hipcub:
            names.update(f"hipcub::{name}" for name in _IDENTIFIER.findall(code))
        else:
            names.update(_LIBRARY_DECLARED.findall(code))
    return names


def library_of(hip_name: str) -> str | None:
    """The HIP library (`hipBLAS`...) whose headers declare `hip_name`, by its prefix; None for
    HIP's own names and for hipBLASLt/hipSPARSELt (separate libraries no list is shipped for)."""
    if hip_name.startswith(_UNLISTED):
        return None
    for prefix, library in _LIBRARY_PREFIXES:
        if hip_name.startswith(prefix):
            return library
    return None


@functools.cache
def library_names(version: str) -> frozenset[str]:
    """The names HIP `version`'s libraries declare (a shipped list, see resolve_version)."""
    return _shipped_list(f"{version}.libraries.txt")


@functools.cache
def hip_headers(version: str) -> frozenset[str]:
    """The `hip/...` headers HIP `version` installs (a shipped list, see resolve_version)."""
    return _shipped_list(f"{version}.headers.txt")


@functools.cache
def hip_definitions(version: str) -> frozenset[str]:
    """The global helpers HIP `version`'s headers define (see redefinitions.py)."""
    return _shipped_list(f"{version}.definitions.txt")


def absent_libraries(include_root: Path, directories: Iterable[str]) -> frozenset[str]:
    """The library header folders (`rccl`, `thrust`...) missing under a target's include
    directory (the one next to hipcc): includes of them cannot compile there."""
    return frozenset(d for d in directories if not (include_root / d).is_dir())


@functools.cache
def library_source(version: str) -> str:
    """The ROCm tag the library list of `version` was read at (its first line)."""
    data = resources.files("rocmkit.hipify").joinpath("hip_names", f"{version}.libraries.txt")
    match = re.search(r"ROCm tag (\S+)", data.read_text())
    return match.group(1) if match else f"HIP {version}"


def struct_fields(header: str, struct: str) -> list[str]:
    """The member names of `typedef struct <struct> {...}` in a header text, in order."""
    code = mask_protected(header)
    opening = re.search(rf"\bstruct\s+{re.escape(struct)}\s*{{", code)
    if opening is None:
        raise ValueError(f"no 'struct {struct} {{' in the header")
    body = code[opening.end() : code.index("}", opening.end())]
    return _MEMBER.findall(body)


def available_versions() -> list[str]:
    """The releases a name list ships for, oldest first."""
    folder = resources.files("rocmkit.hipify").joinpath("hip_names")
    found = [entry.name.removesuffix(".txt") for entry in folder.iterdir()]
    return sorted((v for v in found if _VERSION.match(v)), key=_key)


def resolve_version(requested: str) -> str:
    """The shipped list to check against: the newest one not newer than `requested`."""
    match = _VERSION.match(requested)
    if match is None:
        raise UserError(f"--hip-version must look like 5.2 or 6.2 (got {requested!r})")
    shipped = available_versions()
    older = [v for v in shipped if _key(v) <= _key(requested)]
    if not older:
        raise UserError(f"HIP {requested} is older than the oldest name list ({shipped[0]})")
    return older[-1]


@functools.cache
def hip_names(version: str) -> frozenset[str]:
    """The names HIP `version` (a shipped list, see resolve_version) declares."""
    return _shipped_list(f"{version}.txt")


@functools.cache
def device_prop_fields(version: str) -> frozenset[str]:
    """The members of HIP `version`'s `hipDeviceProp_t` (a shipped list, see resolve_version)."""
    return _shipped_list(f"{version}.fields.txt")


def _shipped_list(file_name: str) -> frozenset[str]:
    """The entries of a hip_names/ list: one a line, `#` lines are its source and comments."""
    data = resources.files("rocmkit.hipify").joinpath("hip_names", file_name).read_text()
    return frozenset(line for line in data.splitlines() if line and not line.startswith("#"))


def is_checked(hip_name: str) -> bool:
    """Whether `hip_name` belongs to HIP itself (and so must be in the version's list)."""
    return _CHECKED.match(hip_name) is not None


def installed_version(hipcc: str | Path | None) -> str | None:
    """major.minor of the HIP headers next to `hipcc` (bin/../include/hip/hip_version.h)."""
    if hipcc is None:
        return None
    for binary in (Path(hipcc), Path(hipcc).resolve()):  # /usr/bin/hipcc may be a link
        header = binary.parent.parent / "include" / "hip" / "hip_version.h"
        try:
            found = dict(_HEADER_VERSION.findall(header.read_text(errors="replace")))
        except OSError:
            continue
        if "MAJOR" in found and "MINOR" in found:
            return f"{found['MAJOR']}.{found['MINOR']}"
    return None


def _key(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)
