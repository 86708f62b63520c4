"""Triton's CUDA libdevice named in a kernel: `tl.extra.cuda.libdevice`.

Triton ships one libdevice wrapper per back end (triton/language/extra/cuda/libdevice.py calls
NVIDIA's `__nv_*` functions; triton/language/extra/hip/libdevice.py calls AMD's `__ocml_*`), and a
back-end-neutral `triton.language.extra.libdevice` that resolves to the one of the target being
compiled. A kernel that names the CUDA module calls `__nv_*` symbols the AMD back end cannot link:
the kernel does not compile for an AMD GPU. A module that also names the HIP wrapper or the neutral
one chooses between them (one side of a switch, or a fallback for older Tritons): info.

Only a call of an `__nv_*` function breaks the AMD build: the wrapper module itself is plain Python
in Triton's language tree (triton/language/extra/cuda/), which Triton's wheels carry beside the HIP
one. An import whose names the module never uses again (a copied header of unused imports) is info.

Only modules whose text holds `extra.cuda` are read (a substring test), then line by line.
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import RuleSet, Severity

GATE = "extra.cuda"
RULE = "triton-cuda-libdevice"
# `tl.extra.cuda.libdevice.rint(...)`, `triton.language.extra.cuda.libdevice`,
# `from triton.language.extra.cuda import libdevice`, `from triton.language.extra.cuda.libdevice
# import rint`; not in a comment.
_USE = re.compile(
    r"^(?P<code>[^#\n]*?)\b(?:tl|triton\.language|language)\.extra\.cuda\b(?P<rest>[\w.]*)",
    re.M,
)
# The module's other side: the HIP wrapper, or the neutral one (`extra.libdevice`, imported first
# with the CUDA one as an `except ModuleNotFoundError` fallback for older Tritons).
_OTHER_SIDE = re.compile(
    r"\bextra\.(?:hip|libdevice)\b|\bextra\s+import\s+[^\n]*\b(?:hip|libdevice)\b"
)
# What an import statement on the line binds: `from ...extra.cuda import libdevice as ld`,
# `from ...extra.cuda.libdevice import rint, tanh as th`, `import ...extra.cuda.libdevice as ld`
# (a plain `import a.b.c` binds `a`, used through the full dotted path that is matched itself).
_FROM_IMPORT = re.compile(r"^\s*from\s+[\w.]+\s+import\s+\(?(?P<names>[\w\s,]+?)\)?\s*(?:#.*)?$")
_IMPORT_AS = re.compile(r"^\s*import\s+[\w.]+\s+as\s+(?P<name>\w+)\s*(?:#.*)?$")
_COMMENT = re.compile(r"#[^\n]*")


def scan_libdevice(text: str, rules: RuleSet) -> list[Hit]:
    """Each line that names Triton's CUDA libdevice module: error, info where the module also
    names the HIP one."""
    rule = rules.by_id.get(RULE)
    if rule is None or GATE not in text:
        return []
    switch = _OTHER_SIDE.search(text) is not None
    severity: Severity = "info" if switch else rule.severity
    why = (
        "the module also names the HIP or the neutral libdevice: one side of a switch"
        if switch
        else "NVIDIA's __nv_* functions: the AMD back end cannot compile the kernel"
    )
    lines = text.splitlines()
    found = []
    for match in _USE.finditer(text):
        if match.group("code").count('"') % 2 or match.group("code").count("'") % 2:
            continue  # inside a string on that line
        line = text.count("\n", 0, match.start()) + 1
        column = len(match.group("code"))
        name = match.group(0)[column:].strip()
        bound = _bound_names(lines[line - 1])
        if not switch and bound and not _used(bound, lines, line):
            found.append(hit(line, column, rule, f"{name}  ({_UNUSED})", "info"))
            continue
        found.append(hit(line, column, rule, f"{name}  ({why})", severity))
    return found


_UNUSED = "imported, never used in this module: no __nv_* call is compiled; drop the import"


def _bound_names(line: str) -> list[str]:
    """The names an import statement on this line binds; [] for any other line."""
    match = _FROM_IMPORT.match(line)
    if match is not None:
        return [part.split()[-1] for part in match.group("names").split(",") if part.split()]
    match = _IMPORT_AS.match(line)
    return [match.group("name")] if match is not None else []


def _used(names: list[str], lines: list[str], skip: int) -> bool:
    """Whether any of the names appears as a word on another line, outside comments."""
    word = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")
    return any(
        word.search(_COMMENT.sub("", text))
        for number, text in enumerate(lines, start=1)
        if number != skip
    )
