"""Rewrite `kernel<<<grid, block, shmem, stream>>>(args)` into `hipLaunchKernelGGL(...)`.

hip-clang accepts the triple-chevron syntax, so this is optional (`--launch hip`). The parser works on
the code with comments and literals blanked, so brackets inside strings never confuse it, and
balances (), [], {} and template <> so that `k<Foo<int, 2>><<<g, b>>>(f(a, b), c)` splits right.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmkit.hipify.lexer import mask_protected, tokenize

_OPEN = "([{"
_CLOSE = ")]}"
_QUALIFIED_NAME = re.compile(r"[A-Za-z_][\w:]*\s*\Z")


@dataclass(frozen=True, slots=True)
class Launch:
    start: int  # first character of the kernel name
    end: int  # one past the closing parenthesis of the argument list
    replacement: str


def rewrite_launches(text: str) -> tuple[str, int]:
    """Return (text with every parsable launch rewritten, number rewritten)."""
    masked = mask_protected(text)
    launches = []
    search_from = 0
    while (chevrons := masked.find("<<<", search_from)) != -1:
        launch = _parse_launch(text, masked, chevrons)
        if launch is not None:
            launches.append(launch)
            search_from = launch.end
        else:
            search_from = chevrons + 3
    pieces, last = [], 0
    for launch in launches:
        pieces += [text[last : launch.start], launch.replacement]
        last = launch.end
    pieces.append(text[last:])
    return "".join(pieces), len(launches)


def _parse_launch(text: str, masked: str, chevrons: int) -> Launch | None:
    name_start = _kernel_start(masked, chevrons)
    if name_start is None:
        return None
    config_end = _find_top_level(masked, chevrons + 3, ">>>")
    if config_end is None:
        return None
    open_paren = _skip_space(masked, config_end + 3)
    if open_paren >= len(masked) or masked[open_paren] != "(":
        return None
    close_paren = _find_top_level(masked, open_paren + 1, ")")
    if close_paren is None:
        return None
    kernel = text[name_start:chevrons].strip()
    config = _split_top_level(text, masked, chevrons + 3, config_end)
    args = _split_top_level(text, masked, open_paren + 1, close_paren)
    if not 2 <= len(config) <= 4:
        return None
    config += ["0", "0"][: 4 - len(config)]
    grid, block, shmem, stream = config
    if "<" in kernel:  # a template-id holds commas: protect it from the macro
        kernel = f"({kernel})"
    parts = [kernel, _dim3(grid), _dim3(block), shmem, stream, *[a for a in args if a]]
    # A part ending in a `//` comment would swallow the separator or the closing parenthesis.
    parts = [part + "\n" if _ends_in_line_comment(part) else part for part in parts]
    return Launch(name_start, close_paren + 1, f"hipLaunchKernelGGL({', '.join(parts)})")


def _ends_in_line_comment(part: str) -> bool:
    if "//" not in part:
        return False
    end = len(part.rstrip())
    return any(
        token.kind == "comment" and token.text.startswith("//") and token.end >= end
        for token in tokenize(part)
    )


def _dim3(expression: str) -> str:
    return expression if expression.startswith("dim3") else f"dim3({expression})"


def _kernel_start(masked: str, chevrons: int) -> int | None:
    """Walk back from `<<<` over template arguments and a (qualified) name."""
    position = chevrons
    while position > 0 and masked[position - 1] in " \t\n":
        position -= 1
    if position > 0 and masked[position - 1] == ">":
        depth = 0
        while position > 0:
            position -= 1
            char = masked[position]
            if char == ">":
                depth += 1
            elif char == "<":
                depth -= 1
                if depth == 0:
                    break
        if depth != 0:
            return None
    match = _QUALIFIED_NAME.search(masked, max(0, position - 200), position)
    return match.start() if match else None


def _find_top_level(masked: str, start: int, target: str) -> int | None:
    """Offset of `target` at bracket depth 0, or None (unbalanced or missing)."""
    depth = 0
    position = start
    while position < len(masked):
        char = masked[position]
        if depth == 0 and masked.startswith(target, position):
            return position
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
        elif char == ";" and depth == 0:
            return None
        position += 1
    return None


def _split_top_level(text: str, masked: str, start: int, end: int) -> list[str]:
    """Split text[start:end] at commas outside (), [], {} and template <...>."""
    parts, depth, angle, part_start = [], 0, 0, start
    for position in range(start, end):
        char = masked[position]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif char == "<" and _looks_like_template(masked, position):
            angle += 1
        elif char == ">" and angle > 0:
            angle -= 1
        elif char == "," and depth == 0 and angle == 0:
            parts.append(text[part_start:position].strip())
            part_start = position + 1
    parts.append(text[part_start:end].strip())
    return parts


def _looks_like_template(masked: str, position: int) -> bool:
    # `a < b` has spaces by convention; `Foo<int>` has a name glued to the bracket.
    before = masked[position - 1] if position else " "
    after = masked[position + 1] if position + 1 < len(masked) else " "
    return (before.isalnum() or before == "_") and after not in " =<"


def _skip_space(masked: str, position: int) -> int:
    while position < len(masked) and masked[position] in " \t\n":
        position += 1
    return position


_SPACED_OPEN = re.compile(r"<<[ \t]+<(?!<)")
_SPACED_CLOSE = re.compile(r">>[ \t]+>")


def join_spaced_chevrons(text: str) -> tuple[str, int]:
    """`k<< <g, b >> >(a)` -> `k<<<g, b >>>(a)`: nvcc accepts the spaced form (editors write it),
    hip-clang does not. Only a pair within one statement is joined."""
    if _SPACED_OPEN.search(text) is None:  # `x << 2` is common; masking the file is not cheap
        return text, 0
    masked = mask_protected(text)
    spans: list[tuple[int, int]] = []
    for opening in _SPACED_OPEN.finditer(masked):
        closing = _SPACED_CLOSE.search(masked, opening.end())
        end_of_statement = masked.find(";", opening.end())
        if closing is None or (end_of_statement != -1 and closing.start() > end_of_statement):
            continue
        spans += [opening.span(), closing.span()]
    pieces, last = [], 0
    for start, end in sorted(spans):
        if start < last:
            continue
        pieces += [text[last:start], "<<<" if text[start] == "<" else ">>>"]
        last = end
    pieces.append(text[last:])
    return "".join(pieces), len(spans) // 2
