"""OpenCV's DNN module asked for its CUDA back end.

OpenCV's DNN module runs a network on the back end and target a program picks
(`net.setPreferableBackend(cv2.dnn.DNN_BACKEND_CUDA)`, `net.setPreferableTarget(
cv2.dnn.DNN_TARGET_CUDA)`; OpenCV's dnn.hpp lists them). The CUDA back end exists only in an
OpenCV built with CUDA and cuDNN (the PyPI opencv-python wheels have none, and there is no HIP
build): on an AMD GPU the network silently runs on the CPU. OpenCV's OpenCL target
(`DNN_TARGET_OPENCL`, `DNN_TARGET_OPENCL_FP16`) runs on AMD GPUs. A module that also names an
OpenCL target chooses between them: info. A table that maps a user's choice to the constants
(`{"cuda": (DNN_BACKEND_CUDA, DNN_TARGET_CUDA), ...}`) asks for nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

RULE = "opencv-dnn-cuda"
TRIGGERS = ("DNN_BACKEND_CUDA", "DNN_TARGET_CUDA")
_SETTERS = frozenset({"setPreferableBackend", "setPreferableTarget"})
_CUDA = frozenset({"DNN_BACKEND_CUDA", "DNN_TARGET_CUDA", "DNN_TARGET_CUDA_FP16"})


def cuda_choices(tree: ast.AST) -> Iterator[tuple[ast.Call, str]]:
    """Each setPreferableBackend/Target call given one of the CUDA constants, and its name."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SETTERS
            and node.args
        ):
            argument = node.args[0]
            name = argument.attr if isinstance(argument, ast.Attribute) else ""
            if isinstance(argument, ast.Name):
                name = argument.id
            if name in _CUDA:
                yield node, f"{node.func.attr}({name})"


def names_opencl(text: str) -> bool:
    """Whether the module names an OpenCL target, the DNN module's path to an AMD GPU."""
    return "DNN_TARGET_OPENCL" in text
