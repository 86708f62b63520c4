"""setuptools' generated `<name>.egg-info/requires.txt`, read where nothing else declares a package.

setuptools' egg_info command writes requires.txt from the setup() arguments (install_requires and
extras_require): one PEP 508 requirement per line, the base requirements first, then one
`[extra]` section per extra, a `[extra:marker]` or `[:marker]` section for requirements under an
environment marker (setuptools docs, "Dependencies Management"; setuptools/command/egg_info.py,
write_requirements). An sdist ships it, and pip installs what it lists. Where the sdist also ships
the source of a requirement (a requirements file, pyproject.toml, setup.cfg, a literal in
setup.py), that source is the place to fix and is read already; requires.txt counts only for the
packages no such source names (a setup.py that reads a requirements.txt the sdist leaves out).
The sdist's core metadata (PKG-INFO's Requires-Dist) repeats the same list: where it has one, that
is where the base requirements are judged, and requires.txt adds only its `[extra]` sections,
which say by name which extra a requirement belongs to.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from rocmkit.port.findings import Hit
from rocmkit.port.requirements import group_hits, parse_requirement
from rocmkit.port.rules import RuleSet
from rocmkit.port.text_scan import read_head

KIND = "egg-requires"
_SOURCE_KINDS = frozenset({"requirements", "pyproject", "setupcfg", "conda"})
_MAX_BYTES = 1 << 20
_SECTION = re.compile(r"^\[([^\]]*)\]$")


def metadata_files(root: str, files: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(path, rel, KIND) of the requires.txt of each egg-info folder at the top of the project
    (or under src/), which iter_files leaves out with the rest of the generated metadata."""
    out = []
    for folder in ("", "src"):
        top = os.path.join(root, folder)
        try:
            names = sorted(os.listdir(top))
        except OSError:
            continue
        for name in names:
            path = os.path.join(top, name, "requires.txt")
            if name.endswith(".egg-info") and os.path.isfile(path):
                rel = f"{folder}/{name}/requires.txt" if folder else f"{name}/requires.txt"
                out.append((path, rel, KIND))
    return out


def sections(text: str) -> dict[str | None, list[tuple[str, int]]]:
    """Requirements (text, line) per extra; None: what every install pulls. A `[:marker]` section
    is base requirements under the marker, which is kept on each of its lines."""
    out: dict[str | None, list[tuple[str, int]]] = {}
    group: str | None = None
    marker = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        section = _SECTION.match(line)
        if section is not None:
            extra, _, marker = section.group(1).partition(":")
            group = extra.strip() or None
            continue
        out.setdefault(group, []).append((f"{line}; {marker}" if marker else line, number))
    return out


def scan_requires_txt(text: str, rules: RuleSet) -> list[Hit]:
    """Findings of requires.txt, its extras judged as the opt-in extras they are."""
    hits: list[Hit] = []
    for group, requirements in sections(text).items():
        hits.extend(group_hits(group, requirements, rules))
    return hits


class DeclaredElsewhere:
    """Which package names the project's own requirement sources name (read lazily, once)."""

    def __init__(self, files: Iterable[tuple[str, str, str]], root: str = "") -> None:
        self.core_metadata = _lists_requires_dist(os.path.join(root, "PKG-INFO")) if root else False
        self.paths = [
            path
            for path, rel, kind in files
            if kind in _SOURCE_KINDS or (kind == "python" and os.path.basename(rel) == "setup.py")
        ]
        self._texts: list[str] | None = None

    def names(self, package: str) -> bool:
        """Whether a requirement source names `package` as a requirement (at a line's start or
        in a string literal: `import torch` in setup.py is not a declaration)."""
        if self._texts is None:
            self._texts = [_read(p) for p in self.paths]
        spelled = r"[-_.]".join(re.escape(w) for w in re.split(r"[-_.]+", package))
        pattern = re.compile(rf"(?im)(?:^|[\"'])[ \t]*{spelled}[ \t]*(?:[\[<>=!~;@,\"']|$)")
        return any(pattern.search(t) for t in self._texts)

    def undeclared(self, text: str, hits: list[Hit]) -> list[Hit]:
        """The hits on requires.txt lines whose package no other requirement source names."""
        lines = text.splitlines()
        if self.core_metadata:  # the base requirements are PKG-INFO's
            extras = {n for group, reqs in sections(text).items() if group for _, n in reqs}
            hits = [h for h in hits if h.line in extras]
        kept = []
        for h in hits:
            parsed = parse_requirement(lines[h.line - 1].strip()) if h.line <= len(lines) else None
            if parsed is None or not self.names(parsed.name):
                kept.append(h)
        return kept


def _read(path: str) -> str:
    return read_head(path, _MAX_BYTES).decode("utf-8", "replace")


def _lists_requires_dist(path: str) -> bool:
    """Whether the sdist's PKG-INFO (core metadata) lists its requirements (Requires-Dist)."""
    header = _read(path).split("\n\n", 1)[0]  # the description follows the first blank line
    return any(line.startswith("Requires-Dist:") for line in header.splitlines())
