"""Call-site fixes where a HIP function's signature differs from its CUDA twin.

HIP 5.2 declares `hipFuncSetAttribute(const void* func, ...)` and `hipFuncGetAttributes(attr,
const void* func)`; CUDA's templates accept the kernel itself, so a translated call passes a
function where HIP wants `const void*` and does not compile. The kernel argument gets
`reinterpret_cast<const void*>(...)`. A call that leaves out an argument CUDA gives a default
and HIP does not gets it spelled out. The functions, with the declarations they follow, are data:
signatures.toml.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from typing import Any

from rocmkit.hipify.lexer import call_arguments, continues_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _load() -> dict[str, Any]:
    raw = resources.files("rocmkit.hipify").joinpath("signatures.toml").read_bytes()
    return tomllib.loads(raw.decode("utf-8"))


def _call_pattern(names: Iterable[str]) -> re.Pattern[str]:
    # The shared prefix (`cuda`) is spelled outside the alternation: a pattern that starts with a
    # literal lets the regex engine skip ahead fast; the character before is checked apart
    # (continues_name).
    ordered = sorted(names, key=lambda n: (-len(n), n))
    prefix = os.path.commonprefix(ordered)
    alternation = "|".join(re.escape(n[len(prefix) :]) for n in ordered)
    return re.compile(rf"({re.escape(prefix)}(?:{alternation}))\s*\(")


_DATA = _load()
# CUDA function name -> index of the argument HIP declares as `const void*`.
KERNEL_ARGUMENT: dict[str, int] = dict(_DATA["kernel_argument"])
# CUDA function name -> (index of the first parameter CUDA defaults and HIP does not, CUDA's
# defaults from there on, in HIP's spelling).
MISSING_DEFAULT: dict[str, tuple[int, tuple[str, ...]]] = {
    name: (int(entry[0]), tuple(entry[1:])) for name, entry in _DATA["missing_default"].items()
}
# CUDA function name -> (argument count of cuda_runtime.h's C++ overload, the HIP function).
OVERLOAD_BY_ARITY: dict[str, tuple[int, str]] = {
    name: (int(entry[0]), str(entry[1])) for name, entry in _DATA["overload_by_arity"].items()
}
_CALL = _call_pattern(KERNEL_ARGUMENT)
_DEFAULTED_CALL = _call_pattern(MISSING_DEFAULT)
_OVERLOADED_CALL = _call_pattern(OVERLOAD_BY_ARITY)
CAST = "reinterpret_cast<const void*>("
_ALREADY_CAST = ("reinterpret_cast", "(const void*)", "(void*)", "(const void *)")
# A text naming none of these has no call to fix (a substring test per file, not a regex scan).
TRIGGERS = ("cudaFunc", "cudaLaunch", "cudaMalloc3DArray", "SymbolAsync", "cudaEventCreate",
            "cudaStreamWaitEvent")  # fmt: skip


def kernel_arguments(text: str, protected: Callable[[int], bool]) -> Iterator[tuple[int, int]]:
    """(start, end) in `text` of each kernel argument to wrap in CAST ... `)`."""
    for call, spans in _calls(text, _CALL, protected):
        index = KERNEL_ARGUMENT[call.group(1)]
        if index >= len(spans):
            continue
        start, end = _stripped(text, *spans[index])
        if "//" in text[start : spans[index][1]]:
            end = spans[index][1]  # the closing `)` must not land in a line comment
        if start < end and not text.startswith(_ALREADY_CAST, start):
            yield start, end


def missing_defaults(text: str, protected: Callable[[int], bool]) -> Iterator[tuple[int, str]]:
    """(offset, text to insert there) for each call that leaves out arguments HIP requires."""
    for call, spans in _calls(text, _DEFAULTED_CALL, protected):
        first, defaults = MISSING_DEFAULT[call.group(1)]
        given = len(spans)
        if first <= given < first + len(defaults):  # just before the `)`: never in a comment
            yield spans[-1][1], "".join(f", {value}" for value in defaults[given - first :])


def overloads(text: str, protected: Callable[[int], bool]) -> Iterator[tuple[int, int, str]]:
    """(start, end, HIP name) of each call name whose argument count picks a CUDA C++ overload
    that HIP spells as another function."""
    for call, spans in _calls(text, _OVERLOADED_CALL, protected):
        count, hip_name = OVERLOAD_BY_ARITY[call.group(1)]
        if len(spans) == count:
            yield call.start(), call.end(1), hip_name


def _calls(
    text: str, pattern: re.Pattern[str], protected: Callable[[int], bool]
) -> Iterator[tuple[re.Match[str], list[tuple[int, int]]]]:
    """(match of `pattern`, argument spans) of each call in code (not in a comment or literal);
    group 1 of the match is the function name."""
    for call in pattern.finditer(text):
        if continues_name(text, call.start()) or protected(call.start()):
            continue
        spans = call_arguments(text, call.end())
        if spans is not None:
            yield call, spans


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    argument = text[start:end]
    return start + len(argument) - len(argument.lstrip()), end - len(argument) + len(
        argument.rstrip()
    )
