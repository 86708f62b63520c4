"""setuptools' generated `<name>.egg-info/requires.txt`, read where nothing else declares a package.

setuptools' egg_info command writes requires.txt from the setup() arguments (install_requires and
extras_require): one PEP 508 requirement per line, the base requirements first, then one
`[extra]` section per extra, a `[extra:marker]` or `[:marker]` section for requirements under an
environment marker (setuptools docs, "Dependencies Management"; setuptools/command/egg_info.py,
write_requirements). An sdist ships it, and pip installs what it lists. Where the sdist also ships
the source of a requirement (a requirements file, pyproject.toml, setup.cfg, a literal in
setup.py), that source is the place to fix and is read already; requires.txt counts only for the
packages no such source names (a setup.py that reads a requirements.txt the sdist leaves out).
The sdist's core metadata (PKG-INFO's Requires-Dist, pkg_info.py) repeats the same list; each
requirement is reported once, at the first of: the source a maintainer edits (requirements file,
pyproject.toml, setup.cfg, setup.py), requires.txt, PKG-INFO.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from rocmkit.port import pkg_info
from rocmkit.port.findings import Hit
from rocmkit.port.requirements import group_hits, parse_requirement
from rocmkit.port.rules import RuleSet, normalise_name
from rocmkit.port.text_scan import read_head

KIND = "egg-requires"
KINDS = frozenset({KIND, pkg_info.KIND})  # the generated metadata read for undeclared packages
_SOURCE_KINDS = frozenset({"requirements", "pyproject", "setupcfg", "conda"})
_MAX_BYTES = 1 << 20
_SECTION = re.compile(r"^\[([^\]]*)\]$")


def metadata_files(root: str, files: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(path, rel, kind) of the requires.txt of each egg-info folder at the top of the project
    (or under src/), which iter_files leaves out with the rest of the generated metadata, and of
    the sdist's PKG-INFO (pkg_info.KIND)."""
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
    core = pkg_info.metadata_file(root)
    return [*out, core] if core is not None else out


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
        files = list(files)
        self.paths = [
            path
            for path, rel, kind in files
            if kind in _SOURCE_KINDS or (kind == "python" and os.path.basename(rel) == "setup.py")
        ]
        self._texts: list[str] | None = None
        # requires.txt comes before PKG-INFO: PKG-INFO reports what no requires.txt names
        generated = metadata_files(root, files) if root else []
        self.requires_txt = [p for p, _, kind in generated if kind == KIND]
        core = pkg_info.metadata_file(root) if root else None
        self.core_metadata = _read(core[0]) if core is not None else ""

    def names(self, package: str) -> bool:
        """Whether a requirement source names `package` as a requirement (at a line's start or
        in a string literal: `import torch` in setup.py is not a declaration)."""
        if self._texts is None:
            self._texts = [_read(p) for p in self.paths]
        return any(_names(t, package) for t in self._texts)

    def undeclared(self, text: str, hits: list[Hit], kind: str = KIND) -> list[Hit]:
        """The hits on generated-metadata lines (requires.txt, PKG-INFO) whose package no
        requirement source before it names; a requires.txt hit says PKG-INFO repeats it."""
        lines = text.splitlines()
        earlier = [_read(p) for p in self.requires_txt] if kind == pkg_info.KIND else []
        kept = []
        for h in hits:
            line = lines[h.line - 1] if h.line <= len(lines) else ""
            if kind == pkg_info.KIND:
                line = line.partition(":")[2]
            parsed = parse_requirement(line.strip())
            if parsed is None:
                kept.append(h)
            elif not self.names(parsed.name) and not any(_names(t, parsed.name) for t in earlier):
                also = _in_requires_dist(self.core_metadata, parsed.name) if kind == KIND else 0
                kept.append(_also_in_core_metadata(h, also) if also else h)
        return kept


def _names(text: str, package: str) -> bool:
    spelled = r"[-_.]".join(re.escape(w) for w in re.split(r"[-_.]+", package))
    pattern = re.compile(rf"(?im)(?:^|[\"'])[ \t]*{spelled}[ \t]*(?:[\[<>=!~;@,\"']|$)")
    return pattern.search(text) is not None


def _in_requires_dist(core_metadata: str, package: str) -> int:
    """The PKG-INFO line whose Requires-Dist names the package (0: none)."""
    return next(
        (
            number
            for value, number in pkg_info.header_fields(core_metadata, "Requires-Dist")
            if (r := parse_requirement(value)) is not None
            and normalise_name(r.name) == normalise_name(package)
        ),
        0,
    )


def _also_in_core_metadata(h: Hit, line: int) -> Hit:
    why = f"also PKG-INFO:{line}, generated from the same list"
    return Hit(h.line, h.column, h.rule, f"{h.evidence}  ({why})", h.severity)


def _read(path: str) -> str:
    return read_head(path, _MAX_BYTES).decode("utf-8", "replace")
