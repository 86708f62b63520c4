"""A table keyed by NVIDIA compute capabilities, looked up with the device's own capability.

On a ROCm torch, `torch.cuda.get_device_capability()` and `get_device_properties(d).major/.minor`
are the gfx version (gfx942 -> 9.4, gfx90a -> 9.0, RDNA3 -> 11.0; PyTorch's HIP notes), not an SM
number: a lookup in a table whose keys are NVIDIA capabilities ("8.0", "9.0", (8, 6)) either
misses (KeyError, or the `not in` branch that raises) or lands on the NVIDIA GPU that shares the
number (gfx90a's 9.0 gets Hopper's 227 KB of shared memory; AMD GPUs have 64 KB of LDS).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

_KEY = re.compile(r"^\d{1,2}\.\d$")
# A quick text test before parsing: a dict entry keyed like "8.0": or (8, 0): (after `{` or `,`,
# not `if cc < (9, 0):`)
TEXT_HINT = re.compile(r"""[{,]\s*(?:["']\d{1,2}\.\d["']|\(\s*\d{1,2}\s*,\s*\d\s*\))\s*:""")
_READS = ("get_device_capability", "get_device_properties")
_ROCM_AWARE = ("version.hip", "is_rocm", "is_hip", "gcnArchName", "ROCM", "rocm")


def _capability_key(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(_KEY.match(node.value))
    return (
        isinstance(node, ast.Tuple)
        and len(node.elts) == 2
        and all(isinstance(e, ast.Constant) and isinstance(e.value, int) for e in node.elts)
    )


def _tables(tree: ast.Module) -> set[str]:
    """Names bound to a dict literal of two or more entries, every key a capability."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            keys = node.value.keys
            if len(keys) >= 2 and all(k is not None and _capability_key(k) for k in keys):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def lookups(text: str, tree: ast.Module) -> Iterator[tuple[ast.expr, str]]:
    """(node, table name) of each `x in TABLE`, `TABLE[x]`, `TABLE.get(x)` in a module that reads
    the device capability and never looks at ROCm's side."""
    if not any(r in text for r in _READS) or any(w in text for w in _ROCM_AWARE):
        return
    tables = _tables(tree)
    if not tables:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(o, (ast.In, ast.NotIn)) for o in node.ops
        ):
            name = next((c.id for c in node.comparators if isinstance(c, ast.Name)), "")
            if name in tables:
                yield node, name
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            if node.value.id in tables and isinstance(node.ctx, ast.Load):
                yield node, node.value.id
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in tables
        ):
            yield node, node.func.value.id
