"""Portability hazards no name table can fix: code that assumes a 32-lane warp.

AMD CDNA GPUs (MI100..MI300) execute 64-lane wavefronts; RDNA runs wave32 or wave64. Code that
hard-codes 32 (lane masks, lane arithmetic, `#define WARP_SIZE 32`) compiles under HIP but silently
computes the wrong thing, and inline PTX cannot be compiled for AMD at all (host-side asm can, so
only asm in device functions or spelling PTX is reported). Each rule is a regex run
over the code; the translator drops matches that start inside a comment or literal.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rocmkit.hipify.lexer import call_arguments


@dataclass(frozen=True, slots=True)
class HazardRule:
    code: str
    pattern: re.Pattern[str]
    message: str
    # If given, the rule runs only on text containing one of these: a substring test is much
    # cheaper than a pattern that does not start with a literal. A pattern that does is found as
    # fast as the substring, so it needs none.
    triggers: tuple[str, ...] = ()
    # The match may start inside an identifier: report it from the identifier's first character.
    word_start: bool = False
    # If given, a match is reported only when keep(code, start, end) says so.
    keep: Callable[[str, int, int], bool] | None = None


# PTX in an asm template: `mov.u32`, `ld.global`, `mma.sync`, `%laneid`, `.reg`, `exit;`.
# x86 (`rdtsc`, `movl %%eax`, `lock; xaddl`) and PowerPC (`lwsync`, `stwcx.`, `mftb`) never match.
_PTX = re.compile(
    r"\b(?:mov|ld|st|cvt|cvta|add|sub|mul|mad|fma|div|rem|min|max|abs|neg|and|or|xor|not|shl|shr"
    r"|set|setp|selp|slct|bfe|bfi|brev|bfind|clz|popc|prmt|shf|shfl|vote|bar|barrier|membar"
    r"|fence|atom|red|mma|wmma|ldmatrix|stmatrix|cp|mbarrier|tex|tld4|suld|sust|isspacep|lop3"
    r"|dp4a|dp2a|vabsdiff|match|redux|elect|griddepcontrol|wgmma|tcgen05|prefetch)"
    r"\.[a-z0-9]|%%?(?:laneid|warpid|nwarpid|smid|nsmid|gridid|lanemask_\w+|clock(?:64)?"
    r"|globaltimer\w*|tid|ntid|ctaid|nctaid|dynamic_smem_size)\b|\.(?:reg|pred|shared|global"
    r"|param|local|const)\b|\b(?:exit|trap|brkpt)\s*;"
)
_DEVICE_FUNCTION = re.compile(r"\b__(?:device|global)__\b")


def is_device_asm(code: str, start: int, end: int) -> bool:
    """Whether the asm statement at `start` (its `(` just before `end`) is device-side PTX:
    its template spells PTX, or it sits in a `__device__`/`__global__` function body. Host
    asm (RDTSC, x86/PowerPC atomics in boost headers) compiles for the host under hip-clang."""
    arguments = call_arguments(code, end)
    body = code[end : arguments[-1][1]] if arguments else code[end : end + 2000]
    if _PTX.search(body):
        return True
    declarations = list(_DEVICE_FUNCTION.finditer(code, max(0, start - 100_000), start))
    return bool(declarations) and _inside_body(code, declarations[-1].end(), start)


def _inside_body(code: str, declaration_end: int, position: int) -> bool:
    """Whether `position` lies inside the body that the declaration ending at
    `declaration_end` opens (a `;` first: it declared a variable or prototype, no body)."""
    depth, opened = 0, False
    for match in re.finditer(r"[{};]", code[declaration_end:position]):
        char = match.group()
        if char == ";" and not opened:
            return False
        if char == "{":
            depth, opened = depth + 1, True
        elif char == "}":
            depth -= 1
            if opened and depth == 0:
                return False
    return opened and depth > 0


# One preprocessor conditional line; a directive continued with `\` is rare around asm.
_BRANCH = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b([^\n]*)", re.MULTILINE)
# Macros hip-clang defines in every AMD compile (and the CUDA ones rocmkit turns into them): a
# branch selected by one of them is compiled for AMD.
# (not __HIP_PLATFORM_HCC__: removed in ROCm 6.0, see amd_branches.REMOVED)
_AMD_DEFINED = frozenset({"__HIP_PLATFORM_AMD__", "__HIPCC__", "__HIP__", "__CUDACC__"})
_TESTED = re.compile(r"\A(!?)\s*(?:defined\s*\(?\s*)?(\w+)\s*\)?\s*(?://.*|/\*.*)?\Z")


def ptx_fallback(code: str, start: int) -> str | None:
    """The directive of the branch holding the asm at `start` when its `#if` group has another
    branch (the project's own path for targets without PTX) and nothing says AMD compiles this
    one; None when the asm is unconditional, alone in its group, or surely compiled for AMD."""
    stack: list[list[tuple[str, str]]] = []  # open groups: their branches (keyword, condition)
    for keyword, condition in _branches_before(code, start):
        condition = condition.strip()
        if keyword.startswith("if"):
            stack.append([(keyword, condition)])
        elif keyword == "endif":
            if stack:
                stack.pop()
        elif stack:
            stack[-1].append((keyword, condition))
    if not stack:
        return None
    branches = stack[-1]
    if len(branches) == 1 and not _has_later_branch(code, start):
        return None
    if _compiled_for_amd(branches):
        return None
    keyword, condition = branches[-1]
    return f"#{keyword} {condition}".strip()


@functools.lru_cache(maxsize=4)
def _branches(code: str) -> tuple[tuple[int, int, str, str], ...]:
    """(start, end, keyword, condition) of each conditional directive of `code`, found once per
    file: a file with many asm statements asked the regex for them once per statement."""
    return tuple((m.start(), m.end(), m.group(1), m.group(2)) for m in _BRANCH.finditer(code))


def directive_before(code: str, offset: int) -> tuple[int, str] | None:
    """(line start, keyword) of the last conditional directive that starts before `offset`."""
    branches = _branches(code)
    index = bisect.bisect_left(branches, (offset,))
    return (branches[index - 1][0], branches[index - 1][2]) if index else None


def _branches_before(code: str, start: int) -> list[tuple[str, str]]:
    """(keyword, condition) of the directives that end before `start`, as a search that stops
    at `start` sees them (a directive line holding `start` itself is read only up to it)."""
    line_start, line_end = code.rfind("\n", 0, start) + 1, code.find("\n", start)
    if code.find("#", line_start, line_end % (len(code) + 1)) >= 0:  # rare: `start`'s line
        return [(m.group(1), m.group(2)) for m in _BRANCH.finditer(code, 0, start)]
    branches = _branches(code)
    index = bisect.bisect_left(branches, (start,))
    return [(keyword, condition) for _, _, keyword, condition in branches[:index]]


def _has_later_branch(code: str, start: int) -> bool:
    """Whether the innermost group open at `start` has an `#elif`/`#else` after it."""
    depth = 0
    branches = _branches(code)
    for _, _, keyword, _ in branches[bisect.bisect_left(branches, (start,)) :]:
        if keyword.startswith("if"):
            depth += 1
        elif keyword == "endif":
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0:
            return True
    return False


def _compiled_for_amd(branches: list[tuple[str, str]]) -> bool:
    """Whether the last branch is selected by a macro every AMD compile defines (`#ifdef
    __HIP_PLATFORM_AMD__`), or is the `#else` of a test that such a macro is undefined."""
    keyword, condition = branches[-1]
    if keyword == "else":
        keyword, condition = branches[0]
        negated = keyword == "ifndef" or condition.startswith("!")
        return len(branches) == 2 and negated and _tested(condition) in _AMD_DEFINED
    if keyword == "ifndef" or condition.startswith("!"):
        return False
    return _tested(condition) in _AMD_DEFINED


def _tested(condition: str) -> str | None:
    match = _TESTED.match(condition)
    return match.group(2) if match else None


_WARP_SIZE_MESSAGE = (
    "warp size written as the literal 32; AMD CDNA wavefronts are 64 lanes (use warpSize)"
)
# Not the prefix of a longer literal: `0xffffffffffffffff` and `~0ull` are 64-bit masks (right on AMD).
_FULL_MASK = r"(?:0x[fF]{8}[uU]?[lL]{0,2}|~0[uU]?)(?![\w])"

RULES: tuple[HazardRule, ...] = (
    HazardRule(
        "warp-full-mask",
        re.compile(
            rf"__(?:shfl(?:_up|_down|_xor)?|ballot|any|all|match_any|match_all|reduce_\w+)_sync"
            rf"\s*\(\s*{_FULL_MASK}"
        ),
        "32-bit full lane mask assumes a 32-lane warp; AMD wavefronts are 64 lanes "
        "(use a 64-bit mask such as __activemask() or rewrite with warpSize)",
    ),
    HazardRule(
        "warp-ballot-width",
        re.compile(r"__(?:ballot(?:_sync)?|activemask)\s*\("),
        "the lane mask is 64 bits on AMD; storing it in a 32-bit integer drops lanes 32-63",
    ),
    *(
        HazardRule(
            "warp-lane-arithmetic",
            # One regex per operand, so each starts with a literal the engine can search for fast.
            re.compile(rf"{operand}\s*(?:&\s*31|%\s*32|>>\s*5|/\s*32)\b"),
            "lane/warp index computed with 32; use warpSize (64 on CDNA) instead",
        )
        for operand in (r"threadIdx\.[xyz]", r"lane\w*", "tid")
    ),
    # Each pattern starts with a literal or a small character set: Python's regex engine then
    # jumps between candidate positions instead of trying the pattern at every character.
    HazardRule(
        "warp-size-literal",
        re.compile(r"\#[ \t]*(?i:define[ \t]+\w*warp\w*[ \t]+32\b)"),
        _WARP_SIZE_MESSAGE,
    ),
    HazardRule(
        "warp-size-literal",
        re.compile(r"[wW](?i:arp_?size\w*\s*[={]\s*32\b)"),
        _WARP_SIZE_MESSAGE,
        ("arp", "ARP"),
        word_start=True,  # reported from the start of `kWarpSize`, not of `Warp`
    ),
    *(
        HazardRule(
            "inline-ptx",
            re.compile(rf"{keyword}\s*(?:volatile\s*|__volatile__\s*)?\("),
            "inline assembly (PTX) cannot be compiled for AMD GPUs; replace it with HIP intrinsics",
            keep=is_device_asm,
        )
        for keyword in ("asm", "__asm__")
    ),
)


def find_hazards(code: str) -> Iterator[tuple[int, HazardRule, str]]:
    """Yield (offset, rule, matched text) for every hazard; the caller drops those in comments."""
    for rule in RULES:
        if rule.triggers and not any(trigger in code for trigger in rule.triggers):
            continue
        for match in rule.pattern.finditer(code):
            start = match.start()
            if rule.word_start:
                while start and (code[start - 1].isalnum() or code[start - 1] == "_"):
                    start -= 1
                yield start, rule, code[start : match.end()]
            elif start and (code[start - 1].isalnum() or code[start - 1] == "_"):
                continue  # inside a longer identifier
            elif rule.keep is not None and not rule.keep(code, start, match.end()):
                continue
            else:
                yield start, rule, match.group()
