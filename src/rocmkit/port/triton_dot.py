"""Triton's tl.dot asked for TF32 by name, which the AMD back end refuses outside CDNA3.

Triton's `tl.dot(a, b, input_precision=...)` (its docstring, triton/language/core.py: "Available
options for nvidia: "tf32", "tf32x3", "ieee" ... Available options for amd: "ieee", (CDNA3 only)
"tf32"") checks the name against the back end's allowed list before anything else
(semantic.py: `assert input_precision.lower() in options.allowed_dot_input_precisions`), and the
AMD back end adds "tf32" to that list only for gfx942 (backends/amd/compiler.py: "Enable XF32
(TF32) for CDNA3 GPUs"). So a kernel compiled with input_precision "tf32" (or "tf32x3") fails to
compile on MI200 (gfx90a), MI350 (gfx950) and every Radeon GPU; the deprecated `allow_tf32=True`
falls back to "ieee" where TF32 is not allowed, and is left alone.

The finding is the string where it is written: in the call, in a conditional expression given
there, or in what a name given there holds (an assignment anywhere in the module, or a keyword
argument of the same name: a kernel's `PREC: tl.constexpr` is launched with `PREC=PREC`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rocmkit.port.build_flags import value_leaves
from rocmkit.port.whole_tree import call_name, walk

RULE = "triton-tf32-dot"
TRIGGER = "input_precision"
_TF32 = frozenset({"tf32", "tf32x3"})


def tf32_precisions(tree: ast.AST) -> list[ast.Constant]:
    """The "tf32"/"tf32x3" strings that reach a dot's input_precision, in source order."""
    values: dict[str, list[ast.expr]] = {}
    sinks: list[ast.expr] = []
    for node in walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg is None:
                    continue
                values.setdefault(keyword.arg, []).append(keyword.value)
                if keyword.arg == TRIGGER and call_name(node.func) == "dot":
                    sinks.append(keyword.value)
    found: dict[int, ast.Constant] = {}
    for constant in _strings(sinks, values):
        if constant.value in _TF32:
            found[id(constant)] = constant
    return sorted(found.values(), key=lambda c: (c.lineno, c.col_offset))


def _strings(sinks: list[ast.expr], values: dict[str, list[ast.expr]]) -> Iterator[ast.Constant]:
    """The strings the sinks are made of (build_flags.value_leaves: conditionals, lists, `+`),
    through what the names among them hold."""
    stack, seen = list(sinks), set()
    while stack:
        for node in value_leaves(stack.pop()):
            if isinstance(node, ast.Name) and node.id not in seen:
                seen.add(node.id)
                stack.extend(values.get(node.id, ()))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield node
