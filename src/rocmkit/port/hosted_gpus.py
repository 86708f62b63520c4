"""Code that runs on a hosted GPU cloud whose GPUs are all NVIDIA's.

Modal runs a function in its own cloud containers on the GPU type its decorator names, and every
type it offers is an NVIDIA GPU (T4, L4, A10, L40S, A100, RTX PRO 6000, H100, H200, B200:
https://modal.com/docs/guide/gpu). A module that builds a Modal app describes that remote
container (its image, its installs, its nvidia-smi calls): a ROCm user's machine never runs it,
so its findings are kept at info. A project whose own package is named `modal` is not Modal.
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit, all_info

# A top-level import of the modal client (not a relative `.modal` module of the project)
_IMPORTS_MODAL = re.compile(r"(?m)^(?:import[ \t]+modal\b|from[ \t]+modal(?:\.\w+)*[ \t]+import\b)")
NOTE = "a Modal app: it runs in Modal's cloud, whose GPUs are all NVIDIA's"


def builds_modal_app(text: str, own: frozenset[str]) -> bool:
    """Whether a Python module imports the Modal client at module level."""
    return "modal" not in own and "modal" in text and _IMPORTS_MODAL.search(text) is not None


def demote_modal_app(text: str, own: frozenset[str], hits: list[Hit]) -> list[Hit]:
    """`hits` of a Python module, at info where the module builds a Modal app."""
    if not hits or not builds_modal_app(text, own):
        return hits
    return all_info(hits, NOTE)
