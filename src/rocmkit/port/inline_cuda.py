"""CUDA C++ written in a Python string and compiled by `torch.utils.cpp_extension.load_inline`.

`load_inline(name, cpp_sources, cuda_sources=...)` writes `cuda_sources` (a string or a list of
strings) to a `.cu` file and builds it as a CUDA extension at run time (PyTorch's
`torch.utils.cpp_extension` documentation); on a ROCm build of torch the same call hipifies that
file and compiles it with hipcc. So the text is a CUDA source like any `.cu` file of the project,
with the same hazards (inline PTX, 32-lane warp assumptions, `__CUDA_ARCH__` guards, headers HIP
lacks): it is read with cpp_scan's reader, and each finding is placed at its line in the `.py`
file. The strings are those given in the call, or a module-level name bound once to a string (or
a list or tuple of strings) that the call passes (`cuda_sources=_CUDA_SRC`,
`cuda_sources=[KERNEL]`). A string whose source spans other lines than its value (escaped
newlines) is placed at its first line.
"""

from __future__ import annotations

import ast

from rocmkit.port.cpp_scan import scan_cuda_source
from rocmkit.port.findings import Hit
from rocmkit.port.rules import RuleSet
from rocmkit.port.whole_tree import call_name, module_statements

GATE = "load_inline"
# load_inline(name, cpp_sources, cuda_sources=None, ...): its third positional parameter
_CUDA_SOURCES_POSITION = 2


def inline_cuda_hits(tree: ast.Module, rules: RuleSet) -> list[Hit]:
    """The CUDA hazards of every string a load_inline call in `tree` compiles as CUDA."""
    bound = _module_strings(tree)
    hits: list[Hit] = []
    seen: set[int] = set()  # a string two calls compile is read once
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and call_name(node.func) == GATE):
            continue
        given = next((k.value for k in node.keywords if k.arg == "cuda_sources"), None)
        if given is None and len(node.args) > _CUDA_SOURCES_POSITION:
            given = node.args[_CUDA_SOURCES_POSITION]
        for source in _strings(given, bound):
            if id(source) in seen:
                continue
            seen.add(id(source))
            hits += _placed(source, scan_cuda_source(str(source.value), rules))
    return hits


def _module_strings(tree: ast.Module) -> dict[str, list[ast.Constant]]:
    """Module-level names bound once to a string, or to a list or tuple of strings."""
    bound: dict[str, list[ast.Constant]] = {}
    counts: dict[str, int] = {}
    for statement in module_statements(tree):
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                counts[target.id] = counts.get(target.id, 0) + 1
                strings = _literal_strings(value)
                if strings:
                    bound[target.id] = strings
    return {name: strings for name, strings in bound.items() if counts[name] == 1}


def _literal_strings(value: ast.expr) -> list[ast.Constant]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return [value]
    if isinstance(value, (ast.List, ast.Tuple)):
        items = [_literal_strings(e) for e in value.elts]
        if items and all(items):
            return [s for found in items for s in found]
    return []


def _strings(given: ast.expr | None, bound: dict[str, list[ast.Constant]]) -> list[ast.Constant]:
    """The string constants a cuda_sources argument holds, through module-level names."""
    if given is None:
        return []
    if isinstance(given, ast.Name):
        return bound.get(given.id, [])
    if isinstance(given, (ast.List, ast.Tuple)):
        return [s for e in given.elts for s in _strings(e, bound)]
    return _literal_strings(given)


def _placed(source: ast.Constant, hits: list[Hit]) -> list[Hit]:
    """The hits of a string's text, at their lines of the Python file."""
    value = str(source.value)
    end = source.end_lineno or source.lineno
    if end - source.lineno == value.count("\n"):
        return [h._replace(line=source.lineno + h.line - 1) for h in hits]
    return [h._replace(line=source.lineno, column=source.col_offset + 1) for h in hits]
