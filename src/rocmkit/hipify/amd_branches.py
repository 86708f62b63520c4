"""Preprocessor branches no AMD compile takes: where a warning describes code hip-clang never sees.

Projects that already support ROCm keep their CUDA-only code behind `#ifndef __HIP_PLATFORM_AMD__`,
`#if defined(X) && !defined(__HIP_PLATFORM_AMD__)` or the `#else` of `#ifdef __HIP_PLATFORM_AMD__`
(DeepSpeed's `hw_warp_size = 32`, its `<cuda_bf16.h>`). hip-clang defines these macros in every
AMD compile, so such a branch is dead there and a warning about its contents is noise: the
translator turns it into a note (issue 29's field corpus: 3 of the dev side's false positives).
Only tests of the macros below decide; a branch on any other macro is left alone.
"""

from __future__ import annotations

import bisect
import re

# Defined by hip-clang/HIP's headers in every AMD compile, or turned into one by rocmkit
# (`__CUDACC__` -> `__HIPCC__`).
AMD_DEFINED = frozenset(
    {"__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__", "__HIPCC__", "__HIP__", "__CUDACC__"}
)
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b([^\n]*)", re.MULTILINE)
_NAME = "|".join(sorted(AMD_DEFINED))
_NEGATED = re.compile(rf"!\s*defined\s*\(?\s*(?:{_NAME})\b")
_POSITIVE = re.compile(rf"\A(?:defined\s*\(?\s*)?(?:{_NAME})\s*\)?\s*(?://.*|/\*.*)?\Z")


def dead_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, directive) of every region inside a branch an AMD compile never takes."""
    if not any(name in text for name in AMD_DEFINED):
        return []
    spans: list[tuple[int, int, str]] = []
    # per open group: whether a branch AMD surely takes came already, and the dead directive
    stack: list[tuple[bool, str | None]] = []
    dead_since: tuple[int, str] | None = None
    for match in _DIRECTIVE.finditer(text):
        keyword, condition = match.group(1), _code(match.group(2))
        directive = f"#{keyword} {condition}".strip()
        if keyword in ("if", "ifdef", "ifndef"):
            stack.append((_surely_true(keyword, condition), _dead(keyword, condition, directive)))
        elif keyword == "endif":
            if stack:
                stack.pop()
        elif stack:
            taken, _ = stack[-1]
            dead = directive if taken else _dead(keyword, condition, directive)
            stack[-1] = (taken or _surely_true(keyword, condition), dead)
        first_dead = next((d for _, d in stack if d is not None), None)
        if dead_since is not None and first_dead is None:
            spans.append((dead_since[0], match.start(), dead_since[1]))
            dead_since = None
        elif dead_since is None and first_dead is not None:
            dead_since = (match.end(), first_dead)
    if dead_since is not None:
        spans.append((dead_since[0], len(text), dead_since[1]))
    return spans


def dead_branch(spans: list[tuple[int, int, str]], offset: int) -> str | None:
    """The directive that makes `offset` dead on AMD, if any (`spans` from dead_spans)."""
    index = bisect.bisect_right(spans, (offset, 1 << 62)) - 1
    if index >= 0 and spans[index][0] <= offset < spans[index][1]:
        return spans[index][2]
    return None


def _code(condition: str) -> str:
    return re.sub(r"/\*.*?\*/|//.*", "", condition).strip()


def _surely_true(keyword: str, condition: str) -> bool:
    if keyword == "ifdef":
        return condition in AMD_DEFINED
    return keyword in ("if", "elif") and bool(_POSITIVE.match(condition))


def _dead(keyword: str, condition: str, directive: str) -> str | None:
    """The directive when its branch is surely false on AMD: `#ifndef M`, or a condition that
    requires `!defined(M)` (a conjunction, no `||`)."""
    if keyword == "ifndef" and condition in AMD_DEFINED:
        return directive
    simple = "||" not in condition and "!(" not in condition.replace(" ", "")
    if keyword in ("if", "elif") and simple and _NEGATED.search(condition):
        return directive
    return None
