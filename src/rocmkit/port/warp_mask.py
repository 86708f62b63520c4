"""Lane masks of the warp sync intrinsics whose C++ type is 32 bits.

HIP declares `__shfl_sync`, `__shfl_up_sync`, `__shfl_down_sync`, `__shfl_xor_sync`, `__ballot_sync`,
`__any_sync`, `__all_sync`, `__match_any_sync` and `__match_all_sync` as templates over the mask type
with `static_assert(is_integral<MaskT> && sizeof(MaskT) == 8, "The mask must be a 64-bit integer.
...")` (ROCm/clr hipamd/include/hip/amd_detail/amd_warp_sync_functions.h, tag rocm-6.2.1: opt-in
with HIP_ENABLE_WARP_SYNC_BUILTINS in 6.2, "enabled unconditionally in ROCm 6.3"). A mask of a
32-bit type (CUDA's `unsigned` mask) therefore stops the build under hipcc, and names only half of
a 64-lane CDNA wavefront. hipify's own rule already reports a full-mask literal written in the call;
this follows a named mask (`constexpr u32 HALF_MASK = FULL_MASK >> 16;`) to its declaration and
decides its type by C++'s rules ([lex.icon]: an unsuffixed hex literal that fits 32 bits is
`unsigned int`; the shift's type is its promoted left operand). A mask whose type it cannot
decide (a macro parameter, a call, an unknown typedef) is left alone.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_SYNC_CALL = re.compile(
    r"\b__(?:shfl(?:_up|_down|_xor)?|ballot|any|all|match_any|match_all)_sync\s*\(\s*"
)
# The literal hipify's warp-full-mask rule already reports in the call itself.
_INLINE_FULL_MASK = re.compile(r"(?:0x[fF]{8}[uU]?[lL]{0,2}|~0[uU]?)\s*,")
_BITS = {
    "int": 32,
    "signed": 32,
    "unsigned": 32,
    "unsigned int": 32,
    "signed int": 32,
    "uint32_t": 32,
    "int32_t": 32,
    "std::uint32_t": 32,
    "std::int32_t": 32,
    # LP64 (Linux, where ROCm runs): long is 64 bits.
    "long": 64,
    "unsigned long": 64,
    "long long": 64,
    "unsigned long long": 64,
    "long int": 64,
    "unsigned long int": 64,
    "long long int": 64,
    "unsigned long long int": 64,
    "uint64_t": 64,
    "int64_t": 64,
    "std::uint64_t": 64,
    "std::int64_t": 64,
    "size_t": 64,
}
_TYPEDEF = re.compile(
    r"\b(?:typedef\s+([\w:]+(?:\s+[\w:]+)*?)\s+(\w+)\s*;|using\s+(\w+)\s*=\s*([\w:]+(?:\s+[\w:]+)*?)\s*;)"
)
_QUALIFIERS = re.compile(r"\b(?:const|constexpr|static|volatile|register|inline|__\w+__)(?!\w)")
# Words that precede a use of a name, not its declaration (`return MASK;`).
_KEYWORDS = frozenset({"return", "else", "case", "throw", "sizeof", "do", "goto", "co_return"})
_LITERAL = re.compile(r"(0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*)([uUlL]*)\Z")
# C-style cast `(unsigned)x` and static_cast<unsigned>(x); a functional cast `uint32_t(x)`.
_CAST = re.compile(r"(?:static_cast<\s*([\w:\s]+?)\s*>\s*\(|\(\s*([\w:\s]+?)\s*\)\s*(?=[\w(~+-]))")
_FUNCTIONAL_CAST = re.compile(r"([A-Za-z_][\w:]*)\s*(\(.*\)|\{.*\})", re.S)
# Bitwise and additive operators whose result has the operands' common type ([expr.arith.conv]).
_BINARY = frozenset("|&^+")
# A function-like macro: `#define NAME(a, b)` (its parameters stand for what each use passes).
_FUNCTION_MACRO = re.compile(r"[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)")


@dataclass(frozen=True, slots=True)
class NarrowMask:
    """A sync call whose mask is 32 bits: where the call is, the mask's text, and the lines of the
    declarations that made it 32 bits (where the fix goes)."""

    line: int
    column: int
    mask: str
    declarations: tuple[int, ...]


def narrow_masks(text: str) -> list[NarrowMask]:
    """Sync intrinsic calls in one CUDA source whose mask argument has a 32-bit type."""
    if "_sync" not in text:
        return []
    types = _typedefs(text)
    found = []
    for call in _SYNC_CALL.finditer(text):
        if _INLINE_FULL_MASK.match(text, call.end()):
            continue
        mask = _first_argument(text, call.end())
        if mask is None:
            continue
        decided = _bits(mask, text, call.start(), types, depth=0)
        if decided is None or decided[0] != 32:
            continue
        line = text.count("\n", 0, call.start()) + 1
        column = call.start() - text.rfind("\n", 0, call.start())
        found.append(NarrowMask(line, column, mask, decided[1]))
    return found


def _first_argument(text: str, start: int) -> str | None:
    depth = 0
    for index in range(start, min(len(text), start + 200)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif char == "," and depth == 0:
            return text[start:index].strip()
    return None


def _typedefs(text: str) -> dict[str, int]:
    types = dict(_BITS)
    for match in _TYPEDEF.finditer(text):
        base, name = (match.group(1), match.group(2)) if match.group(2) else match.group(4, 3)
        bits = types.get(" ".join(base.split()))
        if bits is not None and types.get(name, bits) == bits:
            types[name] = bits
        else:
            types[name] = 0  # unknown or defined twice with different widths: undecided
    return types


Decided = tuple[int, tuple[int, ...]]


def _bits(expr: str, text: str, before: int, types: dict[str, int], depth: int) -> Decided | None:
    """(bits, declaration lines) of an expression's type, or None when undecided."""
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")") and _balanced(expr[1:-1]):
        expr = expr[1:-1].strip()
    if depth > 4 or not expr:
        return None
    cast = _CAST.match(expr)
    if cast:
        bits = types.get(" ".join((cast.group(1) or cast.group(2)).split()))
        return (bits, ()) if bits else None
    functional = _FUNCTIONAL_CAST.fullmatch(expr)
    if functional and types.get(functional.group(1)) and _balanced(functional.group(2)[1:-1]):
        return types[functional.group(1)], ()  # uint32_t(-1), uint32_t{~0u}: [expr.type.conv]
    operands = _split_binary(expr)
    if operands is not None:
        return _common_type([_bits(o, text, before, types, depth + 1) for o in operands])
    if expr[0] in "~-+":
        return _bits(expr[1:], text, before, types, depth + 1)  # [expr.unary.op]: promoted operand
    shift = re.fullmatch(r"(.+?)\s*(?:<<|>>)\s*[\w()]+", expr)
    if shift:
        return _bits(shift.group(1), text, before, types, depth + 1)
    literal = _LITERAL.match(expr)
    if literal:
        return _literal_bits(*literal.groups())
    if re.fullmatch(r"[A-Za-z_]\w*", expr):
        return _named(expr, text, before, types, depth)
    return None


def _balanced(inner: str) -> bool:
    depth = 0
    for char in inner:
        depth += char == "("
        depth -= char == ")"
        if depth < 0:
            return False
    return depth == 0


def _literal_bits(digits: str, suffix: str) -> Decided | None:
    """[lex.icon]: the first of int, unsigned int (hex/octal/binary only), long... that holds it."""
    value = int(digits.replace("'", ""), 0) if digits[:2].lower() in ("0x", "0b") else None
    if value is None:
        value = int(
            digits.replace("'", ""), 8 if digits.startswith("0") and len(digits) > 1 else 10
        )
    if "l" in suffix.lower():
        return 64, ()
    unsigned_ok = "u" in suffix.lower() or not digits.isdigit() or digits.startswith("0")
    limit = 0xFFFFFFFF if unsigned_ok else 0x7FFFFFFF
    return (32, ()) if value <= limit else (64, ())


@functools.lru_cache(maxsize=8)
def _defines(text: str, name: str) -> list[re.Match[str]]:
    return list(re.finditer(rf"^[ \t]*#[ \t]*define[ \t]+{name}[ \t]+(.+)$", text, re.M))


@functools.lru_cache(maxsize=8)
def _declarations(text: str, name: str) -> list[re.Match[str]]:
    """Every `TYPE... name =|{|,|)|;` in the file, once per name (a file may call hundreds of
    times with the same mask)."""
    found = re.finditer(rf"\b((?:[\w:]+\s+)*?[\w:]+)\s+{name}\s*(=|\{{|,|\)|;)", text)
    return [m for m in found if m.group(1).split()[-1] not in _KEYWORDS]


def _named(name: str, text: str, before: int, types: dict[str, int], depth: int) -> Decided | None:
    """The type of a name from its last declaration (or #define) before the use; a parameter of
    the function-like macro the use sits in has the type of what every use of the macro passes."""
    macro = _macro_around(text, before)
    if macro is not None and name in macro[1]:
        return _through_macro_uses(macro, macro[1].index(name), text, types, depth)
    define = _defines(text, name)
    declared = [m for m in _declarations(text, name) if m.end() <= before]
    if define and declared:
        return None
    if define:
        if len({m.group(1).strip() for m in define}) > 1:
            return None  # one spelling per vendor branch: the project's own switch
        match = define[0]
        value = match.group(1).split("//")[0].strip()
        result = _bits(value, text, match.start(), types, depth + 1)
        return _with_line(result, text, match.start())
    if not declared:
        return None
    match = declared[-1]
    words = _QUALIFIERS.sub(" ", match.group(1)).split()
    spelled = next(
        (" ".join(words[i:]) for i in range(len(words)) if " ".join(words[i:]) in types), ""
    )
    if words[-1:] == ["auto"] and match.group(2) == "=":
        value = _statement_value(text, match.end())
        result = _bits(value, text, match.start(), types, depth + 1) if value else None
        return _with_line(result, text, match.start())
    bits = types.get(spelled)
    if not bits:
        return None
    declaration = text.count("\n", 0, match.start(1)) + 1
    if match.group(2) == "=":
        value = _statement_value(text, match.end())
        inner = _bits(value, text, match.start(), types, depth + 1) if value else None
        if inner is not None and inner[0] == bits:
            return bits, (declaration, *inner[1])
    return bits, (declaration,)


def _statement_value(text: str, start: int) -> str | None:
    end = text.find(";", start)
    return text[start:end].strip() if 0 <= end - start < 200 else None


def _with_line(result: Decided | None, text: str, position: int) -> Decided | None:
    if result is None:
        return None
    return result[0], (text.count("\n", 0, position) + 1, *result[1])


def _split_binary(expr: str) -> list[str] | None:
    """The operands of a top-level `|`, `&`, `^` or binary `+` (not `&&`/`||`), or None."""
    depth, start = 0, 0
    parts: list[str] = []
    for index, char in enumerate(expr):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and char in _BINARY and index > start:
            pair = expr[index - 1 : index + 2]
            if "&&" in pair or "||" in pair or "++" in pair:
                return None  # a logical or increment operator: not an integer mask
            if expr[index - 1] in "|&^+(,":
                continue  # a unary operator after a binary one
            parts.append(expr[start:index])
            start = index + 1
    if not parts:
        return None
    return [*parts, expr[start:]]


def _common_type(decided: list[Decided | None]) -> Decided | None:
    """[expr.arith.conv] for integer operands: the wider type (each promoted to at least int)."""
    if any(d is None for d in decided):
        return None
    known = [d for d in decided if d is not None]
    bits = max(d[0] for d in known)
    return bits, tuple(line for d in known if d[0] == bits for line in d[1])


def _macro_around(text: str, position: int) -> tuple[str, list[str]] | None:
    """(name, parameters) of the function-like macro whose (continued) body holds `position`."""
    start = text.rfind("\n", 0, position) + 1
    while True:
        match = _FUNCTION_MACRO.match(text, start)
        if match is not None:
            return match.group(1), [p.strip() for p in match.group(2).split(",")]
        if start == 0:
            return None
        above = text.rfind("\n", 0, start - 1) + 1
        if not text[above : start - 1].rstrip().endswith("\\"):
            return None
        start = above


def _through_macro_uses(
    macro: tuple[str, list[str]], index: int, text: str, types: dict[str, int], depth: int
) -> Decided | None:
    """The type every use of the macro passes as its `index`th argument, when all agree."""
    results = []
    for use in re.finditer(rf"\b{macro[0]}\s*\(", text):
        line_start = text.rfind("\n", 0, use.start()) + 1
        if _FUNCTION_MACRO.match(text, line_start) and "define" in text[line_start : use.start()]:
            continue  # the definition itself
        arguments = _arguments(text, use.end())
        if arguments is None or len(arguments) <= index:
            return None
        results.append(_bits(arguments[index], text, use.start(), types, depth + 1))
    if not results or any(r is None for r in results):
        return None
    widths = {r[0] for r in results if r is not None}
    if len(widths) != 1:
        return None
    return widths.pop(), tuple(sorted({line for r in results if r is not None for line in r[1]}))


def _arguments(text: str, start: int) -> list[str] | None:
    """The comma-separated arguments of a call whose `(` ends just before `start`."""
    depth, begin = 0, start
    found: list[str] = []
    for index in range(start, min(len(text), start + 2000)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return [*found, text[begin:index].strip()]
            depth -= 1
        elif char == "," and depth == 0:
            found.append(text[begin:index].strip())
            begin = index + 1
    return None
