"""The atomic device functions HIP itself defines (hip_atomics.toml, read from HIP's own header
`hip/amd_detail/amd_hip_atomic.h`), and CUDA sources that define one of them again.

CUDA has no `atomicMax(float*, float)` or `atomicMin(double*, double)`, so kernels written for
NVIDIA define their own with an atomicCAS loop; HIP ships those overloads in its runtime header,
which hipcc includes in every compile, so a project's own `__device__ float atomicMax(float*,
float)` is a redefinition and one with another return type (`void atomicMax(float*, float)`) an
overload that differs only in its return type: either way hipcc stops the build. A definition
inside a branch no AMD compile takes (`#if __CUDA_ARCH__ < 600`) is left to the caller's branch
evaluation.

    python benchmarks/port_hip_atomics.py [HEADER]   # regenerate the table from an installed HIP
"""

from __future__ import annotations

import functools
import re
import sys
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# A definition: the return type and name at a line's start, the parameters, then the body.
_DEFINITION = re.compile(
    r"^(?P<ret>[A-Za-z_][\w \t*]*?)[ \t*]*\b(?P<name>atomic\w+)\s*\((?P<params>[^)]*)\)\s*\{",
    re.MULTILINE,
)
# A CUDA source's own device function of an atomic's name, defined (a body follows).
_DEVICE_DEFINITION = re.compile(
    r"__device__\b[^;{}()]*?\b(?P<name>atomic\w+)\s*\((?P<params>[^()]*)\)\s*\{"
)
_QUALIFIERS = re.compile(r"\b(?:const|volatile|__restrict__|__restrict|restrict)\b")
_SPELLINGS = (
    (re.compile(r"\blong long int\b"), "long long"),
    (re.compile(r"\blong int\b"), "long"),
    (re.compile(r"\bunsigned\b(?! (?:int|long|short|char)\b)"), "unsigned int"),
)


def parameter_types(params: str) -> tuple[str, ...]:
    """`float* address, float val` -> ('float*', 'float'): types only, spelled one way."""
    types = []
    for param in params.split(","):
        param = _QUALIFIERS.sub(" ", param.split("=")[0])
        stars = param.count("*") + param.count("&")
        words = param.replace("*", " ").replace("&", " ").split()
        if len(words) > 1 and words[-1] not in ("int", "long", "short", "char", "float", "double"):
            words = words[:-1]  # the parameter's name
        spelled = " ".join(words)
        for pattern, replacement in _SPELLINGS:
            spelled = pattern.sub(replacement, spelled)
        types.append(spelled + "*" * stars)
    return tuple(t for t in types if t)


def read_header(text: str) -> list[dict[str, str]]:
    """Every atomic function the header defines: name, parameter types, return type."""
    found: dict[tuple[str, str], str] = {}
    for match in _DEFINITION.finditer(text):
        ret = " ".join(_QUALIFIERS.sub(" ", match.group("ret")).split()).replace("inline ", "")
        key = (match.group("name"), ", ".join(parameter_types(match.group("params"))))
        found.setdefault(key, ret)
    return [{"name": n, "parameters": p, "returns": r} for (n, p), r in sorted(found.items())]


@functools.cache
def table() -> dict[tuple[str, tuple[str, ...]], str]:
    """(name, parameter types) -> return type, from hip_atomics.toml."""
    text = resources.files("rocmkit.port").joinpath("hip_atomics.toml").read_text("utf-8")
    rows = tomllib.loads(text).get("function", [])
    return {
        (row["name"], tuple(p for p in row["parameters"].split(", ") if p)): row["returns"]
        for row in rows
    }


def redefinitions(text: str) -> list[tuple[int, str]]:
    """(offset, evidence) of each `__device__` atomic the source defines that HIP defines too."""
    known = table()
    found = []
    for match in _DEVICE_DEFINITION.finditer(text):
        key = (match.group("name"), parameter_types(match.group("params")))
        if key in known:
            signature = f"{key[0]}({', '.join(key[1])})"
            found.append(
                (match.start("name"), f"{signature}: HIP defines {known[key]} {signature}")
            )
    return found
