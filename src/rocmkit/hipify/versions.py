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


def names_in_headers(texts: Iterable[str]) -> set[str]:
    """Every HIP-looking identifier the header texts spell outside comments and literals."""
    names: set[str] = set()
    for text in texts:
        names.update(_DECLARED.findall(mask_protected(text)))
    return names


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
