"""Call-site fixes where a HIP function's signature differs from its CUDA twin.

HIP 5.2 declares `hipFuncSetAttribute(const void* func, ...)` and `hipFuncGetAttributes(attr,
const void* func)`; CUDA's templates accept the kernel itself, so a translated call passes a
function where HIP wants `const void*` and does not compile. The kernel argument gets
`reinterpret_cast<const void*>(...)`.
"""

from __future__ import annotations

import re

from rocmkit.hipify.lexer import mask_protected

# function name -> index of the argument that must be `const void*`
KERNEL_ARGUMENT = {"hipFuncSetAttribute": 0, "hipFuncGetAttributes": 1}
_CALL = re.compile(r"(?<![\w$])(" + "|".join(KERNEL_ARGUMENT) + r")\s*\(")
_CAST = "reinterpret_cast<const void*>"


def cast_kernel_arguments(text: str) -> tuple[str, int]:
    """`text` with each kernel argument cast to `const void*`; (text, number of casts)."""
    if "hipFunc" not in text:
        return text, 0
    masked = mask_protected(text)
    inserts: list[tuple[int, int]] = []
    for call in _CALL.finditer(masked):
        spans = _argument_spans(masked, call.end())
        index = KERNEL_ARGUMENT[call.group(1)]
        if spans is None or index >= len(spans):
            continue
        start, end = spans[index]
        argument = text[start:end].strip()
        if argument.startswith((_CAST, "(const void*)", "(void*)", "reinterpret_cast")):
            continue
        inserts.append((start + len(text[start:end]) - len(text[start:end].lstrip()), end))
    pieces, last = [], 0
    for start, end in inserts:
        argument = text[start:end].rstrip()
        pieces += [text[last:start], f"{_CAST}({argument})"]
        last = start + len(argument)
    pieces.append(text[last:])
    return "".join(pieces), len(inserts)


def _argument_spans(masked: str, position: int) -> list[tuple[int, int]] | None:
    """(start, end) of each top-level argument of the call whose `(` ends before `position`."""
    spans, depth, start = [], 0, position
    while position < len(masked):
        char = masked[position]
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
        position += 1
    return None
