"""Device properties the target HIP's `hipDeviceProp_t` lacks: a substitute, reported.

HIP 6.0 added many of CUDA's `cudaDeviceProp` members; a program that reads
`prop.asyncEngineCount` does not compile against HIP 5.2. HIP 5.2's runtime does not answer
`hipDeviceGetAttribute` for these either (it returns hipErrorInvalidValue), so there is no value
to read at run time. Each such read becomes the member HIP names the same quantity, or the value
AMD GPUs have, or the cautious answer (the feature is absent), and each is reported so that the
user checks the code path it selects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import NamedTuple


class Substitute(NamedTuple):
    """`member` replaces the member name; `value` replaces the whole `object.member` read."""

    member: str | None
    value: str | None
    why: str


_CAUTIOUS = "the cautious answer (feature absent)"
SUBSTITUTES = {
    "sharedMemPerBlockOptin": Substitute(
        "sharedMemPerBlock", None, "AMD GPUs have no opt-in shared memory above the block limit"
    ),
    "sharedMemPerMultiprocessor": Substitute(
        "maxSharedMemoryPerMultiProcessor", None, "HIP's name for the same quantity"
    ),
    "reservedSharedMemPerBlock": Substitute(None, "0", "HIP reserves no shared memory per block"),
    "persistingL2CacheMaxSize": Substitute(None, "0", "HIP has no persisting L2 cache"),
    "accessPolicyMaxWindowSize": Substitute(None, "0", "HIP has no L2 access-policy windows"),
    "asyncEngineCount": Substitute(None, "0", _CAUTIOUS),
    # CUDA's older form of asyncEngineCount > 0 (deprecated there): the same cautious answer.
    "deviceOverlap": Substitute(None, "0", _CAUTIOUS + ", as for asyncEngineCount"),
    "unifiedAddressing": Substitute(None, "0", _CAUTIOUS),
    "streamPrioritiesSupported": Substitute(None, "0", _CAUTIOUS),
    "globalL1CacheSupported": Substitute(None, "0", _CAUTIOUS),
    "localL1CacheSupported": Substitute(None, "0", _CAUTIOUS),
    "hostNativeAtomicSupported": Substitute(None, "0", _CAUTIOUS),
    "computePreemptionSupported": Substitute(None, "0", _CAUTIOUS),
    "canUseHostPointerForRegisteredMem": Substitute(None, "0", _CAUTIOUS),
    "memoryPoolsSupported": Substitute(None, "0", _CAUTIOUS),
    "multiGpuBoardGroupID": Substitute(None, "0", "one board per device assumed"),
}
TRIGGERS = ("DeviceProp",)  # cudaDeviceProp / hipDeviceProp_t: no props, nothing to do
_ACCESS = re.compile(r"(?:\.|->)[ \t]*(" + "|".join(SUBSTITUTES) + r")\b")
_IDENTIFIER_CHAR = re.compile(r"[\w$]")


class PropRead(NamedTuple):
    """One read of a member the target lacks: replace text[start:end] with `replacement`."""

    start: int
    end: int
    replacement: str
    member: str
    message: str


def missing_reads(
    text: str, present: frozenset[str], version: str, protected: Callable[[int], bool]
) -> Iterator[PropRead]:
    """Each `object.member` / `object->member` read in code whose member is in SUBSTITUTES and
    not among `present` (the target's `hipDeviceProp_t` members)."""
    for access in _ACCESS.finditer(text):
        member = access.group(1)
        if member in present or protected(access.start()):
            continue
        substitute = SUBSTITUTES[member]
        message = f"HIP {version}'s hipDeviceProp_t has no {member}: "
        if substitute.member is not None:
            message += f"read as .{substitute.member} ({substitute.why})"
            yield PropRead(access.start(1), access.end(1), substitute.member, member, message)
            continue
        start = object_start(text, access.start())
        if start is None:
            continue
        message += f"replaced with {substitute.value}, {substitute.why}; check the code it selects"
        replacement = f"{substitute.value} /* HIP {version}: no hipDeviceProp_t::{member} */"
        yield PropRead(start, access.end(1), replacement, member, message)


def object_start(text: str, end: int) -> int | None:
    """Where the object expression ending at `end` (a `.` or `->`) starts: `prop`, `props[i]`,
    `p->inner`, `get(i)`, `(*p)`. None when there is no such expression."""
    position = _skip_blanks_back(text, end)
    start = None
    while position > 0:
        char = text[position - 1]
        if char in ")]":
            opening = _matching_open(text, position - 1)
            if opening is None:
                return None
            start = position = opening
            before = _skip_blanks_back(text, position)
            if before and (_IDENTIFIER_CHAR.match(text[before - 1]) or text[before - 1] in ")]"):
                position = before
                continue
            return start
        if not _IDENTIFIER_CHAR.match(char):
            return start
        while position > 0 and _IDENTIFIER_CHAR.match(text[position - 1]):
            position -= 1
        start = position
        before = _skip_blanks_back(text, position)
        for operator in (".", "->", "::"):
            if text.endswith(operator, 0, before):
                position = _skip_blanks_back(text, before - len(operator))
                break
        else:
            return start
    return start


def _matching_open(text: str, close: int) -> int | None:
    pairs = {")": "(", "]": "["}
    stack = [text[close]]
    position = close
    while position > 0 and stack:
        position -= 1
        char = text[position]
        if char in pairs:
            stack.append(char)
        elif char in "([":
            if pairs[stack[-1]] != char:
                return None
            stack.pop()
        elif char in ";{}":
            return None
    return position if not stack else None


def _skip_blanks_back(text: str, position: int) -> int:
    while position > 0 and text[position - 1] in " \t\r\n":
        position -= 1
    return position
