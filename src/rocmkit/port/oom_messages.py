"""An out-of-memory error recognised by the words of CUDA's message only.

PyTorch's caching allocator raises `torch.OutOfMemoryError` with "CUDA out of memory. Tried to
allocate ..." (c10/cuda/CUDACachingAllocator.cpp), and a failed CUDA call raises "CUDA error: out
of memory" (C10_CUDA_CHECK, the runtime's cudaErrorMemoryAllocation text). A ROCm build of torch
is that source hipified: its messages say "HIP out of memory" and "HIP error: out of memory". A
test that looks for the CUDA words in an exception's text (`"CUDA out of memory" in str(e)`, or
`any(s in str(e) for s in [...])` over such words) is never true on ROCm, so the retry with a
smaller batch, the OOM report or the microbatch search it guards never runs there.

Left alone: an `assert` (a test suite's expectation about a text, not code that acts on the
error), a test beside another way to know the error (`or isinstance(e, OutOfMemoryError)`, a
second phrase such as "out of memory" or "Tried to allocate" that both builds print), and a
module that names HIP's message itself. Messages the project prints or raises are words, not
tests: only the left side of `in` (and the strings a comprehension feeds there) is read.
"""

from __future__ import annotations

import ast
import collections
import re

from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import Rule

_CUDA_WORDS = ("CUDA out of memory", "CUDA error: out of memory")
# Also "CUDA" and "out of memory" tested together (`"CUDA" in msg and "out of memory" in msg`,
# Lightning's is_cuda_out_of_memory): the conjunction needs CUDA's word. Every form holds both.
TRIGGERS = ("out of memory",)
# What a ROCm torch says (the hipified messages): a test that also accepts a word of these, or
# the error's class name, holds on ROCm too.
_HIP_MESSAGES = (
    "HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 191.98 GiB",
    "HIP error: out of memory",
    "torch.OutOfMemoryError",
)


# Every string such a test looks for starts with CUDA's words or is "CUDA" / "CUDA error" /
# "CUDA error:", so a quote stands right before them in the source (an f, r or b prefix comes
# before the quote).
_QUOTED_WORDS = re.compile(r"""["']CUDA(?: out of memory| error: out of memory|["']| error["':])""")


def may_test(text: str) -> bool:
    """Whether a module can hold such a test: it quotes CUDA's words, names out of memory, and
    not HIP's message (decided on the text, before any parse)."""
    return (
        "out of memory" in text
        and "CUDA" in text
        and "HIP out of memory" not in text
        and "HIP error: out of memory" not in text
        and _QUOTED_WORDS.search(text) is not None
    )


def scan_oom_tests(tree: ast.Module, text: str, rule: Rule) -> list[Hit]:
    """Each test of an exception's text for CUDA's out-of-memory words alone."""
    if not may_test(text):
        return []
    # One walk: each node's parent, and the `and`s and `in` tests in ast.walk's order.
    parents: dict[int, ast.AST] = {}
    conjunctions: list[ast.BoolOp] = []
    tests: list[ast.Compare] = []
    queue: collections.deque[ast.AST] = collections.deque([tree])
    while queue:
        node = queue.popleft()
        if isinstance(node, ast.BoolOp):
            conjunctions.append(node)
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            tests.append(node)
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
            queue.append(child)
    found = [
        h
        for node in conjunctions
        if (h := _conjunction_hit(node, rule)) is not None and not _has_other_way(node, parents)
    ]
    for node in tests:
        words = _tested_words(node, parents)
        cuda = [w for w in words if w.startswith(_CUDA_WORDS)]
        if not cuda or any(_accepts_either(w) for w in words if w not in cuda):
            continue
        if _has_other_way(node, parents) or _asserted(node, parents):
            continue
        why = f"{cuda[0]!r} tested in an error's text: ROCm's torch says 'HIP out of memory'"
        found.append(hit(node.lineno, node.col_offset + 1, rule, why))
    return found


def _asserted(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether the test is an `assert`'s: a test suite's expectation about a text the project
    makes (a redacted log, a formatted report), not code that recognises the error and acts."""
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, ast.stmt):
        parent = parents.get(id(parent))
    return isinstance(parent, ast.Assert)


def _conjunction_hit(node: ast.BoolOp, rule: Rule) -> Hit | None:
    """`"CUDA" in msg and "out of memory" in msg`: true of CUDA's message only."""
    if not isinstance(node.op, ast.And):
        return None
    tests = [
        (v, v.left.value)
        for v in node.values
        if isinstance(v, ast.Compare)
        and isinstance(v.ops[0], ast.In)
        and isinstance(v.left, ast.Constant)
        and isinstance(v.left.value, str)
    ]
    cuda = [v for v, word in tests if word in ("CUDA", "CUDA error", "CUDA error:")]
    if not cuda or not any("out of memory" in word for _, word in tests):
        return None
    why = "'CUDA' and 'out of memory' tested together in an error's text: ROCm's torch says 'HIP'"
    return hit(cuda[0].lineno, cuda[0].col_offset + 1, rule, why)


def _tested_words(node: ast.Compare, parents: dict[int, ast.AST]) -> list[str]:
    """The strings looked for: the left constant, or those a comprehension feeds as the left
    name (`any(s in str(e) for s in ["CUDA out of memory", ...])`)."""
    left = node.left
    if isinstance(left, ast.Constant) and isinstance(left.value, str):
        return [left.value]
    parent = parents.get(id(node))
    if not isinstance(left, ast.Name) or not isinstance(
        parent, (ast.GeneratorExp, ast.ListComp, ast.SetComp)
    ):
        return []
    for generator in parent.generators:
        fed = generator.iter
        if (
            isinstance(generator.target, ast.Name)
            and generator.target.id == left.id
            and isinstance(fed, (ast.List, ast.Tuple, ast.Set))
        ):
            return [
                e.value
                for e in fed.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
    return []


def _accepts_either(word: str) -> bool:
    """Whether a looked-for word is in what a ROCm torch says (`"allocate"`, `"out of memory"`)."""
    return bool(word.strip()) and any(word in message for message in _HIP_MESSAGES)


def _has_other_way(node: ast.expr, parents: dict[int, ast.AST]) -> bool:
    """Whether an `or` above the test offers another way to recognise the error: an isinstance
    check, or another string test whose words both builds print."""
    child: ast.AST = node
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, (ast.stmt, ast.Lambda)):
        if isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.Or):
            for other in parent.values:
                if other is child:
                    continue
                for sub in ast.walk(other):
                    if isinstance(sub, ast.Call) and getattr(sub.func, "id", "") == "isinstance":
                        return True
                    if (
                        isinstance(sub, ast.Constant)
                        and isinstance(sub.value, str)
                        and _accepts_either(sub.value)
                    ):
                        return True
        child, parent = parent, parents.get(id(parent))
    return False
