"""What a capability-gated branch selects, read one step past the branch itself.

A branch often names what it turns on only through a name bound elsewhere in the module:
`allowed += DTYPE_F8` where `DTYPE_F8 = [torch.float8_e4m3fn, ...]`. Such names are followed
here, one step and only for the names a capability branch reads, so that capability_features
can grade the branch by what it selects. A capability tested for membership (`major in {7, 8}`)
is evaluated for every AMD target as a comparison is.
"""

from __future__ import annotations

import ast
import re

from rocmkit.port import capability_features as features


def followed(text: str, statements: list[ast.stmt]) -> list[str]:
    """The values (source text) the module binds to the names a branch reads, one step:
    `DTYPE_F8 = [torch.float8_e4m3fn, torch.float8_e5m2]` for a branch that reads DTYPE_F8."""
    names = {
        node.id
        for statement in statements
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    names = {n for n in names if n in text}
    if not names:
        return []
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    # `NAME = value` or `NAME: type = value` at the start of a line (not `NAME == ...`)
    bound = rf"^[ \t]*(?:{alternatives})[ \t]*(?::[^=\n]*)?=(?!=)[ \t]*([^\n]+)"
    return [m.group(1) for m in re.finditer(bound, text, re.MULTILINE)]


def membership_taken(compare: ast.Compare) -> list[str] | None:
    """AMD targets that pass `major in {7, 8}` (or fail `major not in ...`); None unless the
    comparison tests membership in a literal of small ints (majors)."""
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], (ast.In, ast.NotIn)):
        return None
    members = compare.comparators[0]
    if not isinstance(members, (ast.Set, ast.Tuple, ast.List)) or not members.elts:
        return None
    majors = set()
    for item in members.elts:
        if not (isinstance(item, ast.Constant) and type(item.value) is int and item.value < 20):
            return None
        majors.add(item.value)
    inside = isinstance(compare.ops[0], ast.In)
    return [
        gfx
        for gfx, (major, _minor) in features.AMD_CAPABILITIES.items()
        if (major in majors) == inside
    ]
