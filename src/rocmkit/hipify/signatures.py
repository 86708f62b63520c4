"""Call-site fixes where a HIP function's signature differs from its CUDA twin.

HIP 5.2 declares `hipFuncSetAttribute(const void* func, ...)` and `hipFuncGetAttributes(attr,
const void* func)`; CUDA's templates accept the kernel itself, so a translated call passes a
function where HIP wants `const void*` and does not compile. The kernel argument gets
`reinterpret_cast<const void*>(...)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from rocmkit.hipify.lexer import call_arguments

# CUDA function name -> index of the argument HIP declares as `const void*`
KERNEL_ARGUMENT = {"cudaFuncSetAttribute": 0, "cudaFuncGetAttributes": 1}
# Starts with a literal so the regex engine can skip ahead; the character before is checked apart.
_CALL = re.compile(r"(cudaFunc(?:SetAttribute|GetAttributes))\s*\(")
CAST = "reinterpret_cast<const void*>("
_ALREADY_CAST = ("reinterpret_cast", "(const void*)", "(void*)", "(const void *)")


def kernel_arguments(text: str, protected: Callable[[int], bool]) -> Iterator[tuple[int, int]]:
    """(start, end) in `text` of each kernel argument to wrap in CAST ... `)`."""
    for call in _CALL.finditer(text):
        before = text[call.start() - 1] if call.start() else " "
        if before.isalnum() or before in "_$" or protected(call.start()):
            continue
        spans = call_arguments(text, call.end())
        index = KERNEL_ARGUMENT[call.group(1)]
        if spans is None or index >= len(spans):
            continue
        start, end = spans[index]
        argument = text[start:end]
        start += len(argument) - len(argument.lstrip())
        end -= len(argument) - len(argument.rstrip())
        if start < end and not text.startswith(_ALREADY_CAST, start):
            yield start, end
