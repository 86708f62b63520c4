"""Warp-size analysis that follows values: 32-lane assumptions in device code (`warp-size`).

hazards.py matches fixed spellings (`threadIdx.x & 31`, `#define WARP_SIZE 32`). Real kernels
spell the width through a value (`constexpr int kWarp = 32; lane = tid % kWarp;`), reduce with
shuffles from offset 16, stride loops by 32 lanes and keep per-warp partial sums in
`__shared__ float partial[32]`. On AMD CDNA's 64-lane wavefronts each of these compiles and
computes something else. This module looks only inside `__global__`/`__device__` function
bodies (host code that does `pos % 32` is left alone), follows names bound to 32, `warpSize` or
a 32-bit full mask (`#define`, `const`, `constexpr`), and reports each use with its 64-lane
consequence.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator

from rocmkit.hipify.lexer import continues_name

CODE = "warp-size"
# Names bound to the warp width or to a 32-lane full mask.
_WIDTH_NAME = re.compile(
    r"\#[ \t]*define[ \t]+(\w+)[ \t]+\(?(32|warpSize)\)?[ \t]*(?:$|//|/\*)"
    r"|\b(?:const|constexpr)\b[^;=(){}]*?\b(\w+)\s*(?:=\s*|\{\s*)(32|warpSize)\s*[;},]",
    re.MULTILINE,
)
_MASK_NAME = re.compile(
    r"\#[ \t]*define[ \t]+(\w+)[ \t]+\(?(?:0[xX][fF]{8}[uU]?[lL]{0,2}|~0[uU]?)\)?[ \t]*(?:$|//)"
    r"|\b(?:const|constexpr)\b[^;=(){}]*?\b(\w+)\s*=\s*(?:0[xX][fF]{8}[uU]?[lL]{0,2}|~0[uU]?)\s*;",
    re.MULTILINE,
)
_DEVICE = re.compile(r"__(?:global|device)__")
_BRACE = re.compile(r"[{};]")
# Names that say a statement computes with thread positions.
_THREADISH = re.compile(
    r"\b(?:threadIdx|blockDim|tid\w*|lane\w*|warp\w*|wid|thread\w*|block_?[sS]ize|tx)\b"
)
_LANE_OPERATOR = r"(?:&\s*(?:31|0[xX]1[fF])|%\s*32|>>\s*5|/\s*32)(?![\w.])"
_SHUFFLE_LOOP = re.compile(
    r"\bfor\s*\(([^;()]*=\s*)(16|\w+\s*/\s*2)\s*;[^;]*;[^)]*(?:/=\s*2|>>=\s*1)"
)
_STRIDE_LOOP = re.compile(r"\bfor\s*\(([^;]*);[^;]*;[^)]*\+=\s*(\w+)\s*\)")
_SHARED_ARRAY = re.compile(r"__shared__[^;{}]*?\b(\w+)\s*\[\s*(\w+)\s*\]")
_BALLOT = re.compile(r"__(?:ballot|activemask)")
_SYNC_MASK = re.compile(r"__\w+_sync\s*\(\s*(\w+)\s*[,)]")
_FULL_MASK_COMPARE = re.compile(r"(\w+)\s*\)?\s*[=!]=\s*(?:0[xX][fF]{8}[uU]?|~0[uU]?)(?!\w)")

_LANE_MESSAGE = (
    "lane/warp index computed for 32 lanes{via}: on a 64-lane wavefront lanes 32-63 get the "
    "lane ids of 0-31 and two 'warps' share one wavefront (use warpSize)"
)
_SHUFFLE_MESSAGE = (
    "shuffle reduction starting at offset {start} combines 32 lanes: on a 64-lane wavefront "
    "lanes 32-63 are never added, so half of the partial sums are lost (start at warpSize / 2)"
)
_STRIDE_MESSAGE = (
    "loop over lanes steps by {step} (32 lanes): on a 64-lane wavefront lanes 32-63 repeat the "
    "elements of lanes 0-31 (step by warpSize)"
)
_SHARED_MESSAGE = (
    "__shared__ {name}[{size}] holds one partial result per 32-lane warp and is indexed by a "
    "warp id: on 64-lane wavefronts the warp ids, the number of partials and the final "
    "reduction over them change (size and index it with warpSize)"
)
_MASK_MESSAGE = (
    "{name} is a 32-lane full mask (0xffffffff): on a 64-lane wavefront it names only lanes "
    "0-31 (use __activemask() or a 64-bit mask)"
)
_COMPARE_MESSAGE = (
    "a lane mask compared with the 32-lane full mask: on a 64-lane wavefront 'all lanes' is "
    "0xffffffffffffffff, so this test never (or always) holds"
)


Finding = tuple[int, str, str, str | None]


def findings(text: str, protected: Callable[[int], bool]) -> Iterator[Finding]:
    """(offset, snippet, message, the hazards.py rule that spots the same thing on its own
    spelling or None) of each 32-lane assumption inside device function bodies."""
    if "__global__" not in text and "__device__" not in text:
        return
    bodies = _device_bodies(text, protected)
    if not bodies:
        return
    starts = [start for start, _ in bodies]

    def in_device_code(offset: int) -> bool:
        index = bisect.bisect_right(starts, offset) - 1
        return index >= 0 and offset < bodies[index][1] and not protected(offset)

    widths = _bound_names(_WIDTH_NAME, text, protected, ("32", "warpSize"))
    masks = _bound_names(_MASK_NAME, text, protected, None)
    yield from _lane_arithmetic(text, widths, in_device_code)
    yield from _loops(text, widths, in_device_code)
    yield from _shared_partials(text, widths, in_device_code)
    yield from _masks(text, masks, in_device_code)


def _device_bodies(text: str, protected: Callable[[int], bool]) -> list[tuple[int, int]]:
    """(start, end) of each `__global__`/`__device__` function body, outermost only."""
    bodies: list[tuple[int, int]] = []
    for keyword in _DEVICE.finditer(text):
        start = keyword.start()
        if (bodies and start < bodies[-1][1]) or continues_name(text, start) or protected(start):
            continue
        depth, opened = 0, -1
        for brace in _BRACE.finditer(text, keyword.end()):
            char = brace.group()
            if protected(brace.start()):
                continue
            if char == ";" and opened < 0:
                break  # a __device__ variable or a prototype
            if char == "{":
                opened = brace.start() if opened < 0 else opened
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    bodies.append((opened, brace.end()))
                    break
    return bodies


def _bound_names(
    pattern: re.Pattern[str],
    text: str,
    protected: Callable[[int], bool],
    values: tuple[str, ...] | None,
) -> dict[str, str]:
    """name -> value for each `#define`/`const`/`constexpr` binding `pattern` finds."""
    names: dict[str, str] = {}
    for match in pattern.finditer(text):
        if protected(match.start()):
            continue
        groups = [g for g in match.groups() if g is not None]
        name = groups[0]
        if name not in ("warpSize",):
            names[name] = groups[1] if values is not None else "0xffffffff"
    return names


def _statement(text: str, offset: int) -> str:
    start = max(text.rfind(c, 0, offset) for c in ";{}") + 1
    ends = [e for e in (text.find(c, offset) for c in ";{}") if e >= 0]
    return text[start : min(ends, default=len(text))]


def _lane_arithmetic(
    text: str, widths: dict[str, str], in_device_code: Callable[[int], bool]
) -> Iterator[Finding]:
    # A width name bound to 32 counts like the literal; one bound to warpSize is right.
    thirty_two = [re.escape(n) for n, v in widths.items() if v == "32"]
    operators = [_LANE_OPERATOR]
    if thirty_two:
        name = rf"\(?\s*(?:{'|'.join(thirty_two)})\b"
        operators.append(rf"(?:%|/)\s*{name}|&\s*\(\s*(?:{'|'.join(thirty_two)})\s*-\s*1\s*\)")
    pattern = re.compile("|".join(operators))
    for match in pattern.finditer(text):
        offset = match.start()
        if not in_device_code(offset) or not _THREADISH.search(_statement(text, offset)):
            continue
        named = [n for n in widths if re.search(rf"\b{re.escape(n)}\b", match.group())]
        via = f" (through {named[0]} = 32)" if named else ""
        yield offset, match.group(), _LANE_MESSAGE.format(via=via), "warp-lane-arithmetic"


def _loops(
    text: str, widths: dict[str, str], in_device_code: Callable[[int], bool]
) -> Iterator[Finding]:
    for loop in _SHUFFLE_LOOP.finditer(text):
        start_value = loop.group(2).replace(" ", "")
        halves_32 = start_value == "16" or (
            start_value.endswith("/2") and widths.get(start_value[:-2]) == "32"
        )
        body = text[loop.end() : loop.end() + 400]
        if halves_32 and "__shfl" in body and in_device_code(loop.start()):
            yield loop.start(), loop.group(), _SHUFFLE_MESSAGE.format(start=loop.group(2)), None
    for loop in _STRIDE_LOOP.finditer(text):
        step = loop.group(2)
        if step != "32" and widths.get(step) != "32":
            continue
        if _THREADISH.search(loop.group(1)) and in_device_code(loop.start()):
            yield loop.start(), loop.group(), _STRIDE_MESSAGE.format(step=step), None


def _shared_partials(
    text: str, widths: dict[str, str], in_device_code: Callable[[int], bool]
) -> Iterator[Finding]:
    for array in _SHARED_ARRAY.finditer(text):
        name, size = array.groups()
        if size != "32" and widths.get(size) != "32":
            continue
        if not in_device_code(array.start()):
            continue
        uses = re.finditer(rf"\b{re.escape(name)}\s*\[([^\]]*)\]", text[array.end() :])
        if any(
            re.search(r"/\s*(?:warpSize|32)|>>\s*5|\bwarp\w*|\bwid\b", u.group(1)) for u in uses
        ):
            yield array.start(), array.group(), _SHARED_MESSAGE.format(name=name, size=size), None


def _masks(
    text: str, masks: dict[str, str], in_device_code: Callable[[int], bool]
) -> Iterator[Finding]:
    if masks:
        for call in _SYNC_MASK.finditer(text):
            name = call.group(1)
            if name in masks and in_device_code(call.start()):
                yield call.start(1), name, _MASK_MESSAGE.format(name=name), "warp-full-mask"
    for compare in _FULL_MASK_COMPARE.finditer(text):
        if not in_device_code(compare.start()):
            continue
        # The mask is the ballot itself, or a variable assigned from one earlier in the text.
        name = re.escape(compare.group(1))
        assigned = re.search(rf"\b{name}\s*=\s*__(?:ballot|activemask)", text[: compare.start()])
        if _BALLOT.search(_statement(text, compare.start())) or assigned:
            yield compare.start(), compare.group(), _COMPARE_MESSAGE, None
