"""`__CUDA_ARCH__` in preprocessor conditions and code: one decision per use, right for AMD.

nvcc defines `__CUDA_ARCH__` (e.g. 800) in each device pass and leaves it undefined in the host
pass; hip-clang never defines it. Tested for being defined, it becomes `__HIP_DEVICE_COMPILE__`
(defined exactly in HIP's device pass). Compared by value, leaving it as it is makes every
comparison see 0: `#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600` then enables the
classic `atomicAdd(double*, double)` fallback, which redefines the one HIP declares. Each
comparison is therefore decided as if the device pass had `amd_value` (cuda_arch.toml: AMD has
what sm_60 and below gate, none of sm_61+) and the host pass 0, and folded to `1`, `0` or
`[!]defined(__HIP_DEVICE_COMPILE__)`. A comparison that compiles a newer CUDA-only path out
(tensor cores, cp.async) is reported as a hazard; every other decision as a note.
"""

from __future__ import annotations

import bisect
import functools
import operator
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Literal

from rocmkit.hipify.guards import conditional_directives

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

NAME = "__CUDA_ARCH__"
DEVICE_PASS = "__HIP_DEVICE_COMPILE__"
_USE = re.compile(r"__CUDA_ARCH__(?![\w$])")
_NUMBER = r"(\d+)[uUlL]*"
_OPERATOR = r"(>=|<=|==|!=|>|<)"
_AFTER = re.compile(rf"[ \t]*{_OPERATOR}[ \t]*{_NUMBER}(?![\w.])")
_BEFORE = re.compile(rf"(?<![\w.]){_NUMBER}[ \t]*{_OPERATOR}[ \t]*\Z")
_DEFINED_BEFORE = re.compile(r"\bdefined\s*\(?\s*\Z")
_COMPARE = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_FLIPPED = {">=": "<=", "<=": ">=", ">": "<", "<": ">", "==": "==", "!=": "!="}
# Directives that open, continue or close a conditional group (for "is there an #else?").
_GROUP = re.compile(r"^[ \t]*\#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b", re.MULTILINE)
# What a compiled-out branch uses that AMD has no form of (named in the hazard).
_CUDA_ONLY = re.compile(r"\b(wmma|mma_sync|mma\.sync|ldmatrix|cp\.async|asm|__nanosleep|__dp4a)\b")


@dataclass(frozen=True, slots=True)
class ArchTable:
    amd_value: int
    gates: dict[int, str]  # threshold -> what it gates


@functools.cache
def arch_table() -> ArchTable:
    raw = resources.files("rocmkit.hipify").joinpath("cuda_arch.toml").read_bytes()
    data = tomllib.loads(raw.decode("utf-8"))
    gates = {int(threshold): str(what) for threshold, what in data["gates"].items()}
    return ArchTable(amd_value=int(data["amd_value"]), gates=gates)


@dataclass(frozen=True, slots=True)
class ArchUse:
    """Replace text[start:end] with `replacement`; report `message` (kind None: silently)."""

    start: int
    end: int
    replacement: str
    category: str
    kind: Literal["hazard", "note"] | None
    message: str


def arch_uses(text: str, protected: Callable[[int], bool]) -> Iterator[ArchUse]:
    """Every use of `__CUDA_ARCH__` outside comments and literals, decided for AMD."""
    if NAME not in text:
        return
    directives = list(conditional_directives(text, protected))
    starts = [rest_start for _, rest_start, _ in directives]
    table = arch_table()
    for use in _USE.finditer(text):
        start = use.start()
        if (start and (text[start - 1].isalnum() or text[start - 1] in "_$")) or protected(start):
            continue
        index = bisect.bisect_right(starts, start) - 1
        if index >= 0 and start < directives[index][2]:
            keyword, rest_start, _ = directives[index]
            yield _in_condition(text, use, keyword, rest_start, table, protected)
        else:
            yield _in_code(start, table)


def _in_condition(
    text: str,
    use: re.Match[str],
    keyword: str,
    rest_start: int,
    table: ArchTable,
    protected: Callable[[int], bool],
) -> ArchUse:
    start, end = use.span()
    if keyword in ("ifdef", "ifndef") or _DEFINED_BEFORE.search(text, rest_start, start):
        return ArchUse(start, end, DEVICE_PASS, "guard", None, "")
    after = _AFTER.match(text, end)
    before = _BEFORE.search(text, rest_start, start)
    if after is not None:
        op, threshold, span = after.group(1), int(after.group(2)), (start, after.end())
    elif before is not None:
        op, threshold, span = _FLIPPED[before.group(2)], int(before.group(1)), (before.start(), end)
    else:
        value = f"(defined({DEVICE_PASS}) ? {table.amd_value} : 0)"
        message = (
            f"{NAME} used by value in a condition: read as {table.amd_value} in HIP's device "
            f"pass and 0 in the host pass ({_amd_summary(table)}); check the arithmetic"
        )
        return ArchUse(start, end, value, "cuda-arch", "note", message)
    return _decided(text, span, op, threshold, table, protected)


def _decided(
    text: str,
    span: tuple[int, int],
    op: str,
    threshold: int,
    table: ArchTable,
    protected: Callable[[int], bool],
) -> ArchUse:
    """A comparison `__CUDA_ARCH__ op threshold`, folded to what AMD's passes see."""
    compare = _COMPARE[op]
    device, host = compare(table.amd_value, threshold), compare(0, threshold)
    folded = {
        (True, True): "1",
        (False, False): "0",
        (True, False): f"defined({DEVICE_PASS})",
        (False, True): f"!defined({DEVICE_PASS})",
    }[(device, host)]
    written = f"{NAME} {op} {threshold}"
    gate = table.gates.get(threshold, f"sm_{threshold // 10} features")
    verdict = "true" if device else "false"
    compiled_out = not device and threshold > table.amd_value and op in (">=", ">", "==")
    if not compiled_out:
        message = (
            f"`{written}` decided {verdict} for AMD ({_amd_summary(table)}; this threshold "
            f"gates {gate}): the condition now reads {folded}"
        )
        return ArchUse(*span, folded, "cuda-arch", "note", message)
    message = (
        f"`{written}` is false for AMD: no AMD GPU has {gate}, so this path is compiled out"
        f"{_what_replaces_it(text, span[1], protected)}; port it (rocWMMA or the MFMA builtins for "
        "tensor cores) or check the branch HIP compiles instead"
    )
    return ArchUse(*span, folded, "cuda-arch", "hazard", message)


def _what_replaces_it(text: str, position: int, protected: Callable[[int], bool]) -> str:
    """Whether the group the condition at `position` opens has another branch, and what the
    compiled-out branch uses that AMD lacks."""
    depth, branch_end, has_alternative = 0, len(text), False
    for directive in _GROUP.finditer(text, text.find("\n", position) + 1 or len(text)):
        keyword = directive.group(1)
        if protected(directive.start(1)):
            continue
        if keyword.startswith("if"):
            depth += 1
        elif depth == 0:
            branch_end = min(branch_end, directive.start())
            has_alternative = keyword != "endif"
            break
        elif keyword == "endif":
            depth -= 1
    found = sorted(
        {
            m.group(1)
            for m in _CUDA_ONLY.finditer(text, position, branch_end)
            if not protected(m.start())
        }
    )
    uses = f" (it uses {', '.join(found)})" if found else ""
    if has_alternative:
        return f"{uses} and the next #elif/#else branch runs instead"
    return f"{uses} and nothing replaces it: the work is silently skipped"


def _in_code(start: int, table: ArchTable) -> ArchUse:
    message = (
        f"{NAME} used as a value in code: replaced with {table.amd_value} "
        f"({_amd_summary(table)}); check what the code selects with it"
    )
    replacement = f"{table.amd_value} /* {NAME} for AMD, see rocmkit hipify */"
    return ArchUse(start, start + len(NAME), replacement, "cuda-arch", "note", message)


def _amd_summary(table: ArchTable) -> str:
    return f"AMD has what sm_{table.amd_value // 10} and below gate, nothing newer"
