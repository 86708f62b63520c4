"""The versions a project declares for its dependencies, and what an import of one means.

A package that gained ROCm support at a release (bitsandbytes: ROCm binaries in its PyPI wheels from 0.49)
is a hazard where the project pins or caps it below that release, and fine where it allows it.
An `import bitsandbytes` says nothing about the version by itself: the import follows the
project's own declared requirement (requirements files, pyproject.toml, setup.cfg, setup.py,
environment.yml), judged by the same requirement rules. With no declaration, pip installs a
current release, which has ROCm builds: info.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from rocmkit.port.findings import Hit, demoted
from rocmkit.port.rules import Rule, RuleSet, severity_rank

_REQUIREMENT_KINDS = frozenset({"requirements", "pyproject", "setupcfg", "conda"})
_MAX_BYTES = 1 << 20  # a requirement file larger than this is not one


class DeclaredVersions:
    """Answers, per version-aware rule, the worst verdict of the project's own requirements on
    its package. Lazy: the requirement files are read only when a Python file imports such a
    package (few projects do), once per scan."""

    def __init__(
        self,
        files: Iterable[tuple[str, str, str]],
        note_for: Callable[[str], str],
        root: str = "",
    ) -> None:
        self.files = [
            (path, rel, kind)
            for path, rel, kind in files
            if (
                kind in _REQUIREMENT_KINDS
                or (kind == "python" and os.path.basename(rel) == "setup.py")
            )
            and not _inside_package(path, rel)
        ]
        self.root = root
        self.note_for = note_for
        self.hits: dict[str, list[tuple[str, Hit]]] | None = None  # rule id -> (rel, hit)

    def follow(self, hits: list[Hit], rules: RuleSet) -> list[Hit]:
        """The import hits of version-aware rules at the verdict of the declared requirement:
        kept (with where it is declared) when a declaration excludes every release with ROCm
        support; info otherwise, saying why."""
        if not any(_versioned_import(h) or _placed_import(h) for h in hits):
            return hits
        return [
            self._judged(h, rules)
            if _versioned_import(h)
            else self._placed(h, rules)
            if _placed_import(h)
            else h
            for h in hits
        ]

    def _placed(self, h: Hit, rules: RuleSet) -> Hit:
        """An import of a package whose every PyPI build is the hazard: info where a requirement
        the scan reads declares it (that line is the finding), kept where none does."""
        found = self._declared(rules)
        declared = [d for rule in (h.rule.id, *h.rule.declared_with) for d in found.get(rule, [])]
        package = h.evidence.split()[1]
        if h.rule.import_where_required:
            return self._required(h, declared, rules)
        if not h.rule.import_where_undeclared:  # import_where_optional
            rank = severity_rank(h.rule.severity)
            if not declared or any(severity_rank(d.severity) >= rank for _, d in declared):
                return h
            rel, first = declared[0]
            why = f"an opt-in back end: the extra at {rel}:{first.line} is the finding"
            return demoted(h, "info", why)
        if not declared:
            why = f"declared in no requirement file: pip installs PyPI's {package}"
            return demoted(h, h.severity, why)
        rel, first = declared[0]
        why = f"the requirement at {rel}:{first.line} is the finding"
        return demoted(h, "info", why)

    def _required(self, h: Hit, declared: list[tuple[str, Hit]], rules: RuleSet) -> Hit:
        base = [
            (rel, d)
            for rel, d in declared
            if severity_rank(d.severity) >= severity_rank(rules.by_id[d.rule.id].severity)
        ]
        lazy = "(needed by the function" in h.evidence
        if base and not lazy:
            return h
        if base:
            rel, first = base[0]
            why = f"imported where used; the requirement at {rel}:{first.line} is the finding"
        elif declared:
            rel, first = declared[0]
            why = f"an opt-in back end: the extra at {rel}:{first.line} is the finding"
        else:
            why = "no requirement declares it: an accelerator the user installs"
        return demoted(h, "info", why)

    def _judged(self, h: Hit, rules: RuleSet) -> Hit:
        declared = self._declared(rules).get(h.rule.id, [])
        package = h.evidence.split()[1]
        recent = (
            "which has ROCm builds"
            if h.rule.severity_if_recent == "info"
            else "whose own needs are the requirement's finding"
        )
        if not declared:
            why = (
                f"no version of {package} is declared: pip installs a current release, {recent}"
                f" (from {h.rule.min_version})"
            )
            return demoted(h, "info", why)
        rel, worst = max(declared, key=lambda d: severity_rank(d[1].severity))
        requirement = worst.evidence.split("  (")[0]
        if worst.severity == "info" or _admits_rocm_build(requirement, h):
            # The import loads a release with a ROCm library; what the release lacks (partial
            # support) is the requirement's finding, not every import's.
            why = (
                f"the project declares {requirement} ({rel}:{worst.line}): it admits releases from"
                f" {h.rule.min_version}, {recent}"
            )
            return demoted(h, "info", why)
        why = f"the project declares {requirement} at {rel}:{worst.line}"
        return demoted(h, worst.severity, why)

    def _declared(self, rules: RuleSet) -> dict[str, list[tuple[str, Hit]]]:
        if self.hits is None:
            self.hits = {}
            wanted = {r.id for r in rules.rules if r.imports and _placed_rule(r)}
            wanted |= {w for r in rules.rules if r.id in wanted for w in r.declared_with}
            for path, rel, kind in self.files or _enclosing_project(self.root):
                if self.note_for(rel):
                    continue  # the NVIDIA variant of a file, another accelerator's: not ROCm's
                for h in _requirement_hits(path, kind, rules):
                    if h.rule.id in wanted:
                        self.hits.setdefault(h.rule.id, []).append((rel, h))
        return self.hits


# The files that declare a project's requirements at its top, by name and scanner kind.
_TOP_FILES = (
    ("setup.cfg", "setupcfg"),
    ("pyproject.toml", "pyproject"),
    ("setup.py", "python"),
    ("requirements.txt", "requirements"),
)


def _enclosing_project(root: str) -> list[tuple[str, str, str]]:
    """The requirement files of the project a sub-folder belongs to (`port src/pkg`): the first
    folder above it, up to four levels, that holds one of _TOP_FILES."""
    if not root:
        return []
    folder = os.path.abspath(root if os.path.isdir(root) else os.path.dirname(root))
    for _ in range(4):
        parent = os.path.dirname(folder)
        if parent == folder:
            return []
        folder = parent
        found = [
            (os.path.join(folder, name), os.path.relpath(os.path.join(folder, name), root), kind)
            for name, kind in _TOP_FILES
            if os.path.isfile(os.path.join(folder, name))
        ]
        if found:
            return found
    return []


def _inside_package(path: str, rel: str) -> bool:
    """A requirement file in a folder below the root that holds an `__init__.py`: a copy vendored
    inside one of the project's Python packages (flash-attn's CuTe `pyproject.toml` shipped in
    `pkg/ops/cute/`). pip installs the outer project and never reads it, so what it declares is
    not what an install of this project pulls."""
    folder = os.path.dirname(path)
    return bool(os.path.dirname(rel)) and os.path.isfile(os.path.join(folder, "__init__.py"))


def _admits_rocm_build(requirement: str, h: Hit) -> bool:
    from rocmkit.port.requirements import allows, parse_requirement

    parsed = parse_requirement(requirement)
    return parsed is not None and allows(parsed.specifier, h.rule.min_version or "0")


def _versioned_import(h: Hit) -> bool:
    """An import of a version-aware package that the scan did not already settle at info (an
    optional import, one side of a vendor switch: those stay as they are)."""
    return bool(
        h.rule.min_version
        and h.rule.imports
        and h.severity != "info"
        and h.evidence.startswith("import ")
    )


def _placed_rule(rule: Rule) -> bool:
    return bool(
        rule.min_version
        or rule.import_where_undeclared
        or rule.import_where_optional
        or rule.import_where_required
    )


def _placed_import(h: Hit) -> bool:
    """An import of a package whose rule places it by the declaration (not already at info)."""
    return (
        (
            h.rule.import_where_undeclared
            or h.rule.import_where_optional
            or h.rule.import_where_required
        )
        and h.severity != "info"
        and h.evidence.startswith("import ")
    )


def _requirement_hits(path: str, kind: str, rules: RuleSet) -> list[Hit]:
    # Imported here: requirements.py reads context.py, which builds this class.
    from rocmkit.port import pixi, requirements
    from rocmkit.port.python_scan import scan_python
    from rocmkit.port.text_scan import ScanError, read_head

    try:
        text = read_head(path, _MAX_BYTES + 1).decode("utf-8")
    except UnicodeDecodeError:
        return []
    if len(text) > _MAX_BYTES:
        return []
    scanners: dict[str, Callable[[str, RuleSet], list[Hit]]] = {
        "requirements": requirements.scan_requirements_txt,
        "pyproject": pixi.scan_pyproject_and_pixi,
        "setupcfg": requirements.scan_setup_cfg,
        "conda": requirements.scan_conda,
    }
    try:
        if kind == "python":
            found, _ = scan_python(text, rules, is_setup=True)
            return [h for h in found if not h.evidence.startswith("import ")]
        return scanners[kind](text, rules)
    except ScanError:
        return []
