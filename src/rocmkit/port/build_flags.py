"""What a Python build hands to nvcc, followed through the module, and JIT builds that only nvcc
can start.

On a ROCm torch, torch.utils.cpp_extension passes `extra_compile_args["nvcc"]` (and `load()`'s
`extra_cuda_cflags`) to hipcc, which hands every option it does not handle to clang. Which nvcc
options clang rejects is data (nvcc_only_flags.toml, derived from `nvcc --help` and clang itself
by tests/port/derive_nvcc_flags.py). Flag lists are rarely written inline: they are assigned to a
name, extended (`flags += [...]`, `.append`), put in a dict under "nvcc", or returned by a local
function; `nvcc_arguments` follows those within the module to the strings that reach nvcc.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Iterator
from importlib import resources

from rocmkit.port.cuda_build import RocmBuild
from rocmkit.port.pieces import statement_nodes
from rocmkit.port.whole_tree import ascii_names, statements_and_lines, walk, word_lines

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# Keywords whose value is nvcc's argument list (torch.utils.cpp_extension.load / load_inline).
_SINK_KEYWORDS = frozenset({"extra_cuda_cflags"})
_LIST_METHODS = frozenset({"append", "extend", "insert", "__iadd__"})
# torch.utils.cpp_extension's JIT entry points (load, load_inline, and the private _jit_compile
# that projects call to pass their own build directory).
JIT_CALLS = frozenset({"load", "load_inline", "_jit_compile"})
# How a module asks for nvcc: torch's CUDA_HOME (None on every ROCm torch), its finder, or the
# nvcc executable by name.
_NVCC_PROBES = frozenset({"CUDA_HOME", "_find_cuda_home", "CUDA_PATH"})


@functools.lru_cache(maxsize=1)
def nvcc_only() -> tuple[frozenset[str], frozenset[str]]:
    """(spellings clang rejects alone or with their value as the next argument, spellings it
    rejects as flag=value), from nvcc_only_flags.toml."""
    text = resources.files("rocmkit.port").joinpath("nvcc_only_flags.toml").read_text("utf-8")
    data = tomllib.loads(text)
    return frozenset(data["bare"]) | frozenset(data["separate"]), frozenset(data["joined"])


def rejected_flags(value: str) -> list[str]:
    """The nvcc-only flags in one argument string (one that holds several, "-diag-suppress
    20012", is read word by word: each word is meant for nvcc)."""
    alone, joined = nvcc_only()
    bad = []
    for token in value.split():
        name = token.split("=", 1)[0]
        if token in alone or ("=" in token and name in joined):
            bad.append(token)
    return bad


def mentions_nvcc_only(text: str) -> bool:
    """Whether a module's text holds an nvcc-only spelling at all (before any parse): as
    `rejected_flags` reads a string word by word, a spelling counts only as a whole word of a
    string (after a quote or a space, before one, or before `=` for flag=value spellings), so
    `-std=c++17`, which clang takes, does not make every extension build parse its module."""
    # Every spelling starts with "-": the pattern is tried only there (its leading lookbehind
    # leaves `re` no literal to skip to, so a search tries every character: 8x slower).
    pattern = _nvcc_only_word()
    if not _dash_led():  # a data file no longer so
        return pattern.search(text) is not None
    position = text.find("-")
    while position >= 0:
        if pattern.match(text, position):
            return True
        position = text.find("-", position + 1)
    return False


@functools.lru_cache(maxsize=1)
def _dash_led() -> bool:
    alone, joined = nvcc_only()
    return all(s.startswith("-") for s in alone | joined)


@functools.lru_cache(maxsize=1)
def _nvcc_only_word() -> re.Pattern[str]:
    alone, joined = nvcc_only()
    words = "|".join(re.escape(s) for s in sorted(alone, key=len, reverse=True))
    values = "|".join(re.escape(s) for s in sorted(joined, key=len, reverse=True))
    return re.compile(rf"""(?<=["'\s])(?:(?:{words})(?=["'\s])|(?:{values})=)""")


class _Module:
    """A module's functions and what each name is assigned or extended with (by name, over the
    whole module: flag lists are built across a few lines of one function)."""

    def __init__(self, tree: ast.Module, text: str | None = None) -> None:
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.values: dict[str, list[ast.expr]] = {}
        self.keyed: dict[str, list[ast.expr]] = {}  # X -> values of X["nvcc"] (=, +=, append)
        self.sinks: list[ast.expr] = []  # nvcc argument lists (extra_cuda_cflags=...)
        self.arg_dicts: list[ast.expr] = []  # extra_compile_args given to an extension or load()
        self.jit_names: set[str] = set()  # names bound to cpp_extension's JIT entry points
        self.jit_modules: set[str] = {"cpp_extension"}  # names bound to the module itself
        for node in _nodes_read(tree, text):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("cpp_extension"):
                self.jit_names |= {a.asname or a.name for a in node.names if a.name in JIT_CALLS}
            elif isinstance(node, ast.Import):  # import torch.utils.cpp_extension as ext
                self.jit_modules |= {
                    a.asname for a in node.names if a.asname and a.name.endswith("cpp_extension")
                }
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, node)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                self._assignment(node)
            elif isinstance(node, ast.Call):
                self._call(node)

    def _assignment(self, node: ast.Assign | ast.AugAssign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None:
            return
        for target in targets:
            if isinstance(target, ast.Name):
                self.values.setdefault(target.id, []).append(node.value)
            elif (
                isinstance(target, ast.Subscript)
                and _is_nvcc(target.slice)
                and isinstance(target.value, ast.Name)
            ):
                self.keyed.setdefault(target.value.id, []).append(node.value)

    def _call(self, node: ast.Call) -> None:
        self.sinks += [k.value for k in node.keywords if k.arg in _SINK_KEYWORDS]
        if _name(node.func) != "setup":  # setuptools.setup() takes no extra_compile_args
            self.arg_dicts += [k.value for k in node.keywords if k.arg == "extra_compile_args"]
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _LIST_METHODS:
            base = func.value
            if isinstance(base, ast.Name):
                self.values.setdefault(base.id, []).extend(node.args)
            elif (
                isinstance(base, ast.Subscript)
                and _is_nvcc(base.slice)
                and isinstance(base.value, ast.Name)
            ):
                self.keyed.setdefault(base.value.id, []).extend(node.args)

    def nvcc_lists(self) -> list[ast.expr]:
        """The expressions that become nvcc's arguments: extra_cuda_cflags, and the "nvcc" entry
        of the extra_compile_args dicts given to a build (a literal, a name, a local function's
        return value)."""
        found = list(self.sinks)
        seen: set[str] = set()
        stack = list(self.arg_dicts)
        while stack:
            for node in value_leaves(stack.pop()):
                if isinstance(node, ast.Dict):
                    found += [v for k, v in zip(node.keys, node.values, strict=True) if _is_nvcc(k)]
                elif isinstance(node, ast.Name) and node.id not in seen:
                    seen.add(node.id)
                    stack.extend(self.values.get(node.id, ()))
                    found.extend(self.keyed.get(node.id, ()))
                elif isinstance(node, ast.Call) and _name(node.func) in self.functions:
                    function = self.functions[_name(node.func)]
                    stack += [
                        n.value for n in walk(function) if isinstance(n, ast.Return) and n.value
                    ]
        return found


def _is_nvcc(key: ast.AST | None) -> bool:
    return isinstance(key, ast.Constant) and key.value == "nvcc"


def read_module(tree: ast.Module, text: str | None = None) -> _Module:
    """What nvcc_arguments and nvcc_gated_jit follow through a module (one walk, shareable);
    with the module's `text`, the expressions walked are only those a call it reads can be in."""
    return _Module(tree, text)


# Where a call _Module reads is written: a keyword that takes nvcc's arguments, or a list method.
_CALL_WORDS = (*_SINK_KEYWORDS, "extra_compile_args", *_LIST_METHODS)


def _nodes_read(tree: ast.Module, text: str | None) -> list[ast.AST]:
    """The nodes of `tree` _Module looks at, in ast.walk's order: every statement, and the
    expressions on the lines that hold a call it reads (an identifier is written as itself
    where whole_tree.ascii_names; elsewhere it may be an NFKC spelling: the text is walked whole)."""
    if text is None or not ascii_names(text):
        return walk(tree)
    return statements_and_lines(tree, word_lines(text, _CALL_WORDS))


def nvcc_arguments(
    tree: ast.Module, module: _Module | None = None
) -> tuple[set[tuple[int, str]], dict[tuple[int, str], str]]:
    """The strings that reach nvcc's arguments: ({(line, value)} written where they flow in,
    {(line of a call, function name): value} for flags a local function returns, reported at
    the call, whose place decides whether a vendor switch gates it). `module`: read_module(tree)
    when the caller has it."""
    module = module or _Module(tree)
    direct: set[tuple[int, str]] = set()
    returned: dict[tuple[int, str], str] = {}
    seen: set[str] = set()
    stack: list[ast.expr] = module.nvcc_lists()
    while stack:
        for node in value_leaves(stack.pop()):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                direct.add((node.lineno, node.value))
            elif isinstance(node, ast.JoinedStr):
                # f"--generate-code=arch=compute_{cap},code=sm_{cap}": the literal parts are
                # what nvcc gets around the fields (the flag's name is in the first one).
                direct.update(
                    (part.lineno, part.value)
                    for part in node.values
                    if isinstance(part, ast.Constant) and isinstance(part.value, str)
                )
            elif isinstance(node, ast.Name) and node.id not in seen:
                seen.add(node.id)
                stack.extend(module.values.get(node.id, ()))
            elif isinstance(node, ast.Call):
                template = _format_template(node)
                if template is not None:
                    # "-ccbin={}".format(cc): the template's literal text is what nvcc gets
                    # around the field, as with an f-string.
                    direct.add(template)
                stack.extend(node.args)
                name = node.func.id if isinstance(node.func, ast.Name) else ""
                function = module.functions.get(name)
                if function is not None:
                    for _, flag in _returned_flags(function, module):
                        returned.setdefault((node.lineno, name), flag)
    return direct, returned


def _format_template(node: ast.Call) -> tuple[int, str] | None:
    """(line, template) of `"...".format(...)`, or None."""
    func = node.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr == "format"
        and isinstance(func.value, ast.Constant)
        and isinstance(func.value.value, str)
    ):
        return func.value.lineno, func.value.value
    return None


def value_leaves(node: ast.expr) -> Iterator[ast.expr]:
    """The leaves an expression's value is made of: list items, both sides of `+` and of
    `x if c else y`, starred items, what a comprehension makes; names, calls and constants are
    leaves."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            stack.extend(node.elts)
        elif isinstance(node, ast.BinOp):
            stack += [node.left, node.right]
        elif isinstance(node, ast.IfExp):
            stack += [node.body, node.orelse]
        elif isinstance(node, ast.Starred):
            stack.append(node.value)
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            stack.append(node.elt)  # [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
        else:
            yield node


def returned_flag_lines(module: _Module, name: str) -> list[tuple[int, str]]:
    """(line, flag) of each nvcc-only flag the local function `name` returns, where it is
    written (the line a maintainer edits; the call that hands them to nvcc is elsewhere)."""
    function = module.functions.get(name)
    return sorted(set(_returned_flags(function, module))) if function is not None else []


def _returned_flags(
    function: ast.FunctionDef | ast.AsyncFunctionDef, module: _Module
) -> Iterator[tuple[int, str]]:
    """(line, flag) of the nvcc-only flags in what a local function returns (its own lists, by
    name, one level)."""
    local = {
        n.id for n in walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    stack = [n.value for n in walk(function) if isinstance(n, ast.Return) and n.value]
    seen: set[str] = set()
    while stack:
        for node in value_leaves(stack.pop()):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield from ((node.lineno, flag) for flag in rejected_flags(node.value))
            elif isinstance(node, ast.Name) and node.id in local and node.id not in seen:
                seen.add(node.id)
                stack.extend(module.values.get(node.id, ()))


def nvcc_gated_jit(tree: ast.Module, module: _Module | None = None) -> Iterator[tuple[ast.If, str]]:
    """`if <nvcc found>: <JIT build>` statements: the test asks for nvcc (CUDA_HOME, torch's
    _find_cuda_home, "nvcc" on the PATH), directly or through a local function, and the body
    starts a cpp_extension JIT build or makes a CUDAExtension, directly or through a local
    function. On a ROCm machine
    (hipcc, no nvcc) the build never starts. Yields (statement, how the test asks)."""
    module = module or _Module(tree)
    for node in statement_nodes(tree):  # an `if` is a statement: ast.walk's order for them
        if not isinstance(node, ast.If):
            continue
        probe = _asks_for_nvcc(node.test, module)
        if probe and any(_builds(s, module) for s in node.body):
            yield node, probe


def nvcc_gates(tree: ast.Module) -> Iterator[tuple[ast.If, RocmBuild]]:
    """Every `if` whose test asks for nvcc (as nvcc_gated_jit reads it), with the module's
    RocmBuild evaluator for its test."""
    module = _Module(tree)
    build = RocmBuild(tree)
    for node in walk(tree):  # whole_tree's walk: the module's node list, kept with its tree
        if isinstance(node, ast.If) and node.body and _asks_for_nvcc(node.test, module):
            yield node, build


def _asks_for_nvcc(test: ast.expr, module: _Module) -> str:
    for node in walk(test):
        if isinstance(node, ast.Name) and node.id in _NVCC_PROBES:
            return node.id
        if isinstance(node, ast.Constant) and node.value == "nvcc":
            return "looks for nvcc"  # shutil.which("nvcc"), a path ending in bin/nvcc
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            function = module.functions.get(node.func.id)
            if function is not None and _probes_nvcc(function):
                return f"{node.func.id}() looks for nvcc"
    return ""


def _probes_nvcc(function: ast.AST) -> bool:
    for node in walk(function):
        if isinstance(node, ast.Name) and node.id in _NVCC_PROBES:
            return True
        if isinstance(node, ast.Call) and _name(node.func) in _NVCC_PROBES:
            return True
        if isinstance(node, ast.Constant) and node.value == "nvcc":
            return True
    return False


def _builds(statement: ast.stmt, module: _Module) -> bool:
    for node in walk(statement):
        if isinstance(node, ast.Call):
            if _is_jit(node.func, module):
                return True
            function = module.functions.get(_name(node.func))
            if function is not None and any(
                isinstance(n, ast.Call) and _is_jit(n.func, module) for n in walk(function)
            ):
                return True
    return False


def _is_jit(func: ast.AST, module: _Module) -> bool:
    """A call of cpp_extension's load/load_inline/_jit_compile (not json.load or torch.load), or
    of its CUDAExtension: in a setup.py, `if <nvcc found>: ext_modules.append(CUDAExtension(...))`
    leaves the GPU extension out of every ROCm install the same way."""
    if _name(func) == "CUDAExtension":
        return True
    if isinstance(func, ast.Name):
        return func.id in module.jit_names
    if isinstance(func, ast.Attribute) and func.attr in JIT_CALLS:
        base = func.value
        return (isinstance(base, ast.Attribute) and base.attr == "cpp_extension") or (
            isinstance(base, ast.Name) and base.id in module.jit_modules
        )
    return False


def _name(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""
