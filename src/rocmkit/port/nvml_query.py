"""NVML findings at the query, not the import.

Importing an NVML binding loads nothing: pynvml loads libnvidia-ml in `nvmlInit` (NVML API
reference: nvmlInit_v2 must precede every query), and nvitop's `Device` initialises NVML on its
first query (`Device.all()`, `Device.count()`, `Device(index)`). What an AMD machine loses is
the feature at the call, which may sit hundreds of lines below the import, under its own test
(`if torch.cuda.is_available(): Device.all()`): the finding goes where the project calls
through a name a module-level import bound. An import inside a function runs where the query
runs, and one with no call in the module, stay where they are.
"""

from __future__ import annotations

import ast

from rocmkit.port.findings import Hit, hit

_CHECK = "nvml-call"


def move_to_queries(tree: ast.Module, hits: list[Hit]) -> list[Hit]:
    """`hits` with each NVML import finding replaced by findings at the calls through the
    names that import bound (the import's line is kept when nothing calls them)."""
    at_import = {
        h.line: h
        for h in hits
        if h.rule.check == _CHECK and h.severity != "info" and h.evidence.startswith("import ")
    }
    if not at_import:
        return hits
    bound: dict[str, int] = {}  # name -> line of the import that bound it
    for statement in _module_level(tree):
        if isinstance(statement, (ast.Import, ast.ImportFrom)) and statement.lineno in at_import:
            for alias in statement.names:
                name = alias.asname or alias.name.split(".")[0]
                bound.setdefault(name, statement.lineno)
    calls: dict[int, list[tuple[ast.Call, str]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            root, dotted = _root(node.func)
            if root in bound and node.lineno != bound[root]:
                calls.setdefault(bound[root], []).append((node, dotted))
    moved = []
    for h in hits:
        found = calls.get(h.line) if h is at_import.get(h.line) else None
        if not found:
            moved.append(h)
            continue
        for call, dotted in sorted(found, key=lambda c: (c[0].lineno, c[0].col_offset)):
            why = f"{dotted}() queries NVML (imported at line {h.line}): NVML sees no AMD GPU"
            moved.append(hit(call.lineno, call.col_offset + 1, h.rule, why, h.severity))
    return moved


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """Statements outside functions and classes (inside top-level if/try blocks too)."""
    found, stack = [], list(tree.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            stack += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            stack += [s for handler in getattr(node, "handlers", []) for s in handler.body]
    return found


def _root(func: ast.expr) -> tuple[str, str]:
    """(the name a call is made through, its dotted spelling): `Device.all` -> ("Device", ...)."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return "", ""
    return func.id, ".".join([func.id, *reversed(parts)])
