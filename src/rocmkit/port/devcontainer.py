"""A Dev Container definition (`.devcontainer/devcontainer.json`, `.devcontainer.json`), read as
the Development Container Specification defines it (containers.dev/implementors/json_reference).

The file is JSON with comments (JSONC): `//` and `/* */` comments and trailing commas are allowed.
What decides where the container runs:
  image    the image the container starts from: an NVIDIA CUDA image (the same definition as a
           Dockerfile's `FROM`: port's cuda-base-image pattern) has no ROCm runtime;
  runArgs  arguments given to `docker run`: `--gpus`, `--runtime=nvidia` and NVIDIA's CDI device
           name `--device=nvidia.com/gpu=...` need the NVIDIA Container Toolkit; an AMD GPU is
           given with `--device=/dev/kfd --device=/dev/dri` (container_gpus: a file that does that
           too serves both vendors, and is left alone).
A development environment is not the product: what it breaks is a developer's set-up, so these are
warnings. Environment variables and commands (`postCreateCommand: nvidia-smi`) are read as in any
text file; a `build.dockerfile` is a Dockerfile and is scanned as one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rocmkit.port import container_gpus
from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import RuleSet
from rocmkit.port.text_scan import ScanError, scan_text

FILE_NAMES = ("devcontainer.json", ".devcontainer.json")
KIND = "devcontainer"
# A comma followed only by whitespace and comments up to a closing bracket is a trailing comma.
_CLOSES = re.compile(r"\s*(?://[^\n]*(?:\n|$)\s*|/\*.*?\*/\s*)*[}\]]", re.S)
_NVIDIA_RUN_ARG = re.compile(
    r"^(?:--gpus(?:=.*)?|--runtime(?:=|\s+)nvidia|--device(?:=|\s+)nvidia\.com/gpu\b.*)$"
)


def strip_jsonc(text: str) -> str:
    """`text` without JSONC's comments and trailing commas (outside strings), as JSON."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':  # a string, escapes included, copied as is
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == ",":
            # a trailing comma (before `}` or `]`, past comments) is dropped
            if _CLOSES.match(text, i + 1) is None:
                out.append(c)
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def scan_devcontainer(text: str, rules: RuleSet) -> list[Hit]:
    """The NVIDIA-only image and `docker run` arguments of a devcontainer.json."""
    try:
        document: Any = json.loads(strip_jsonc(text))
    except ValueError as exc:
        raise ScanError(f"devcontainer.json does not parse as JSON with comments: {exc}") from exc
    if not isinstance(document, dict):
        return []
    hits = scan_text(text, KIND, rules)  # environment variables and commands, line by line
    image, base = document.get("image"), rules.by_id.get("cuda-base-image")
    if (
        isinstance(image, str)
        and base is not None
        and base.pattern is not None
        and base.pattern.match(f"FROM {image}")
    ):
        line = _line_of(text, "image", image)
        hits.append(hit(line, 1, base, f'"image": "{image}"  (the dev container)', "warn"))
    run_args, gpus = document.get("runArgs"), rules.by_id.get("docker-gpus")
    if isinstance(run_args, list) and gpus is not None:
        words = [a for a in run_args if isinstance(a, str)]
        if not container_gpus.names_amd_devices(" ".join(words)):
            for index, arg in enumerate(words):
                joined = f"{arg} {words[index + 1]}" if index + 1 < len(words) else arg
                if _NVIDIA_RUN_ARG.match(arg) or _NVIDIA_RUN_ARG.match(joined):
                    line = _line_of(text, "runArgs", arg)
                    why = f'"runArgs": [... "{arg}" ...]  (docker run options of the dev container)'
                    hits.append(hit(line, 1, gpus, why, "warn"))
    return hits


def _line_of(text: str, key: str, value: str) -> int:
    """The 1-based line of `value` as a JSON string after the key `"key"` (the key's line when
    the value is written with escapes)."""
    at = text.find(f'"{key}"')
    if at < 0:
        return 1
    found = text.find(json.dumps(value), at)
    return text.count("\n", 0, found if found >= 0 else at) + 1
