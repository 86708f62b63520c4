"""Which of setup.py's requirement lists setuptools ignores because pyproject.toml declares them.

With a `[project]` table in pyproject.toml, setuptools takes each core metadata field from it, and
a field that the table neither gives nor lists in `project.dynamic` is static: the value setup()
passes for it is dropped ("`install_requires` defined outside of `pyproject.toml` is ignored",
setuptools' `_MissingDynamic` warning in `config/_apply_pyprojecttoml.py`; PEP 621 `dynamic`).
So `install_requires` counts only where `dependencies` is dynamic, `extras_require` only where
`optional-dependencies` is: what pip installs for such a project is pyproject.toml's list, which
port scans on its own.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable

import tomllib

from rocmkit.port.findings import Hit
from rocmkit.port.text_scan import read_head

_WHOLE_FILE = 1 << 30  # read_head stops at the file's size

# setup() keyword -> the [project] field that replaces it
_FIELDS = {"install_requires": "dependencies", "extras_require": "optional-dependencies"}


def _project_table(path: str) -> dict[str, object] | None:
    """The [project] table of the pyproject.toml beside `path` (None: none there)."""
    pyproject = os.path.join(os.path.dirname(path), "pyproject.toml")
    try:
        project = tomllib.loads(read_head(pyproject, _WHOLE_FILE).decode("utf-8")).get("project")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    return project if isinstance(project, dict) else None


def project_name(path: str) -> frozenset[str]:
    """The distribution name the pyproject.toml beside `path` declares, as an import name."""
    project = _project_table(path)
    name = project.get("name") if project else None
    return frozenset({name.replace("-", "_").lower()}) if isinstance(name, str) else frozenset()


def ignored_keywords(setup_path: str) -> dict[str, str]:
    """{setup() keyword: why it is ignored} for the setup.py at `setup_path`, from the
    pyproject.toml beside it (empty where there is none, or no [project] table)."""
    project = _project_table(setup_path)
    if project is None:
        return {}
    listed = project.get("dynamic", [])
    dynamic = set(listed) if isinstance(listed, list) else set()
    return {
        keyword: f"ignored: pyproject.toml's [project] declares {field} (setuptools drops"
        f" setup.py's {keyword})"
        for keyword, field in _FIELDS.items()
        if field not in dynamic
    }


def demote(path: str, text: str, hits: list[Hit]) -> list[Hit]:
    """`hits` of a setup.py, those in a requirement list setuptools ignores at info, saying why."""
    keywords = ignored_keywords(path)
    if not keywords or not any(h.severity != "info" for h in hits):
        return hits
    try:
        ranges = ignored_lines(ast.parse(text), keywords)
    except (SyntaxError, ValueError):
        return hits
    out = []
    for h in hits:
        why = next((w for first, last, w in ranges if first <= h.line <= last), None)
        if why is not None and h.severity != "info":
            h = h._replace(severity="info", evidence=f"{h.evidence}  ({why})"[:200])
        out.append(h)
    return out


def ignored_lines(tree: ast.Module, keywords: dict[str, str]) -> list[tuple[int, int, str]]:
    """(first, last, why) line ranges of what setup() receives for the ignored `keywords`: the
    keyword's value and the module-level assignments of the names it uses (a list, a dict of
    lists, `A + B`, `extras["x"] = [...]`), followed a few names deep."""
    assigned: dict[str, list[ast.stmt]] = {}
    for statement in tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        for target in targets:
            base = target.value if isinstance(target, ast.Subscript) else target
            if isinstance(base, ast.Name):
                assigned.setdefault(base.id, []).append(statement)
    ranges: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _name(node.func) != "setup":
            continue
        for keyword in node.keywords:
            if keyword.arg in keywords:
                why = keywords[keyword.arg]
                ranges += [(first, last, why) for first, last in _spans(keyword.value, assigned)]
    return ranges


def _spans(value: ast.expr, assigned: dict[str, list[ast.stmt]]) -> list[tuple[int, int]]:
    spans = [(value.lineno, value.end_lineno or value.lineno)]
    seen: set[str] = set()
    todo: list[ast.AST] = [value]
    while todo and len(seen) < 32:
        for name in {n.id for n in ast.walk(todo.pop()) if isinstance(n, ast.Name)} - seen:
            seen.add(name)
            for statement in assigned.get(name, ()):
                spans.append((statement.lineno, statement.end_lineno or statement.lineno))
                todo.append(statement)
    return spans


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def root_packages(root: str) -> frozenset[str]:
    """The top-level names of the packages that a project at `root` installs from `root` itself:
    setuptools' package-dir mapping a package onto the project folder (`[tool.setuptools]
    package-dir = {"flash_attn.cute" = "."}` in pyproject.toml, `package_dir={"pkg": ""}` in
    setup.py; setuptools' "Package Discovery": a key's package lives in the folder its value
    names, "" or "." being the project's root). Its modules import each other by that name
    (`from flash_attn.cute.utils import ...`): the project's own imports, never a finding."""
    names: set[str] = set()
    data = read_head(os.path.join(root, "pyproject.toml"), _WHOLE_FILE)
    if b"package-dir" in data:
        try:
            document = tomllib.loads(data.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            document = {}
        tool = document.get("tool")
        setuptools = tool.get("setuptools") if isinstance(tool, dict) else None
        mapping = setuptools.get("package-dir") if isinstance(setuptools, dict) else None
        if isinstance(mapping, dict):
            names.update(_root_keys(mapping.items()))
    data = read_head(os.path.join(root, "setup.py"), _WHOLE_FILE)
    if b"package_dir" in data:
        try:
            tree: ast.Module | None = ast.parse(data)
        except (SyntaxError, ValueError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if (
                isinstance(node, ast.keyword)
                and node.arg == "package_dir"
                and isinstance(node.value, ast.Dict)
            ):
                pairs = [
                    (k.value, v.value)
                    for k, v in zip(node.value.keys, node.value.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                ]
                names.update(_root_keys(pairs))
    return frozenset(names)


def _root_keys(pairs: Iterable[tuple[object, object]]) -> set[str]:
    """The top-level names of the package-dir keys whose folder is the root ("" or ".")."""
    found: set[str] = set()
    for key, value in pairs:
        if isinstance(key, str) and key and value in ("", "."):
            found.add(key.split(".")[0])
    return found
