"""Lower CUDA's `*_sync` warp intrinsics for HIP releases that lack them (HIP < 6.2 here).

`__shfl_xor_sync(mask, v, lane, width)` becomes `__shfl_xor(v, lane, width)`, `__ballot_sync(mask,
p)` becomes `__ballot(p)`, and so on: the older intrinsics act on the whole wavefront. That is
only equivalent when the mask named every lane, and an AMD wavefront has 64 lanes, not 32, so each
lowering is also reported (see translate.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rocmkit.hipify.lexer import call_arguments, continues_name, mask_protected

LOWERED = {
    "__shfl_sync": "__shfl",
    "__shfl_up_sync": "__shfl_up",
    "__shfl_down_sync": "__shfl_down",
    "__shfl_xor_sync": "__shfl_xor",
    "__any_sync": "__any",
    "__all_sync": "__all",
    "__ballot_sync": "__ballot",
}
# Starts with the literal `__` so the regex engine can skip ahead; the character before is
# checked apart (a leading look-behind made the scan ~40x slower).
_CALL = re.compile(r"(__(?:shfl(?:_up|_down|_xor)?|any|all|ballot)_sync)\s*\(")
WAVEFRONT_WARNING = (
    "lowered to {lowered}(...) without the lane mask: it acts on the whole 64-lane wavefront, "
    "so a 32-lane mask (0xffffffff) no longer selects the lanes; check the algorithm"
)


def sync_calls(text: str, protected: Callable[[int], bool] | None = None) -> list[tuple[int, str]]:
    """(offset, name) of every `*_sync` warp intrinsic call outside comments and literals.

    `protected` (offset -> inside a comment or literal), when the caller has lexed `text`
    already, saves masking the whole text.
    """
    if "_sync" not in text:
        return []
    code = text if protected is not None else mask_protected(text)
    calls = []
    for match in _CALL.finditer(code):
        start = match.start()
        if continues_name(code, start):
            continue
        if protected is None or not protected(start):
            calls.append((start, match.group(1)))
    return calls


def lower_sync_calls(text: str) -> tuple[str, int]:
    """`text` with the mask argument of each call dropped and the name lowered; (text, count)."""
    calls = sync_calls(text)
    if not calls:
        return text, 0
    pieces, last, count = [], 0, 0
    for start, name in calls:
        open_paren = text.index("(", start + len(name))  # only blanks lie between
        arguments = call_arguments(text, open_paren + 1)
        # One argument only is not the CUDA signature: left alone.
        if arguments is None or len(arguments) < 2 or start < last:
            continue
        pieces += [text[last:start], LOWERED[name], "("]
        last = _skip_space(text, arguments[0][1] + 1)
        count += 1
    pieces.append(text[last:])
    return "".join(pieces), count


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t":
        position += 1
    return position
