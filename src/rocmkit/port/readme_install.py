"""Install commands in the project's own top-level README (README.md, README.rst), at warn at most.

The README's install line is what a user copies into a shell: `pip install torch==2.1.1+cu118
--index-url https://download.pytorch.org/whl/cu118` installs the CUDA build of torch as the same
line in a requirements file would, so each command is read with the requirement rules and the
PyTorch index rule. Only command lines are read: a line that starts (after a `$ `/`> ` prompt or
`!`) with `pip install`, `pip3 install`, `python -m pip install`, `uv pip install` or `conda install`,
with its backslash continuations; prose, tables and other code are blanked.

Where the README gives no ROCm/AMD install (the ROCm index of PyTorch, repo.radeon.com, a `rocm`
extra or package, an AMD install route in prose), its CUDA command is the documented install and an
AMD user who follows it gets a torch without GPU support: warn (needs another install; an error
only where the project's own requirements or build give it). Where it does give one, the CUDA
command is one of two routes: info. From session fourteen to twenty-nine every such line was info.
The corpus's annotators split by their brief: up to round V (test338), told that prose in a README
is no hazard, they listed 15 of the 133 README install lines as hazards (43 as not hazards); from
round W (test339), not told so, 30 of 39 (6 not hazards). The severity follows port's own scale
(warn: degraded or needs another install), not either count (docs/port.md, session thirty).
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit, all_info, demoted
from rocmkit.port.requirements import pip_install_hits
from rocmkit.port.rules import RuleSet
from rocmkit.port.text_scan import text_rule_hits

FILE_NAMES = frozenset({"README.md", "README.rst", "readme.md", "Readme.md"})
# The rules whose verdict a README line carries by definition: PyTorch's CUDA wheel index and the
# `+cuXXX` local versions of its CUDA builds. Package names alone were left out (an optional
# integration line and the project's own `pip install NAME[extra]` read alike).
RULE_IDS = frozenset({"torch-cuda-index", "cuda-local-version"})
# Round sixteen (b): JAX's `cuda*` extras, which install its CUDA plugin by definition
# (docs.jax.dev installation: `jax[cuda12]` pulls jax-cuda12-plugin and NVIDIA's wheels). A
# conda line's CUDA toolkit was tried and left out: READMEs of CUDA-first projects (sparse
# convolution, RAPIDS, a "GPU support" section) give it where the seen lists count no hazard.
RULE_IDS |= {"jax-cuda-extra"}
_COMMAND = re.compile(
    r"^\s*(?:[$>]\s*|!\s*)?(?:sudo\s+)?"
    r"(?:(?:python3?\s+-m\s+)?pip3?\s+install|uv\s+pip\s+install|conda\s+install|mamba\s+install)\b"
)
# A ROCm install the README gives too: a ROCm command, or prose naming an AMD/ROCm install route.
_ROCM = re.compile(
    r"(?i)download\.pytorch\.org/whl/(?:nightly/)?rocm|repo\.radeon\.com|\brocm"
    r"|\bAMD\b[^\n]*\b(?:install|guide|GPUs?)\b|\binstall[^\n]*\bAMD\b"
)


def command_lines(text: str) -> str:
    """The README with every line that is not an install command (or its continuation) blanked."""
    kept: list[str] = []
    continued = False
    for line in text.splitlines():
        if continued or _COMMAND.match(line):
            # a Markdown prompt or notebook bang is not part of the command
            kept.append(re.sub(r"^\s*(?:[$>]\s*|!\s*)", "", line).replace("`", " "))
            continued = line.rstrip().endswith("\\")
            continue
        kept.append("")
        continued = False
    return "\n".join(kept)


def scan_readme(text: str, rules: RuleSet) -> list[Hit]:
    """Findings of the README's install commands; info where it also gives a ROCm install."""
    if "install" not in text or "cu" not in text:
        return []
    commands = command_lines(text)
    if not commands.strip():
        return []
    found = pip_install_hits(commands, rules) + text_rule_hits(commands, "shell", rules)
    hits = [h for h in found if h.rule.id in RULE_IDS]
    rocm = _ROCM.search(text)
    if rocm is not None:
        line = text.count("\n", 0, rocm.start()) + 1
        return all_info(hits, f"the README gives a ROCm/AMD install too (line {line})")
    # The only install the README documents: an AMD user who follows it gets no GPU (warn, the
    # command degrades; it is not the project's own build, which is judged where it is written).
    why = "the README's only install: add the ROCm command beside it"
    return [h if h.severity != "error" else demoted(h, "warn", why) for h in hits]
