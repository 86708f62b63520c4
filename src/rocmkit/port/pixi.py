"""pixi's manifest (`pixi.toml`, or the `[tool.pixi]` tables of `pyproject.toml`): environments
that need NVIDIA's CUDA.

By pixi's manifest reference (pixi.sh, "Manifest"): `[dependencies]` holds conda packages,
`[pypi-dependencies]` PyPI ones, and both appear again under `[feature.<name>]` and
`[target.<platform>]` (and `[feature.<name>.target.<platform>]`); an environment is a set of
features (`[environments]`). `[system-requirements]` states what the machine must have: `cuda =
"12"` makes pixi solve against the `__cuda` virtual package, which it finds only where an NVIDIA
driver is installed, so on an AMD host that environment does not solve or install. A conda
dependency given a build string (`jaxlib = { version = "*", build = "*cuda*" }`) asks for the build
made for CUDA. Conda packages are judged as in an environment.yml (conda-cuda: pytorch-cuda,
cudatoolkit...; the CUDA-only conda builds of CuPy and RAPIDS), PyPI ones as requirements.

Every finding of a feature named for NVIDIA (`cuda`, `gpu`, `cu12`) is at most warn: the feature
is an environment a user asks for (`pixi run -e cuda`); it is info where the manifest also has a
feature named for ROCm, the AMD side of that choice. Channels are not judged: a channel listed
among the workspace's gives nothing by itself.
"""

from __future__ import annotations

import re

import tomllib

from rocmkit.port.context import name_vendor
from rocmkit.port.findings import Hit, demoted, hit
from rocmkit.port.requirements import conda_item_hits, requirement_hits, scan_pyproject
from rocmkit.port.rules import RuleSet

FILE_NAMES = frozenset({"pixi.toml"})
KIND = "pixi"
RULE = "pixi-cuda"

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]+"|'[^']+'|[A-Za-z0-9_.-]+)\s*=\s*(.*)$""")
_CUDA_BUILD = re.compile(r"(?i)cuda")


def scan_pixi_toml(text: str, rules: RuleSet) -> list[Hit]:
    """A pixi.toml: its tables are pixi's own."""
    return manifest_hits(text, rules, prefix="")


def scan_pyproject_and_pixi(text: str, rules: RuleSet) -> list[Hit]:
    """A pyproject.toml as pip/uv read it (requirements.scan_pyproject) and, where it holds
    `[tool.pixi]` tables, as pixi reads them."""
    hits = scan_pyproject(text, rules)
    if "[tool.pixi" in text:
        hits.extend(manifest_hits(text, rules, prefix="tool.pixi."))
    return hits


def manifest_hits(text: str, rules: RuleSet, prefix: str) -> list[Hit]:
    """Findings of the pixi tables of a manifest (`prefix` "tool.pixi." in a pyproject.toml)."""
    found: list[tuple[Hit, str]] = []  # (hit, the feature it is in, "" for the default)
    features: set[str] = set()
    table: list[str] | None = None  # the current pixi table's path, None outside pixi
    for number, raw in enumerate(text.splitlines(), 1):
        header = _HEADER.match(raw)
        if header is not None and not raw.lstrip().startswith("[["):
            name = header.group(1).replace('"', "").replace("'", "")
            table = name[len(prefix) :].split(".") if name.startswith(prefix) else None
            if prefix and name == prefix.rstrip("."):
                table = []
            if table and table[0] == "feature" and len(table) > 1:
                features.add(table[1])
            continue
        if table is None:
            continue
        entry = _KEY.match(raw)
        if entry is None:
            continue
        key, value = entry.group(1).strip("\"'"), entry.group(2).strip()
        feature = table[1] if table[:1] == ["feature"] and len(table) > 1 else ""
        for h in _entry_hits(table, key, value, number, rules):
            found.append((h, feature))
    rocm_features = sorted(f for f in features if name_vendor(f) == "rocm")
    hits: list[Hit] = []
    for h, feature in found:
        if feature and name_vendor(feature) == "nvidia":
            if rocm_features:
                why = f"feature {feature!r}: has a ROCm counterpart: feature {rocm_features[0]!r}"
                h = demoted(h, "info", why) if h.severity != "info" else h
            elif h.severity == "error":
                h = demoted(h, "warn", f"in feature {feature!r}, an environment asked for")
        hits.append(h)
    return hits


def _entry_hits(table: list[str], key: str, value: str, line: int, rules: RuleSet) -> list[Hit]:
    kind = table[-1] if table else ""
    if key in ("system-requirements", "dependencies", "pypi-dependencies") and value.startswith(
        "{"
    ):
        kind, inline = key, _inline(value)  # `system-requirements = { cuda = "13" }`
        return [h for k, v in inline.items() for h in _item_hits(kind, k, v, line, rules)]
    if kind not in ("system-requirements", "dependencies", "pypi-dependencies"):
        return []
    return _item_hits(kind, key, _value(value), line, rules)


def _item_hits(kind: str, key: str, value: object, line: int, rules: RuleSet) -> list[Hit]:
    rule = rules.by_id.get(RULE)
    if kind == "system-requirements":
        if key == "cuda" and rule is not None:
            return [hit(line, 0, rule, f"system-requirements cuda = {value!r}")]
        return []
    if kind == "dependencies":
        build = value.get("build", "") if isinstance(value, dict) else ""
        if isinstance(build, str) and _CUDA_BUILD.search(build) and rule is not None:
            return [hit(line, 0, rule, f"{key} build {build!r} (a conda build made for CUDA)")]
        return list(conda_item_hits(key, line, rules))
    requirement = key
    if isinstance(value, dict):
        extras = value.get("extras")
        if isinstance(extras, list) and extras:
            requirement += "[" + ",".join(str(e) for e in extras) + "]"
        version = value.get("version")
        if isinstance(version, str) and version != "*":
            requirement += version
    elif isinstance(value, str) and value != "*":
        requirement += value
    return list(requirement_hits(requirement, line, rules))


def _value(value: str) -> object:
    """A TOML value written on one line ('"*"', '{ version = "*", build = "*cuda*" }')."""
    try:
        return tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return None


def _inline(value: str) -> dict[str, object]:
    parsed = _value(value)
    return parsed if isinstance(parsed, dict) else {}
