"""What port knows about a project before it reads a line: its own packages, and the vendor
structure it already has (ROCm and NVIDIA variants of the same file, NVIDIA-only folders).

A finding in the NVIDIA variant of a file that has a ROCm counterpart (docker/Dockerfile beside
docker/Dockerfile.rocm, requirements/cuda.txt beside requirements/rocm.txt) is the project's
NVIDIA path, not a porting hazard: it is kept at info with "has a ROCm counterpart: X".
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# Name tokens (split on - _ . and path separators) that mark a vendor variant of a file.
ROCM_TOKENS = frozenset({"rocm", "hip", "amd", "mi300", "mi300x", "mi250", "mi200", "mi355"})
NVIDIA_TOKENS = frozenset({"cuda", "nvidia", "cu", "gpu", "nv"})
# Folder names that hold only NVIDIA-specific code by definition of the product they name.
NVIDIA_ONLY_DIRS = frozenset(
    {"nvidia", "hopper", "blackwell", "sm90", "sm100", "tensorrt", "trtllm"}
)
_TOKEN = re.compile(r"[-_.]+")
_CU_TAG = re.compile(r"^cu\d+$|^cuda\d+$")


@dataclass(frozen=True, kw_only=True)
class ProjectContext:
    """Facts about the scanned tree that change what a finding means."""

    own_packages: frozenset[str] = frozenset()
    counterparts: dict[str, str] = field(default_factory=dict)  # rel path -> ROCm variant
    cuda_only_sources: dict[str, str] = field(default_factory=dict)  # rel path -> where decided

    def note_for(self, rel: str) -> str:
        """Why every finding of this file is info, or '' when it is not."""
        counterpart = self.counterparts.get(rel)
        if counterpart:
            return f"has a ROCm counterpart: {counterpart}"
        built = self.cuda_only_sources.get(rel)
        if built:
            return f"built only for CUDA ({built}: the ROCm build leaves it out)"
        parts = rel.split("/")
        for part in parts[:-1]:
            if part.lower() in NVIDIA_ONLY_DIRS:
                return f"NVIDIA-only part of the project ({part}/)"
        for part in parts:
            if any(t in ROCM_TOKENS for t in _tokens(part)):
                return f"ROCm-specific by its name ({part})"
        return ""


def build_context(root: str, files: Iterable[tuple[str, str, str]]) -> ProjectContext:
    """The context of a scan over `files` ((path, rel, kind) from iter_files) under `root`."""
    files = list(files)
    own: set[str] = set()
    counterparts: dict[str, str] = {}
    for path, rel, kind in files:
        if kind == "python":
            top = rel.split("/")
            if len(top) > 1 and top[0] == "src":
                top = top[1:]
            directory = os.path.dirname(path)
            if len(top) > 1 and os.path.exists(os.path.join(os.path.dirname(path), "__init__.py")):
                own.add(top[0])
            elif len(top) == 1 and top[0] != "setup.py":
                own.add(top[0][:-3])  # a top-level module
            del directory
        # A Python module is a vendor variant only if its own name says so (ops_cuda.py beside
        # ops_rocm.py); configuration files also pair a plain name with a ROCm one.
        if kind == "python" and not any(t in NVIDIA_TOKENS for t in _tokens(rel)):
            continue
        counterpart = rocm_counterpart(path)
        if counterpart:
            rel_dir = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
            counterparts[rel] = rel_dir + counterpart
    own |= enclosing_packages(root)
    cuda_only: dict[str, str] = {}
    has_sources = any(kind in ("cuda", "header") for _, _, kind in files)
    for path, rel, kind in files:
        if has_sources and kind == "python" and os.path.basename(rel) == "setup.py":
            prefix = rel[: -len("setup.py")]
            for source, line in cuda_only_sources(path).items():
                cuda_only[prefix + source] = f"{rel}:{line}"
    return ProjectContext(
        own_packages=frozenset(own), counterparts=counterparts, cuda_only_sources=cuda_only
    )


_ROCM_NAME = re.compile(r"(?i)(?:^|_)(?:is_?)?(?:hip|rocm)(?:_|$)")
_SOURCE = re.compile(r"\.(?:cu|cuh|cpp|cc)$")


def cuda_only_sources(setup_py: str) -> dict[str, str | int]:
    """Extension sources a setup.py compiles only on the CUDA side of its ROCm switch
    (`if not ROCM_VERSION: CUDAExtension(..., ["marlin.cu"])`), with the line of the switch. Here
    an environment variable counts: it is what the build itself branches on."""
    try:
        with open(setup_py, encoding="utf-8") as f:
            text = f.read()
        if ".cu" not in text or not any(t in text for t in ("ROCM", "rocm", "HIP", "hip")):
            return {}
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return {}
    cuda_side: dict[str, int] = {}
    rocm_side: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        polarity = _rocm_polarity(node.test)
        if polarity is None:
            continue
        cuda_body, rocm_body = (
            (node.body, node.orelse) if polarity < 0 else (node.orelse, node.body)
        )
        for source in _sources(cuda_body):
            cuda_side.setdefault(source, node.lineno)
        rocm_side.update(_sources(rocm_body))
    return {s: line for s, line in cuda_side.items() if s not in rocm_side}


def _rocm_polarity(test: ast.AST) -> int | None:
    """+1 when the test is true on ROCm (`if IS_ROCM`), -1 when false (`if not ROCM_VERSION`)."""
    parts: list[ast.AST] = (
        list(test.values)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
        else [test]
    )
    for part in parts:
        negated = isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not)
        operand = part.operand if negated else part  # type: ignore[attr-defined]
        names = [
            n.id if isinstance(n, ast.Name) else n.attr
            for n in ast.walk(operand)
            if isinstance(n, (ast.Name, ast.Attribute))
        ]
        if any(_ROCM_NAME.search(name) for name in names):
            return -1 if negated else 1
    return None


def _sources(statements: list[ast.stmt]) -> set[str]:
    found = set()
    for statement in statements:
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _SOURCE.search(node.value)
            ):
                found.add(node.value.lstrip("./"))
    return found


def enclosing_packages(root: str) -> set[str]:
    """Packages a scanned folder or file sits inside (scanning xformers/ops/ alone still knows it
    is xformers): the top-most folder above it that holds an __init__.py."""
    directory = os.path.abspath(root if os.path.isdir(root) else os.path.dirname(root))
    top = ""
    while os.path.exists(os.path.join(directory, "__init__.py")):
        top = os.path.basename(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return {top} if top else set()


def _tokens(name: str) -> list[str]:
    return [t for t in _TOKEN.split(name.lower()) if t]


def _strip(tokens: list[str], vendor: frozenset[str]) -> tuple[str, ...]:
    return tuple(t for t in tokens if t not in vendor and not _CU_TAG.match(t))


@functools.lru_cache(maxsize=4096)
def _listdir(directory: str) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(directory)))
    except OSError:
        return ()


def rocm_counterpart(path: str) -> str:
    """The sibling that is this file's ROCm variant ('' if none): same name once the vendor
    tokens are taken out, the sibling's name holding a ROCm token and this one's none."""
    directory, name = os.path.split(path)
    tokens = _tokens(name)
    if any(t in ROCM_TOKENS for t in tokens):
        return ""
    # A folder variant: .../cuda/x.txt beside .../rocm/x.txt
    mine = _strip(tokens, NVIDIA_TOKENS)
    for sibling in _listdir(directory or "."):
        if sibling == name:
            continue
        theirs = _tokens(sibling)
        # Same extension, except Dockerfile / Dockerfile.rocm, whose "extension" is the variant.
        same_kind = os.path.splitext(sibling)[1] == os.path.splitext(name)[1] or (
            "ockerfile" in name
        )
        if (
            same_kind
            and any(t in ROCM_TOKENS for t in theirs)
            and _strip(theirs, ROCM_TOKENS) == mine
        ):
            return sibling
    parent, folder = os.path.split(directory)
    if folder.lower() in NVIDIA_TOKENS:
        for sibling in _listdir(parent or "."):
            if sibling.lower() in ROCM_TOKENS and os.path.exists(
                os.path.join(parent, sibling, name)
            ):
                return f"../{sibling}/{name}"
    return ""
