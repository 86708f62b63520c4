"""Call-site fixes where a HIP function's signature differs from its CUDA twin.

HIP 5.2 declares `hipFuncSetAttribute(const void* func, ...)` and `hipFuncGetAttributes(attr,
const void* func)`; CUDA's templates accept the kernel itself, so a translated call passes a
function where HIP wants `const void*` and does not compile. The kernel argument gets
`reinterpret_cast<const void*>(...)`. A call that leaves out an argument CUDA gives a default
and HIP does not gets it spelled out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from rocmkit.hipify.lexer import call_arguments, continues_name

# CUDA function name -> index of the argument HIP declares as `const void*`
KERNEL_ARGUMENT = {"cudaFuncSetAttribute": 0, "cudaFuncGetAttributes": 1}
# CUDA function name -> (index of the first parameter CUDA defaults and HIP does not, CUDA's
# defaults from there on, in HIP's spelling). HIP 5.2 and 6.2 declare `hipMalloc3DArray(array,
# desc, extent, unsigned int flags)` with no default for `flags` (CUDA's: 0), and the `*Async`
# symbol copies with no defaults for `offset` and `kind`.
MISSING_DEFAULT = {
    "cudaMalloc3DArray": (3, ("0",)),
    "cudaMemcpyToSymbolAsync": (3, ("0", "hipMemcpyHostToDevice")),
    "cudaMemcpyFromSymbolAsync": (3, ("0", "hipMemcpyDeviceToHost")),
}
# CUDA function name -> (argument count of cuda_runtime.h's C++ overload, the HIP function).
OVERLOAD_BY_ARITY = {"cudaEventCreate": (2, "hipEventCreateWithFlags")}
_OVERLOADED_CALL = re.compile(r"(cudaEventCreate)\s*\(")
# Start with a literal so the regex engine can skip ahead; the character before is checked apart.
_CALL = re.compile(r"(cudaFunc(?:SetAttribute|GetAttributes))\s*\(")
_DEFAULTED_CALL = re.compile(r"(cudaMalloc3DArray|cudaMemcpy(?:To|From)SymbolAsync)\s*\(")
CAST = "reinterpret_cast<const void*>("
_ALREADY_CAST = ("reinterpret_cast", "(const void*)", "(void*)", "(const void *)")
TRIGGERS = ("cudaFunc", "cudaMalloc3DArray", "SymbolAsync", "cudaEventCreate")


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
