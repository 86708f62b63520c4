"""SkyPilot task YAML: the container it runs in and the shell scripts it runs.

A SkyPilot task (the YAML `sky launch` takes) names its per-node `resources:` and two shell
scripts, `setup:` and `run:`, that SkyPilot runs with bash on every node of the cluster it
provisions. `resources.image_id: docker:<image>` runs them inside that container image (the
SkyPilot YAML reference and its "Using Docker Containers" guide). On an AMD cluster a CUDA-only
image (nvidia/cuda, nvcr.io/nvidia, vLLM's CUDA build: vendor_images.cuda_image) has no ROCm
runtime, and the scripts' commands (nvidia-smi, pip installs from a CUDA wheel index, docker
--gpus) break as they would in any shell script, so the scripts are read as shell scripts, at
their own lines in the YAML file.

A file is such a task when it has a top-level `resources:` key and a top-level `setup:` or
`run:` key (a byte test on the file's head); CI pipelines are not read (k8s_resources).
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit
from rocmkit.port.k8s_resources import image_hits
from rocmkit.port.rules import RuleSet
from rocmkit.port.text_scan import scan_text

KIND = "skypilot"
_RESOURCES = re.compile(rb"(?m)^resources[ \t]*:")
_SCRIPT_BYTES = re.compile(rb"(?m)^(?:setup|run)[ \t]*:[ \t]*\S")
# `image_id: docker:<image>` (quotes allowed); a cloud image id (ami-..., projects/...) has no
# `docker:` and is not a container.
_DOCKER_IMAGE = re.compile(
    r"""^[ \t]*(?:-[ \t]+)?image_id[ \t]*:[ \t]*["']?docker:([^\s"'#]+)""", re.M
)
# A top-level script key: a block scalar (`run: |`, `setup: |-`, `run: >`) or a one-line command.
_SCRIPT_KEY = re.compile(r"^(setup|run)[ \t]*:[ \t]*(.*)$")
_BLOCK = re.compile(r"^[|>][+-]?[0-9]?[ \t]*(?:#.*)?$")


def is_task(head: bytes) -> bool:
    """Whether a YAML file's first bytes hold a SkyPilot task's top-level keys."""
    return bool(_RESOURCES.search(head) and _SCRIPT_BYTES.search(head))


def scripts(text: str) -> str:
    """The task's `setup:` and `run:` scripts as one shell text whose line numbers are the YAML
    file's: each script line dedented at its own line, every other line left empty."""
    lines = text.split("\n")
    out = [""] * len(lines)
    i = 0
    while i < len(lines):
        match = _SCRIPT_KEY.match(lines[i])
        if match is None:
            i += 1
            continue
        value = match.group(2).strip()
        if value and not _BLOCK.match(value):  # `run: python train.py`
            out[i] = value.strip("'\"")
            i += 1
            continue
        i += 1
        indent: int | None = None
        while i < len(lines):
            line = lines[i]
            if line.strip():
                column = len(line) - len(line.lstrip(" "))
                if column == 0:
                    break  # the next top-level key
                indent = column if indent is None else indent
                out[i] = line[min(indent, column) :]
            i += 1
    return "\n".join(out)


def scan_task(text: str, rules: RuleSet) -> list[Hit]:
    """A task's CUDA-only container image (cuda-image) and its scripts' shell findings."""
    hits: list[Hit] = []
    rule = rules.by_id.get("cuda-image")
    if rule is not None and "docker:" in text:
        places = [(m.start(), m.group(0).strip(), m.group(1)) for m in _DOCKER_IMAGE.finditer(text)]
        hits += image_hits(text, rule, places, rocm_beside=False)
    shell = scripts(text)
    if shell.strip():
        hits += scan_text(shell, "shell", rules)
    return hits
