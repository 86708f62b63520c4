"""Call-site fixes where a HIP function's signature differs from its CUDA twin.

HIP 5.2 declares `hipFuncSetAttribute(const void* func, ...)` and `hipFuncGetAttributes(attr,
const void* func)`; CUDA's templates accept the kernel itself, so a translated call passes a
function where HIP wants `const void*` and does not compile. The kernel argument gets
`reinterpret_cast<const void*>(...)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from rocmkit.hipify.lexer import mask_protected

# CUDA function name -> index of the argument HIP declares as `const void*`
KERNEL_ARGUMENT = {"cudaFuncSetAttribute": 0, "cudaFuncGetAttributes": 1}
_CALL = re.compile(r"(?<![\w$])(" + "|".join(KERNEL_ARGUMENT) + r")\s*\(")
CAST = "reinterpret_cast<const void*>("
_ALREADY_CAST = ("reinterpret_cast", "(const void*)", "(void*)", "(const void *)")
# A call's argument list is looked for within this many characters of its name.
_WINDOW = 4000


def kernel_arguments(text: str, protected: Callable[[int], bool]) -> Iterator[tuple[int, int]]:
    """(start, end) in `text` of each kernel argument to wrap in CAST ... `)`.

    Only a window after each call is masked (not the whole file): the call name lies in code, so
    masking from there on sees comments and literals exactly as the lexer does.
    """
    for call in _CALL.finditer(text):
        if protected(call.start()):
            continue
        window = mask_protected(text[call.end() : call.end() + _WINDOW])
        spans = _argument_spans(window)
        index = KERNEL_ARGUMENT[call.group(1)]
        if spans is None or index >= len(spans):
            continue
        start, end = spans[index]
        argument = window[start:end]
        start += len(argument) - len(argument.lstrip())
        end -= len(argument) - len(argument.rstrip())
        if start < end and not text.startswith(_ALREADY_CAST, call.end() + start):
            yield call.end() + start, call.end() + end


def _argument_spans(masked: str) -> list[tuple[int, int]] | None:
    """(start, end) of each top-level argument of a call whose `(` precedes `masked`."""
    spans, depth, start = [], 0, 0
    for position, char in enumerate(masked):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                spans.append((start, position))
                return spans
            depth -= 1
        elif char == "," and depth == 0:
            spans.append((start, position))
            start = position + 1
        elif char == ";":
            return None
    return None
