"""Jupyter notebooks (.ipynb): the code cells are scanned as Python, IPython's `!command` lines,
its `%pip`/`%conda` magics and `%%bash`/`%%sh` cells as shell, each finding at the line of the raw
JSON file that holds it. What a cell installs (`%pip install -U "jax[cuda]"`) is checked as a
shell script's install is: IPython runs %pip/%conda in the kernel's own environment ("%pip
install" installs into the running kernel, IPython's magics reference), so it is what the
notebook runs with on whatever machine runs it.

A notebook is JSON (nbformat 4: https://nbformat.readthedocs.io/en/latest/format_description.html):
`cells`, each with `cell_type` and `source`, a list of lines (or one string). Jupyter writes each
element of that list on its own line of the file, so a cell line is found again as the JSON
string it was written as; a cell whose lines cannot be found that way is reported at the line
where its source starts.

A notebook that runs only on Google Colab is saved by Colab (`metadata.colab`) and imports Colab's
runtime module (`google.colab`, which exists only there) unguarded, at a cell's top level, so it
stops at that import anywhere else. Colab's GPU runtimes are NVIDIA GPUs only (T4, L4, A100, H100;
otherwise TPUs and CPUs): what such a notebook installs or runs for its GPU is what Colab's machine
needs, and no ROCm user runs it: its findings are info, saying so. A Colab notebook without that
import (one that also tells users to run it locally) is scanned as any other.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable

from rocmkit.port.findings import Hit, demoted
from rocmkit.port.rules import RuleSet

_SHELL_CELL = re.compile(r"%%(?:bash|sh|script\s+(?:ba)?sh)\b")
_MAGIC = re.compile(r"^(\s*)(!|%)(.*)$")
_INSTALL_MAGIC = re.compile(r"(?:pip|conda|mamba)\s")

Scanner = Callable[[str, RuleSet], list[Hit]]


def scan_notebook(text: str, rules: RuleSet, python: Scanner, shell: Scanner) -> list[Hit]:
    """Hits of the notebook's code cells, at the raw file's lines (see the module doc)."""
    try:
        document = json.loads(text)
    except ValueError:
        return []
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        return []
    metadata = document.get("metadata")
    colab = isinstance(metadata, dict) and isinstance(metadata.get("colab"), dict)
    colab_only = False
    raw: dict[str, list[int]] = {}  # a raw line, stripped of its indent and comma -> its indexes
    for index, line in enumerate(text.splitlines()):
        raw.setdefault(line.strip().rstrip(","), []).append(index)
    cursor = 0
    hits: list[Hit] = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", [])
        lines = source.splitlines(keepends=True) if isinstance(source, str) else list(source)
        if not lines or not all(isinstance(line, str) for line in lines):
            continue
        colab_only = colab_only or (colab and any(_COLAB_IMPORT.match(ln) for ln in lines))
        where, cursor = _raw_lines(raw, lines, cursor, isinstance(source, str))
        hits.extend(_cell_hits(lines, where, rules, python, shell))
    if colab_only:
        return [_on_colab(h) for h in hits]
    return hits


COLAB_NOTE = "a notebook for Google Colab only, whose GPU runtimes are NVIDIA"
_COLAB_IMPORT = re.compile(r"(?:from\s+google\.colab\s+import|import\s+google\.colab)\b")


def _on_colab(h: Hit) -> Hit:
    return h if h.severity == "info" else demoted(h, "info", COLAB_NOTE)


def _raw_lines(
    raw: dict[str, list[int]], lines: list[str], cursor: int, one_string: bool
) -> tuple[list[int], int]:
    """The 1-based raw line of each cell line, and where the next cell's search starts."""
    if one_string:
        whole = "".join(lines)
        at = _find(raw, whole, cursor)
        start = at if at is not None else cursor
        return [start + 1] * len(lines), start + 1
    where: list[int] = []
    for line in lines:
        at = _find(raw, line, cursor)
        if at is None:
            at = cursor  # not found as written: keep the last place
        else:
            cursor = at + 1
        where.append(at + 1)
    return where, cursor


def _find(raw: dict[str, list[int]], value: str, start: int) -> int | None:
    """The first raw line at or after `start` that holds `value` as Jupyter writes it."""
    wanted = {json.dumps(value, ensure_ascii=False), json.dumps(value)}
    wanted |= {f'"source": {w}' for w in wanted}
    found = []
    for w in wanted:
        indexes = raw.get(w, [])
        i = bisect.bisect_left(indexes, start)
        if i < len(indexes):
            found.append(indexes[i])
    return min(found, default=None)


def _cell_hits(
    lines: list[str], where: list[int], rules: RuleSet, python: Scanner, shell: Scanner
) -> list[Hit]:
    first = lines[0].strip()
    if first.startswith("%%"):
        if not _SHELL_CELL.match(first):
            return []  # another language (%%writefile, %%html, ...)
        return _moved(shell("".join(lines[1:]), rules), where[1:])
    code: list[str] = []
    hits: list[Hit] = []
    for index, line in enumerate(lines):
        magic = _MAGIC.match(line.rstrip("\n"))
        if magic is None:
            code.append(line.rstrip("\n"))
            continue
        indent, sign, rest = magic.groups()
        code.append(f"{indent}pass")  # keeps the cell's blocks and line numbers
        if sign == "!" or _INSTALL_MAGIC.match(rest):
            # a shell line, or IPython's %pip/%conda magic (pip/conda run in the kernel's own
            # environment): what it installs is what the notebook runs with
            hits.extend(_moved(shell(rest, rules), where[index : index + 1]))
    hits.extend(_moved(python("\n".join(code) + "\n", rules), where))
    return hits


def _moved(hits: list[Hit], where: list[int]) -> list[Hit]:
    if not where:
        return []
    return [
        Hit(where[min(h.line, len(where)) - 1], h.column, h.rule, h.evidence, h.severity)
        for h in hits
    ]
