"""Modules a project loads only on a CUDA torch: `if torch.version.cuda: from .cuda import *`.

torch.version.cuda is None on a ROCm build and torch.version.hip is None on a CUDA build
(docs.pytorch.org/docs/stable/notes/hip.html), so the body of `if torch.version.cuda:` and the
`else` of `if torch.version.hip:` never run under ROCm. A module of the project imported only
there (and nowhere else in the tree) is never imported on ROCm, nor are the sources it compiles:
its findings are the NVIDIA path, not porting hazards.
"""

from __future__ import annotations

import ast
import os
import re
import stat
from collections.abc import Iterable

from rocmkit.port import pieces

_GATE_WORDS = ("version.cuda", "version.hip")
_MAX_BYTES = 4 << 20  # the scan's default --max-bytes
_KEPT_BYTES = 64 << 20  # the scan's bytes kept for the notes, at most
_IMPORT = re.compile(
    r"(?m)^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+([^\n#]+)|import[ \t]+([^\n#]+))"
)


class CudaLoading:
    """Answers, for a file with findings, whether a module enclosing it is loaded only on CUDA.

    Lazy, so a scan pays only where it has findings: the gates are looked for in the Python
    files directly inside the file's enclosing folders (where `from .cuda import *` sits), and a
    gated module is then confirmed by reading the files that could import it elsewhere."""

    def __init__(self, files: Iterable[tuple[str, str, str]]) -> None:
        self.paths = {rel: path for path, rel, kind in files if kind == "python"}
        self.by_folder: dict[str, list[str]] = {}
        for rel in self.paths:
            folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
            self.by_folder.setdefault(folder, []).append(rel)
        self.modules = {rel[:-3] for rel in self.paths} | {f for f in self.by_folder if f}
        self.gates: dict[str, dict[str, str]] = {}  # folder -> {target: 'rel:line'}
        self.confirmed: dict[str, bool] = {}  # target -> imported nowhere else
        self.texts: dict[str, str] = {}
        self.data: dict[str, bytes] = {}  # path -> the bytes the scan read (see read)
        self.num_bytes = 0

    def read(self, path: str, data: bytes) -> None:
        """The scan read `data` from `path`: kept (up to _KEPT_BYTES in all) so that a note
        need not read it again."""
        if self.num_bytes + len(data) <= _KEPT_BYTES:
            self.data[path] = data
            self.num_bytes += len(data)

    def note_for(self, rel: str) -> str:
        """Why this file's findings are info ('' when no enclosing module is CUDA-only)."""
        parts = rel.split("/")[:-1]
        for depth in range(len(parts), -1, -1):
            for target, where in self._gates("/".join(parts[:depth])).items():
                inside = rel.startswith(target + "/") or rel == target + ".py"
                if inside and self._only_there(target, where.rsplit(":", 1)[0]):
                    return (
                        f"loaded only on a CUDA torch ({where} imports it under a"
                        " torch.version test): a ROCm build never imports it"
                    )
        return ""

    def _text(self, rel: str) -> str:
        if rel not in self.texts:
            path = self.paths[rel]
            data = self.data.get(path)
            if data is not None and len(data) <= _MAX_BYTES:
                self.texts[rel] = _as_read(data)
            else:
                self.texts[rel] = _read(path)
        return self.texts[rel]

    def _gates(self, folder: str) -> dict[str, str]:
        if folder not in self.gates:
            found: dict[str, str] = {}
            for rel in self.by_folder.get(folder, ()):
                text = self._text(rel)
                if "import" in text and any(w in text for w in _GATE_WORDS):
                    for dotted, line in _gated_imports(text, rel).items():
                        target = _rel_of(dotted, self.modules)
                        if target:
                            found.setdefault(target, f"{rel}:{line}")
            self.gates[folder] = found
        return self.gates[folder]

    def _only_there(self, target: str, gating: str) -> bool:
        if target not in self.confirmed:
            dotted = (target[4:] if target.startswith("src/") else target).replace("/", ".")
            last = dotted.rsplit(".", 1)[-1]
            self.confirmed[target] = not any(
                _imports(self._text(rel), rel, dotted)
                for rel in self.paths
                if rel != gating and not rel.startswith(target + "/") and last in self._text(rel)
            )
        return self.confirmed[target]


def _as_read(data: bytes) -> str:
    """What _read gives for a file holding `data`: text mode decodes with replacement and
    reads every line ending as a newline."""
    text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _read(path: str) -> str:
    """The text of a regular file ('' for anything else: a FIFO would block, a huge file is
    not source the scan reads either)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_BYTES:
            return ""
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _gated_imports(text: str, rel: str) -> dict[str, int]:
    """Own modules (relative imports) imported on the CUDA side of a torch.version test, and
    not imported anywhere else in the same file."""
    places = _gate_places(text) if _has_relative_from(text) else []
    if not places:
        return {}  # no relative import, or no `if` that tests torch.version: nothing to parse for
    # The gates are looked for first in the top-level statements that hold them, parsed alone
    # at their own lines (pieces): most such files gate no relative import. Only a file that
    # does is parsed whole, for the imports of the same modules elsewhere in it.
    piece = pieces.assemble(text, pieces.statement_spans(text, _top_starts(text), places))
    for source in (piece, text):
        try:
            tree = pieces.parse(source)
        except (SyntaxError, ValueError):
            continue
        gated, gated_nodes = _gated_in(tree, rel)
        if gated and source is piece:
            continue  # found: the whole file says which are imported elsewhere too
        for node in pieces.statement_nodes(tree):
            if isinstance(node, ast.ImportFrom) and node.level and id(node) not in gated_nodes:
                for dotted in _resolved(node, rel):
                    gated.pop(dotted, None)
        return gated
    return {}


def _gated_in(tree: ast.AST, rel: str) -> tuple[dict[str, int], set[int]]:
    """The relative imports on the CUDA side of every torch.version test in `tree` (the first
    line of each module) and those import nodes."""
    gated: dict[str, int] = {}
    gated_nodes: set[int] = set()
    for node in pieces.statement_nodes(tree):
        if isinstance(node, ast.If):
            for statement in _cuda_side(node):
                for n in pieces.statement_nodes(statement):
                    if isinstance(n, ast.ImportFrom) and n.level:
                        gated_nodes.add(id(n))
                        for dotted in _resolved(n, rel):
                            gated.setdefault(dotted, n.lineno)
    return gated, gated_nodes


def _top_starts(text: str) -> list[int]:
    quotes = pieces.triple_quotes(text) if ('"""' in text or "'''" in text) else []
    starts = pieces.outside_strings(pieces.top_level_starts(text), quotes)
    return starts if starts and starts[0] == 0 else [0, *starts]


# What may stand before a torch.version test's `version.cuda` on its line, when that line is part
# of an `if`/`elif` header whose whole test is the attribute (`if not torch.version.cuda:`,
# `elif (\n    torch.version.hip is None`, a continued line): anything else there (`x = `,
# `"cuda": `, `# `) is not such a test.
_GATE_PREFIX = re.compile(
    r"[ \t\f(]*(?:(?:el)?if\b[ \t\f(]*)?(?:not\b[ \t\f(]*)?(?:torch[ \t\f]*\.[ \t\f]*)?"
)


def _gate_places(text: str) -> list[int]:
    """Where a `version.cuda`/`version.hip` may be the test of an `if` (_cuda_side), sorted."""
    places = []
    for word in _GATE_WORDS:
        position = text.find(word)
        while position >= 0:
            if _GATE_PREFIX.fullmatch(text, text.rfind("\n", 0, position) + 1, position):
                places.append(position)
            position = text.find(word, position + 1)
    places.sort()
    return places


# `from .x import y`, `from . import y`, `from.x import y` (a relative import's only spellings).
_RELATIVE_FROM = re.compile(r"\bfrom[\s\\]*\.")
# ... tried only where `from` starts a word: the leading \b leaves `re` no literal to skip to.
_RELATIVE_FROM_AT = re.compile(_RELATIVE_FROM.pattern.replace(r"\b", "", 1))


def _has_relative_from(text: str) -> bool:
    """Whether _RELATIVE_FROM.search(text) finds one."""
    position = text.find("from")
    while position >= 0:
        before = text[position - 1] if position else " "
        if not (before.isalnum() or before == "_") and _RELATIVE_FROM_AT.match(text, position):
            return True
        position = text.find("from", position + 1)
    return False


def _cuda_side(node: ast.If) -> list[ast.stmt]:
    """The statements of this `if` that never run on a ROCm torch ([] when it is no such test)."""
    test, negated = node.test, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, True
    elif (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
    ):
        negated = isinstance(test.ops[0], ast.Is)
        test = test.left
    if not (isinstance(test, ast.Attribute) and _dotted(test.value) == "torch.version"):
        return []
    if test.attr == "cuda":  # truthy only on CUDA builds
        return node.orelse if negated else node.body
    if test.attr == "hip":  # truthy only on ROCm builds: the other branch is CUDA (or CPU)
        return node.body if negated else node.orelse
    return []


def _resolved(node: ast.ImportFrom, rel: str) -> list[str]:
    """Dotted project modules a relative `from . import x` / `from .x import y` names."""
    package = rel.split("/")[:-1]
    if package and package[0] == "src":
        package = package[1:]
    if node.level > len(package) + 1:
        return []
    base = package[: len(package) - node.level + 1]
    if node.module:
        return [".".join([*base, node.module])]
    return [".".join([*base, a.name]) for a in node.names]


def _rel_of(dotted: str, modules: set[str]) -> str:
    path = dotted.replace(".", "/")
    for candidate in (path, f"src/{path}"):
        if candidate in modules:
            return candidate
    return ""


def _imports(text: str, rel: str, dotted: str) -> bool:
    """Whether any import line of `text` (at any depth) names the module `dotted`."""
    for match in _IMPORT.finditer(text):
        source, names, plain = match.groups()
        if plain is not None:
            modules = [p.strip().split(" ")[0] for p in plain.split(",")]
        else:
            resolved = _resolve_text(source, rel)
            modules = [resolved] + [
                f"{resolved}.{n.strip().split(' ')[0]}" for n in names.strip("()").split(",")
            ]
        if any(m == dotted or m.startswith(dotted + ".") for m in modules):
            return True
    return False


def _resolve_text(source: str, rel: str) -> str:
    dots = len(source) - len(source.lstrip("."))
    if not dots:
        return source
    package = rel.split("/")[:-1]
    if package and package[0] == "src":
        package = package[1:]
    base = package[: len(package) - dots + 1] if dots <= len(package) + 1 else []
    rest = source[dots:]
    return ".".join([*base, rest] if rest else base)


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""
