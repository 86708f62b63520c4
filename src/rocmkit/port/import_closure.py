"""One finding per CUDA-only import that a package's own __init__.py reaches.

Python's import system (Language Reference 5, "The import system"): importing `pkg.mod` first
imports `pkg`, which runs `pkg/__init__.py`; a module-level import statement runs the module it
names; an ImportError raised there propagates to whoever imported. So where `pkg/__init__.py`
reaches, through module-level imports of the project's own modules, a module-level `import
cutlass` in `pkg/rmsnorm.py`, then `import pkg` (and any import of a module below it) needs
cutlass: every other module of `pkg` that imports cutlass at its top adds no new fact. That import
stays the finding (the entry point to fix), saying how many modules repeat it; the repeats become
info pointing there. So does a module outside the package that imports it at its top (a test,
a script): loading it runs the package first.

Only module-level statements count: an import in a function, under `if`/`try` (an optional or
guarded import) runs only when that code does. The graph is built only for packages that hold two
or more such findings of one rule and module, from the module-level import statements of their
files (relative imports and imports of the project's own packages).
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator

from rocmkit.port.findings import PortFinding
from rocmkit.port.package_imports import imported_module
from rocmkit.port.rules import severity_rank
from rocmkit.port.text_scan import read_head

_INIT = "__init__.py"
_MAX_BYTES = 4 * 1024 * 1024  # the scan's default size limit (PortConfig.max_bytes)
# `from a.b import c` (a; a relative `from .x` names none of the project's dependencies)
_FROM_NAME = re.compile(r"from\s+(\w+)")


class _Project:
    """The project's own Python files and packages, read only where a question needs them."""

    def __init__(self, root: str, rel_paths: Iterable[str]) -> None:
        self.root = root
        self.files = frozenset(p for p in rel_paths if p.endswith(".py"))
        self.packages = frozenset(p[: -len(_INIT) - 1] for p in self.files if _is_init(p))
        self.folders = frozenset(_ancestors(self.files))
        self.by_name: dict[str, list[str]] = defaultdict(list)  # top name -> outermost dirs
        for package in self.packages:
            if _parent(package) not in self.packages:
                self.by_name[package.rsplit("/", 1)[-1]].append(package)
        self._cache: dict[str, tuple[str, ...]] = {}
        self._lines: dict[str, dict[int, frozenset[str]]] = {}
        self._data: dict[str, bytes] = {}

    def outermost(self, rel: str) -> str | None:
        """The outermost package directory holding `rel` (the one `import` runs first)."""
        found = None
        directory = _parent(rel)
        while directory:  # a folder without __init__.py below a package is a namespace package
            if directory in self.packages:
                found = directory
            directory = _parent(directory)
        return found

    def line_imports(self, rel: str) -> dict[int, frozenset[str]]:
        """Line -> the top-level names an import statement starting at column 0 imports. Such a
        statement is at module level and unguarded by the grammar (a `def`, `if`, `try` or
        `with` body is indented), so no parse is needed to tell."""
        cached = self._lines.get(rel)
        if cached is None:
            cached = self._lines[rel] = {}
            text = self._bytes(rel).decode("utf-8", "replace")
            for number, line in enumerate(text.split("\n"), 1):
                if line.startswith(("import ", "from ")):
                    cached[number] = _statement_names(line.split("#", 1)[0].split(";", 1)[0])
        return cached

    def _bytes(self, rel: str) -> bytes:
        """A module's bytes, read once for both questions; read_head: a regular file only (a FIFO
        named like a module must not block the scan)."""
        data = self._data.get(rel)
        if data is None:
            data = self._data[rel] = read_head(os.path.join(self.root, rel), _MAX_BYTES)
        return data

    def top_imports(self, rel: str) -> tuple[str, ...]:
        """The project files a module's module-level import statements run, in source order."""
        cached = self._cache.get(rel)
        if cached is None:
            cached = self._cache[rel] = self._read(rel)
        return cached

    def _read(self, rel: str) -> tuple[str, ...]:
        try:
            tree = ast.parse(self._bytes(rel))
        except (SyntaxError, ValueError):
            return ()
        targets: list[str] = []
        for node in tree.body:  # module level only: nothing inside def, if, try or with
            if isinstance(node, ast.Import):
                for alias in node.names:
                    targets += self._module_files(alias.name.split("."), rel)
            elif isinstance(node, ast.ImportFrom):
                targets += self._from_files(node, rel)
        return tuple(targets)

    def _from_files(self, node: ast.ImportFrom, rel: str) -> list[str]:
        if node.level:  # relative: from the importing module's package upwards
            base = _parent(rel)
            for _ in range(node.level - 1):
                base = _parent(base)
            if base not in self.packages:
                return []
            parts = base.split("/") + (node.module.split(".") if node.module else [])
            files = self._chain(parts, _parent(base))
        else:
            files = self._module_files((node.module or "").split("."), rel)
        if not files or not files[-1].endswith(_INIT):
            return files
        package = files[-1][: -len(_INIT) - 1]
        for alias in node.names:  # `from pkg import mod` imports the submodule mod
            sub = self._file_of(f"{package}/{alias.name}")
            if sub is not None:
                files.append(sub)
        return files

    def _module_files(self, parts: list[str], importer: str) -> list[str]:
        """The files `import a.b.c` runs: a/__init__.py, a/b/__init__.py, a/b/c(.py|/__init__.py)."""
        outer = _closest(self.by_name.get(parts[0], ()), importer)
        if outer is None:
            return []
        source_root = _parent(outer)
        return self._chain([*_split(source_root), *parts], source_root)

    def _chain(self, parts: list[str], source_root: str) -> list[str]:
        files = []
        skip = len(_split(source_root))
        for depth in range(skip + 1, len(parts) + 1):
            found = self._file_of("/".join(parts[:depth]))
            if found is not None:
                files.append(found)
            elif "/".join(parts[:depth]) not in self.folders:
                break  # not the project's: nothing further down is either
        return files

    def _file_of(self, module_path: str) -> str | None:
        if module_path in self.packages:
            return f"{module_path}/{_INIT}"
        return f"{module_path}.py" if f"{module_path}.py" in self.files else None

    def reach_order(self, package: str) -> Iterator[str]:
        """The files `import package` runs through module-level imports, breadth-first (fewest
        import steps from its __init__.py first, then source order); each file is parsed only
        when the walk gets to it."""
        start = f"{package}/{_INIT}"
        seen, queue = {start}, deque([start])
        while queue:
            rel = queue.popleft()
            yield rel
            for target in self.top_imports(rel):
                if target not in seen:
                    seen.add(target)
                    queue.append(target)


def _statement_names(line: str) -> frozenset[str]:
    """The top-level names an import line imports: a of `from a.b import c`, a and d of
    `import a.b as c, d`."""
    if line.startswith("from "):
        match = _FROM_NAME.match(line)
        return frozenset({match.group(1)}) if match else frozenset()
    items = line[len("import ") :].split(",")
    return frozenset(i.split()[0].split(".")[0] for i in items if i.split())


def _ancestors(files: Iterable[str]) -> set[str]:
    folders: set[str] = set()
    for rel in files:
        directory = _parent(rel)
        while directory and directory not in folders:
            folders.add(directory)
            directory = _parent(directory)
    return folders


def _is_init(rel: str) -> bool:
    return rel == _INIT or rel.endswith("/" + _INIT)


def _parent(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def _split(directory: str) -> list[str]:
    return directory.split("/") if directory else []


def _closest(candidates: Iterable[str], importer: str) -> str | None:
    """The package of that name nearest the importer (a vendored copy elsewhere is another one)."""
    candidates = list(candidates)
    if len(candidates) == 1:
        return candidates[0]
    beside = [c for c in candidates if importer.startswith(_parent(c) + "/" if _parent(c) else "")]
    return max(beside, key=len) if beside else None


def reported_by_closure(
    findings: list[PortFinding], root: str, rel_paths: Iterable[str]
) -> list[PortFinding]:
    """Findings with each module-level import that a package's __init__.py already reaches
    turned to info, pointing at the one import kept (which counts them)."""
    keyed: dict[tuple[str, str], list[PortFinding]] = defaultdict(list)
    for f in findings:
        if f.severity != "info" and f.path.endswith(".py"):
            module = imported_module(f)
            if module is not None:
                keyed[(f.rule_id, module)].append(f)
    keyed = {k: v for k, v in keyed.items() if len(v) > 1}
    if not keyed:
        return findings
    project = _Project(root, rel_paths)
    replaced: dict[int, PortFinding] = {}
    for (_, module), group in keyed.items():
        by_package: dict[str, list[PortFinding]] = defaultdict(list)
        for f in group:
            package = project.outermost(f.path)
            if package is not None:
                by_package[package].append(f)
        for package, inside in by_package.items():
            if len(inside) > 1 or len(inside) < len(group):
                _group_package(project, package, module, inside, group, replaced)
    return [replaced.get(id(f), f) for f in findings]


def _group_package(
    project: _Project,
    package: str,
    module: str,
    inside: list[PortFinding],
    group: list[PortFinding],
    replaced: dict[int, PortFinding],
) -> None:
    at_top = {f.path: f for f in inside if _at_module_level(project, f, module)}
    if not at_top:
        return
    anchor = next((at_top[rel] for rel in project.reach_order(package) if rel in at_top), None)
    if anchor is None:
        return
    name = package.rsplit("/", 1)[-1]
    anchor_line = next(
        line for line in anchor.lines or (anchor.line,) if _top(project, anchor, line, module)
    )
    repeats = [f for f in at_top.values() if f is not anchor]
    inside_paths = set(at_top)
    repeats += [  # modules outside the package that import it at their top (tests, scripts)
        f
        for f in group
        if f.path not in inside_paths
        and project.outermost(f.path) != package
        and _at_module_level(project, f, module)
        and f"{package}/{_INIT}" in project.top_imports(f.path)
    ]
    repeats = [f for f in repeats if severity_rank(f.severity) <= severity_rank(anchor.severity)]
    if not repeats:
        return
    note = f"`import {name}` already needs {module}: reported at {anchor.path}:{anchor_line}"
    for f in repeats:
        replaced[id(f)] = dataclasses.replace(f, severity="info", note=note)
    num_inside = sum(1 for f in repeats if f.path in inside_paths)
    num_outside = len(repeats) - num_inside
    counted = f"{num_inside} more modules of {name} import it at their top"
    if num_outside:
        counted += f", and {num_outside} that import {name}"
    replaced[id(anchor)] = dataclasses.replace(
        anchor, evidence=f"{anchor.evidence}  (`import {name}` reaches it; {counted}: info)"
    )


def _top(project: _Project, finding: PortFinding, line: int, module: str) -> bool:
    return module in project.line_imports(finding.path).get(line, ())


def _at_module_level(project: _Project, finding: PortFinding, module: str) -> bool:
    """Whether one of the finding's lines is a module-level import of `module` in its file."""
    return any(_top(project, finding, line, module) for line in finding.lines or (finding.line,))
