"""How a Python file reaches an NVIDIA-only product's module (TensorRT, TensorRT-LLM), beyond an
`import` statement: the facts the tensorrt rule's severity is a function of.

NVIDIA's TensorRT support matrix lists NVIDIA GPUs only and TensorRT-LLM ships CUDA wheels only, so
what decides a finding's weight is which path of the project needs the module: the main import path
(error), a feature the user opts into with no fallback (warn), or a probe that does without it
(info)."""

from __future__ import annotations

import ast

# Calls that import the module named by their first argument and raise (importlib.import_module,
# __import__) or hand back a placeholder that raises on first use (optional_import-style helpers
# in the importlib mould): neither falls back, so inside a function they are that function's import.
_IMPORT_CALL_SUFFIXES = ("import_module", "optional_import", "__import__")

# Names that carry only a module's version string: importing them reports the version (an
# environment report), it does not use the product.
VERSION_NAMES = frozenset({"__version__", "version", "VERSION"})


def import_call_module(statement: ast.AST) -> str | None:
    """The module an assignment or expression statement imports by a call
    (`trt, ok = optional_import("tensorrt")`, `importlib.import_module("tensorrt_llm")`)."""
    value = statement.value if isinstance(statement, (ast.Assign, ast.Expr)) else None
    if not isinstance(value, ast.Call) or not value.args:
        return None
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    first = value.args[0]
    if name.endswith(_IMPORT_CALL_SUFFIXES) and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) and first.value else None
    return None


def imports_only_version(node: ast.AST) -> bool:
    """`from tensorrt import __version__`: a version report, not a use of the product."""
    return isinstance(node, ast.ImportFrom) and all(a.name in VERSION_NAMES for a in node.names)
