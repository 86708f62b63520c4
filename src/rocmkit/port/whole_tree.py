"""A Python file's whole syntax tree, parsed once however many checks ask for it, and the walks
over it that keep `ast.walk`'s order: the node lists the build passes filter, a walk that leaves
out the expressions on lines no check can match, and the statements a check needs when the whole
file need not be parsed at all (`holding`); and `argument_defaults`, a function's defaulted
parameters, which several checks read.
"""

from __future__ import annotations

import ast
import bisect
import re
import unicodedata
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from rocmkit.port import pieces

T = TypeVar("T")

# Fields that never hold a node, by the grammar (Python's Parser/Python.asdl): identifiers, ints,
# type comments, and `ctx` (Load/Store/Del: one shared instance per kind, with no children, that no
# check looks for).
LEAF_FIELDS = frozenset(
    {"ctx", "id", "attr", "arg", "name", "asname", "module", "level", "rest", "kind"}
    | {"type_comment", "is_async", "conversion", "simple"}
)
# A constant's value holds no node.
_NODE_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {ast.Constant: ()}
_WALKS: weakref.WeakKeyDictionary[ast.AST, list[ast.AST]] = weakref.WeakKeyDictionary()


def node_fields(kind: type[ast.AST]) -> tuple[str, ...]:
    """The fields of a node type that can hold a node (see LEAF_FIELDS)."""
    fields = _NODE_FIELDS.get(kind)
    if fields is None:
        fields = _NODE_FIELDS[kind] = tuple(f for f in kind._fields if f not in LEAF_FIELDS)
    return fields


def argument_defaults(arguments: ast.arguments) -> list[tuple[ast.arg, ast.expr]]:
    """Each parameter of a function or lambda that has a default, with that default."""
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = list(
        zip(
            positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True
        )
    )
    return pairs + [
        (a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d
    ]


# Calls that end the process (sys.exit, os._exit, raise SystemExit(...) written as a call, abort).
_EXIT_CALLS = frozenset({"exit", "_exit", "SystemExit", "abort", "quit"})


def module_statements(tree: ast.Module) -> list[ast.stmt]:
    """The statements a module runs when imported, in source order: its own and those nested in
    its top-level if/else, try (handlers, else, finally) and with blocks; not a function's or a
    class's body."""
    found: list[ast.stmt] = []
    stack = list(reversed(tree.body))
    while stack:
        statement = stack.pop()
        found.append(statement)
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            nested = [*statement.body, *getattr(statement, "orelse", [])]
            nested += [s for h in getattr(statement, "handlers", []) for s in h.body]
            nested += getattr(statement, "finalbody", [])
            stack.extend(reversed(nested))
    return found


def call_name(func: ast.AST) -> str:
    """The name a call is made by: `f` for `f(...)`, `attr` for `x.attr(...)`, '' otherwise."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def exits(statement: ast.stmt) -> bool:
    """Whether a statement leaves by raising or by ending the process (`raise ...`,
    `sys.exit(...)`, `os._exit(...)`, `quit()`)."""
    if isinstance(statement, ast.Raise):
        return True
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    return call_name(statement.value.func) in _EXIT_CALLS


def word_lines(text: str, words: Iterable[str]) -> list[int]:
    """Sorted line numbers (1-based) of the lines that hold one of `words`."""
    positions = set()
    for word in words:
        position = text.find(word)
        while position >= 0:
            positions.add(position)
            position = text.find(word, position + 1)
    return pieces.line_numbers(text, sorted(positions))


def spans(node: ast.AST, lines: list[int]) -> bool:
    """Whether `node` covers one of the sorted `lines` (a node without a position: yes)."""
    first = getattr(node, "lineno", None)
    if first is None:
        return True
    i = bisect.bisect_left(lines, first)
    return i < len(lines) and lines[i] <= (getattr(node, "end_lineno", None) or first)


def statements_and_lines(root: ast.AST, lines: list[int]) -> list[ast.AST]:
    """walk(root) less the expressions that span none of `lines`, with everything under them:
    every statement (and `except` handler), and of the expressions those a word on one of
    `lines` can be in, in
    walk's order (a pruned breadth-first walk keeps it for the nodes it keeps)."""
    # spans() inline, and each node's fields looked up once per type (a call and a generator per
    # child cost more than the test itself in a build module of thousands of nodes).
    nodes, node_type, statement = [root], ast.AST, (ast.stmt, ast.excepthandler)
    fields_of, bisect_left, count = _NODE_FIELDS, bisect.bisect_left, len(lines)
    append = nodes.append
    for node in nodes:
        kind = type(node)
        fields = fields_of.get(kind)
        if fields is None:
            fields = node_fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            for v in value if isinstance(value, list) else (value,):
                if not isinstance(v, node_type):
                    continue
                if not isinstance(v, statement):
                    first = getattr(v, "lineno", None)
                    if first is not None:
                        i = bisect_left(lines, first)
                        if i >= count or lines[i] > (getattr(v, "end_lineno", None) or first):
                            continue
                append(v)
    return nodes


def children(node: ast.AST) -> list[ast.AST]:
    """ast.iter_child_nodes(node) less the expression contexts (Load, Store), as a list."""
    found: list[ast.AST] = []
    for name in node_fields(type(node)):
        value = getattr(node, name, None)
        if isinstance(value, list):
            found.extend(v for v in value if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a module or function, not those of the functions (and lambdas) defined in it,
    nor those definitions themselves: what runs when the scope runs."""
    stack = children(scope)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        yield node
        stack.extend(children(node))


def walk(root: ast.AST) -> list[ast.AST]:
    """The nodes ast.walk(root) gives, in its breadth-first order, less the expression contexts
    (Load, Store), as a list: about twice as fast (ast.walk runs two generators per node). A
    module's list is kept while its tree lives: the build passes each look for other nodes."""
    if isinstance(root, ast.Module) and (known := _WALKS.get(root)) is not None:
        return known
    nodes = walk_from([root])
    if isinstance(root, ast.Module):
        _WALKS[root] = nodes
    return nodes


def walk_from(roots: list[ast.AST]) -> list[ast.AST]:
    """walk() from several roots at once: breadth first, as ast.walk of a node holding them."""
    nodes, node_type, fields_of = list(roots), ast.AST, _NODE_FIELDS
    append = nodes.append
    for node in nodes:  # a list grown while it is iterated: breadth first, as ast.walk
        kind = type(node)
        fields = fields_of.get(kind)
        if fields is None:
            fields = node_fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for v in value:
                    if isinstance(v, node_type):
                        append(v)
            elif isinstance(value, node_type):
                append(value)
    return nodes


class Whole:
    """A file's whole syntax tree, parsed once however many checks ask for it (the nvcc flow of
    an extension build, the CUDA_HOME passes, setup.py's lists): in a large build module that
    parse costs as much as the rest of its scan."""

    __slots__ = ("_derived", "_error", "_tree", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._tree: ast.Module | None = None
        self._error: SyntaxError | ValueError | None = None
        self._derived: dict[Callable[[Whole], object], object] = {}

    @property
    def parsed(self) -> bool:
        return self._tree is not None

    def tree(self) -> ast.Module:
        """The tree; SyntaxError or ValueError (each time) when the file does not parse."""
        if self._tree is None:
            if self._error is None:
                try:
                    self._tree = pieces.parse(self.text)
                except (SyntaxError, ValueError) as exc:
                    self._error = exc
            if self._error is not None:
                raise self._error
        assert self._tree is not None
        return self._tree

    def derived(self, make: Callable[[Whole], T]) -> T:
        """make(self), computed once (facts several checks read: the build's flow of flags)."""
        if make not in self._derived:
            self._derived[make] = make(self)
        return self._derived[make]  # type: ignore[return-value]


def holding(text: str, offsets: list[int], whole: Whole | None = None) -> ast.Module | None:
    """A tree of the top-level statements (decorators included) that hold `offsets`, at their
    own lines: every node there is the node a whole-file parse gives, in ast.walk's order. The
    whole tree when `whole` has been parsed, the statements are most of the file or do not parse
    alone; None when the file does not parse."""
    whole = whole or Whole(text)
    if not whole.parsed:
        source = pieces.statements_holding(text, sorted(offsets))
        if source is not None:
            try:
                return pieces.parse(source)
            except (SyntaxError, ValueError):
                pass  # a wrong cut: the whole file
    try:
        return whole.tree()
    except (SyntaxError, ValueError):
        return None


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def ascii_names(text: str) -> bool:
    """Whether every identifier in `text` that names an ASCII name is spelled in ASCII, so that
    a search of the text for the name finds it: Python reads identifiers in NFKC form, where
    a fullwidth `ｐ` is `p`; no character of the text may have an ASCII character in its NFKC
    form (emoji, accented or CJK text in strings and comments: none has)."""
    if text.isascii():
        return True
    return not any(
        any(c.isascii() for c in unicodedata.normalize("NFKC", char))
        for char in set(_NON_ASCII.findall(text))
    )
