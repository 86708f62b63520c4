"""Packages a program installs while it runs, judged like the project's requirement files.

A requirement string handed to pip at run time is a requirement like any other: pip resolves it
by the same rules (PEP 508), so `onnxruntime-gpu` fetched by a helper is the CUDA build of ONNX
Runtime whichever file names it. Three shapes hand a string to an installer:

- a call of a function named for installing or checking requirements (`check_requirements(
  ("onnx", "onnxruntime-gpu" if cuda else "onnxruntime"))`, `pip_install("x")`, `pip.main([...])`)
  with the requirement strings as arguments (a tuple or list of them, or `a if test else b`);
- an argv list that runs pip (`[sys.executable, "-m", "pip", "install", "pkg"]`);
- a command string given to a process launch (`os.system("pip install pkg")`).

`a if test else b` is read as a ROCm machine runs it (cuda_build.RocmBuild: torch.version.cuda
is None, torch.cuda.is_available() true, environment variables at their defaults): a branch that
a ROCm machine never takes is not installed there; an undecided test leaves both.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from rocmkit.port import pieces, whole_tree
from rocmkit.port.cuda_build import RocmBuild
from rocmkit.port.findings import Hit
from rocmkit.port.nvml_query import launcher_name
from rocmkit.port.requirements import parse_requirement, pip_install_hits, requirement_hits
from rocmkit.port.rules import RuleSet, normalise_name

# check_requirements, install_requirements, pip_install, install_package, ensure_installed ...
_INSTALLER_NAME = re.compile(r"(?i)(?:requirement|install(?!ed))")


def run_time_hits(whole: whole_tree.Whole, rules: RuleSet, lines: set[int]) -> list[Hit]:
    """installed_at_run_time over the file's whole tree, parsed only when it can matter.

    Deciding an `if` on the way to a call reads names bound anywhere in the module, so the
    verdict needs the whole tree; but a decided test only leaves branches out. The calls that
    span `lines` all sit in the statements holding those lines (top-level ones; of a class, the
    body statements), so a walk of those statements alone that takes every branch finds a
    superset of the findings: when it finds none (a package named in a message, a docstring, an
    `import`), neither would the whole tree. Only otherwise, or when those statements do not
    parse alone, is the whole file parsed and judged. [] when the file does not parse."""
    if not whole.parsed:
        text = whole.text
        source = pieces.enclosing_statements(text, pieces.line_starts(text, sorted(lines)))
        try:
            first = pieces.parse(source)
        except (SyntaxError, ValueError):
            first = None  # a wrong cut: the whole file
        if first is not None and not installed_at_run_time(first, rules, lines, decide=False):
            return []
    try:
        tree = whole.tree()
    except (SyntaxError, ValueError):
        return []
    return installed_at_run_time(tree, rules, lines)


def installed_at_run_time(
    tree: ast.Module, rules: RuleSet, lines: set[int], decide: bool = True
) -> list[Hit]:
    """Findings for the requirement strings a module hands to an installer while it runs (warn
    at most inside a function: only the code path that calls it installs the package). With
    `decide` false no test is decided (every branch is taken): a superset of the findings, for
    a tree of some of the module's statements."""
    build = _LazyBuild(tree if decide else None)
    hits: list[Hit] = []
    for node, in_function, in_handler in _calls(tree, lines, build):
        name = _name(node.func)
        found: list[Hit] = []
        if in_handler is not None and name.rsplit(".", 1)[-1] in _MESSAGE_CALLS:
            hints = [
                h for h in _install_hints(node, rules, name) if _hinted_name(h) not in in_handler
            ]
            hits += [
                h._replace(severity="warn" if h.severity == "error" else h.severity) for h in hints
            ]
            continue
        if _INSTALLER_NAME.search(name.rsplit(".", 1)[-1]) and name != "setup":
            for constant in _strings(node.args, build):
                for token in str(constant.value).split():
                    if not token.startswith("-"):
                        hits_of = requirement_hits(token, constant.lineno, rules)
                        found += _placed(hits_of, name, token)
        for argument in node.args:
            found += _argv_hits(argument, rules, name)
        if launcher_name(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found += [
                    h._replace(line=first.lineno + h.line - 1, evidence=f"{h.evidence}  ({name}())")
                    for h in _exact(pip_install_hits(first.value, rules))
                ]
        for h in found:
            severity = "warn" if in_function and h.severity == "error" else h.severity
            hits.append(h._replace(severity=severity))
    return hits


# What shows a message (print, logging, click.echo, warnings.warn) or raises/exits with one.
_MESSAGE_CALLS = frozenset(
    {"print", "echo", "warn", "warning", "error", "critical", "exception", "info", "exit"}
    | {"ImportError", "ModuleNotFoundError", "RuntimeError", "SystemExit", "OSError"}
)
_MISSING_MODULE = frozenset({"ImportError", "ModuleNotFoundError"})


def _install_hints(node: ast.Call, rules: RuleSet, name: str) -> list[Hit]:
    """The packages a `pip install ...` in a message's string tells the user to install (the
    message of a missing-module handler: the command the user runs next, resolved by pip)."""
    found: list[Hit] = []
    for argument in node.args:
        for constant in ast.walk(argument):
            if isinstance(constant, ast.Constant) and isinstance(constant.value, str):
                start = constant.value.find("pip install ")
                if start < 0:
                    continue
                command = _command_of(constant.value, start)
                found += [
                    h._replace(line=constant.lineno, evidence=f"{h.evidence}  (told in {name}())")
                    for h in _exact(pip_install_hits(command, rules))
                ]
    return found


# Where a command written in prose ends: an aside in brackets or an alternative offered after
# it ("pip install onnxruntime (or onnxruntime-gpu for GPU support)", "... or: pip install x").
_PROSE_AFTER = re.compile(r"\s*\(|\s+or\b|;")


def _command_of(text: str, start: int) -> str:
    """The `pip install ...` command that starts at `start` in a message: to the end of its line,
    of the quotes or backticks it is written in, or of the command before an aside or an
    alternative (pip's command line is its options and requirement specifiers; the prose after
    it names packages the message only mentions)."""
    command = text[start:].splitlines()[0]
    opener = text[start - 1] if start else ""
    if opener in ("'", '"', "`"):
        command = command.split(opener, 1)[0]
    return _PROSE_AFTER.split(command, maxsplit=1)[0]


def _handles_missing_module(handler: ast.ExceptHandler) -> bool:
    """`except ImportError:` / `except (ModuleNotFoundError, ...):` (a bare except is not)."""
    if handler.type is None:
        return False
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in _MISSING_MODULE for k in kinds)


def _stops(handler: ast.ExceptHandler) -> bool:
    """Whether the handler ends the program's way on (raise, sys.exit): the install it names is
    then what the user must run; a handler that goes on (a fallback) only suggests it."""
    last = handler.body[-1] if handler.body else None
    if isinstance(last, ast.Raise):
        return True
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and _name(last.value.func).rsplit(".", 1)[-1] in ("exit", "_exit", "quit")
    )


def _tried_modules(statements: list[ast.stmt]) -> frozenset[str]:
    """Top-level names of the modules a try body imports (its own error message is the
    import's, which the import rules judge)."""
    names: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Import):
                names.update(normalise_name(a.name.split(".")[0]) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(normalise_name(node.module.split(".")[0]))
    return frozenset(names)


def _calls(
    tree: ast.Module, lines: set[int], build: _LazyBuild
) -> Iterator[tuple[ast.Call, bool, frozenset[str] | None]]:
    """Every call that spans one of `lines` (where a package is named) and that a ROCm machine
    can reach (not in the branch of an `if torch.version.cuda:` it never takes), whether it
    sits inside a function (runs only when that is called), and, inside an `except ImportError:`
    handler that stops the program, the modules its try imports (None elsewhere)."""
    stack: list[tuple[ast.AST, bool, frozenset[str] | None]] = [(tree, False, None)]
    while stack:
        node, inside, handler = stack.pop()
        if isinstance(node, ast.Call):
            yield node, inside, handler
        nested = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.If):
            truth = build.truth(node.test, cuda_home=None)
            if truth is True or truth is False:
                children = list(node.body if truth else node.orelse)
        for child in children:
            inner = handler
            if (
                isinstance(node, ast.Try)
                and isinstance(child, ast.ExceptHandler)
                and _handles_missing_module(child)
                and _stops(child)
            ):
                inner = _tried_modules(node.body)
            first = getattr(child, "lineno", None)
            if first is None:
                stack.append((child, nested, inner))  # arguments, keywords: no place
                continue
            last = getattr(child, "end_lineno", None) or first
            if any(first <= line <= last for line in lines):
                stack.append((child, nested, inner))


class _LazyBuild:
    """RocmBuild made only when an `x if test else y` needs it (it walks the whole module)."""

    def __init__(self, tree: ast.Module | None) -> None:
        self.tree = tree  # None: decide nothing
        self.build: RocmBuild | None = None

    def truth(self, test: ast.expr, cuda_home: str | None) -> object:
        if self.tree is None:
            return None
        if self.build is None:
            self.build = RocmBuild(self.tree)
        return self.build.truth(test, cuda_home)


def _strings(arguments: list[ast.expr], build: _LazyBuild) -> Iterator[ast.Constant]:
    """The string constants an argument can be on a ROCm machine: the argument, or the items
    of a tuple or list given as the argument. A sequence inside that sequence is left alone:
    some helpers read it as alternatives (any one of them), not as requirements."""
    stack = [(a, 0) for a in arguments]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and depth == 0:
            stack.extend((e, 1) for e in node.elts)
        elif isinstance(node, ast.IfExp):
            truth = build.truth(node.test, cuda_home=None)
            if truth is True or truth is False:
                stack.append((node.body if truth else node.orelse, depth))
            else:
                stack += [(node.body, depth), (node.orelse, depth)]


def _argv_hits(argument: ast.expr, rules: RuleSet, name: str) -> list[Hit]:
    """`[..., "pip", "install", "pkg"]` (also `-m pip`): the packages after `install`."""
    if not isinstance(argument, (ast.List, ast.Tuple)):
        return []
    words = [e for e in argument.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    spelled = [str(w.value) for w in words]
    if "install" not in spelled or not any(
        s.rsplit("/", 1)[-1] in ("pip", "pip3") for s in spelled
    ):
        return []
    command = "pip install " + " ".join(spelled[spelled.index("install") + 1 :])
    return [
        h._replace(line=argument.lineno, evidence=f"{h.evidence}  ({name}([... pip install ...]))")
        for h in _exact(pip_install_hits(command, rules))
    ]


def _exact(found: list[Hit]) -> list[Hit]:
    """Findings at warn/error of a rule that names the package exactly (the package is the
    first word of the evidence: the requirement string)."""
    kept = []
    for h in found:
        requirement = parse_requirement(h.evidence.split()[0].strip("'\"")) if h.evidence else None
        if h.severity != "info" and requirement is not None and _names(h, requirement.name):
            kept.append(h)
    return kept


def _names(h: Hit, package: str) -> bool:
    wanted = normalise_name(package)
    return any("*" not in p and normalise_name(p) == wanted for p in h.rule.packages)


def _placed(found: Iterator[Hit], name: str, token: str) -> list[Hit]:
    """The findings of a requirement a rule names exactly: a string handed to an installer is
    often one feature's optional tool (nvidia-modelopt for a TensorRT export), so a pattern
    (nvidia-*) is not enough there."""
    requirement = parse_requirement(token)
    if requirement is None:
        return []
    return [
        h._replace(evidence=f"{h.evidence}  (installed at run time by {name}())"[:160])
        for h in found
        if h.severity != "info" and _names(h, requirement.name)
    ]


def _hinted_name(h: Hit) -> str:
    requirement = parse_requirement(h.evidence.split()[0]) if h.evidence else None
    return normalise_name(requirement.name) if requirement is not None else ""


def _name(func: ast.expr) -> str:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


# A module-level table of what a helper installs, named for it (`BACKEND_REQUIREMENTS = {"onnx-cuda":
# ("onnxruntime-gpu>=1.18",), ...}`, `_INSTALL_PACKAGES = [...]`).
_TABLE_NAME = re.compile(r"^_*[A-Z0-9_]*(?:REQUIREMENTS?|INSTALLS?|TO_INSTALL)(?:_[A-Z0-9_]*)?$")
# The same name given a literal dict/list/tuple at the top of a module: the text test before any
# parse (`REQUIREMENT_RE = re.compile(...)` is no table).
TABLE_TEXT = re.compile(
    r"^_*[A-Z0-9_]*(?:REQUIREMENTS?|INSTALLS?|TO_INSTALL)(?:_[A-Z0-9_]*)?\s*(?::[^=\n]*)?=\s*[\[({]",
    re.M,
)


def table_hits(tree: ast.Module, rules: RuleSet) -> list[Hit]:
    """Findings for the requirement strings of a module-level table named for installing (an
    upper-case `..._REQUIREMENTS` constant) in a module that also calls an installer (a function
    named for installing or requirements): pip resolves each string the helper hands it, so
    each is judged by the package rules, warn at most (a back end the user picks)."""
    calls = any(
        isinstance(n, ast.Call)
        and _INSTALLER_NAME.search(_name(n.func).rsplit(".", 1)[-1])
        and _name(n.func) != "setup"
        for n in ast.walk(tree)
    )
    if not calls:
        return []
    hits: list[Hit] = []
    for statement in tree.body:
        target, value = _assigned(statement)
        if target is None or value is None or not _TABLE_NAME.match(target):
            continue
        for constant in _table_strings(value):
            token = str(constant.value).split()[0] if str(constant.value).split() else ""
            found = _placed(requirement_hits(token, constant.lineno, rules), target, token)
            why = f"{token}  (in {target}, which an installer call of this module reads)"
            hits += [
                h._replace(severity="warn" if h.severity == "error" else h.severity, evidence=why)
                for h in found
            ]
    return hits


def _assigned(statement: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        return (target.id if isinstance(target, ast.Name) else None), statement.value
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id, statement.value
    return None, None


def _table_strings(value: ast.expr) -> Iterator[ast.Constant]:
    """The requirement strings of a table: a list/tuple of them, or a dict whose values are
    strings or lists/tuples of strings; an f-string counts by its leading literal (the name)."""
    values = value.values if isinstance(value, ast.Dict) else [value]
    for item in values:
        elements = item.elts if isinstance(item, (ast.List, ast.Tuple)) else [item]
        for element in elements:
            if isinstance(element, ast.JoinedStr) and element.values:
                element = element.values[0]
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                yield element


_PATTERNS: dict[int, re.Pattern[str]] = {}
# Words that stand in an installer call (check_requirements(, pip_install(, "pip", "install").
_INSTALLER_WORDS = ("install", "requirement")
# ... called (check_requirements(, pip_install(; not is_x_installed(), or after pip.
_CALLED_AT = re.compile(r"(?:install(?!ed)|requirements?)\w*\s*\(")
_WINDOW = 200  # characters after such a word where its requirement strings stand


def package_lines(text: str, rules: RuleSet) -> set[int]:
    """Lines where a package that some rule names exactly is quoted or follows a space, a
    little after `install`/`requirement` (an installer call, pip's command); empty when there
    is none (before any parse: most files hand nothing to an installer)."""
    sites = [
        i
        for word in _INSTALLER_WORDS
        for i in _occurrences(text, word)
        if _CALLED_AT.match(text, i) or "pip" in text[max(0, i - 16) : i]
    ]
    if not sites:
        return set()
    pattern = _PATTERNS.get(id(rules))
    if pattern is None:
        exact = {
            p.lower()
            for r in rules.rules
            if r.severity != "info" and not r.requirement_note
            for p in r.packages
            if "*" not in p
        }
        spelled = "|".join(re.escape(n) for n in sorted(exact, key=len, reverse=True))
        pattern = re.compile(rf"['\"\s](?:{spelled})(?=[\s'\"<>=!~\[;,)]|$)", re.I | re.M)
        _PATTERNS[id(rules)] = pattern
    lines: set[int] = set()
    end = 0
    for site in sorted(sites):
        begin = max(site, end - 80)  # a name across the last window's end
        end = min(len(text), site + _WINDOW)
        for match in pattern.finditer(text, begin, end):
            lines.add(text.count("\n", 0, match.start()) + 1)
    return lines


def _occurrences(text: str, word: str) -> list[int]:
    found: list[int] = []
    start = text.find(word)
    while start >= 0 and len(found) < 200:
        found.append(start)
        start = text.find(word, start + len(word))
    return found
