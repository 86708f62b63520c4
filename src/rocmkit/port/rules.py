"""The rules of `rocmkit port`, read once from rules.toml, and the matchers built from them.

A rule is data: severity, what is wrong, the fix and its public source, plus what it matches
(package names, imports, environment variables, commands, a regex over text, or a named check
implemented in code). Matchers are precomputed per kind so the scanners never loop over rules.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from typing import Literal

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

Severity = Literal["info", "warn", "error"]
SEVERITIES: tuple[Severity, ...] = ("info", "warn", "error")
FILE_KINDS = ("python", "requirements", "pyproject", "conda", "dockerfile", "shell", "compose")


def severity_rank(severity: str) -> int:
    """0 for info, 1 for warn, 2 for error."""
    return SEVERITIES.index(severity)


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One thing that breaks or degrades on ROCm, and what to do instead (see rules.toml)."""

    id: str
    severity: Severity
    title: str
    fix: str
    source: str
    packages: tuple[str, ...] = ()
    min_version: str | None = None
    severity_if_recent: Severity | None = None
    # The first release with complete ROCm support, when min_version's was partial: a pin that
    # admits min_version but excludes this one is warn, with partial_note saying what is missing.
    full_version: str | None = None
    partial_note: str = ""
    extras: tuple[str, ...] = ()
    conda: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    files: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    check: str | None = None
    # Why a requirement on the package is info (it installs on ROCm; its use is the hazard).
    requirement_note: str = ""
    # Why an import made inside a function is info (an optional feature the user picks).
    lazy_import_note: str = ""
    # Modules of `imports` that install and import on ROCm although their GPU back end is CUDA
    # only: an `except ImportError` fallback around them never runs (installs_note says why).
    installs_on_rocm: tuple[str, ...] = ()
    installs_note: str = ""
    # A rule about what a ROCm build is told to do (its target list): a file that is ROCm's by
    # its name is where it matters, so that name does not make the finding info.
    rocm_side: bool = False
    # An import of the package is where the hazard shows when no requirement file the scan reads
    # declares it (an sdist whose only declaration is its generated metadata); where one does,
    # that requirement is the finding and the import is info (declared.py).
    import_where_undeclared: bool = False
    # Rules whose requirement also declares this package (a package that requires it: its own
    # metadata), for import_where_undeclared.
    declared_with: tuple[str, ...] = ()
    # An import of the package is info where the project declares it only in opt-in extras
    # (each declaration below the rule's severity): that extra's line is the finding, and the
    # imports are the back end the extra installs (declared.py).
    import_where_optional: bool = False
    # An import of the package is a finding only at module level in a project whose base
    # requirements declare it (every install pulls the CUDA-only build and the module fails to
    # load); inside a function the requirement is the place to act, and a package the project
    # leaves to the user to install is an opt-in accelerator: info (declared.py).
    import_where_required: bool = False

    def __post_init__(self) -> None:
        assert self.severity in SEVERITIES, (self.id, self.severity)
        assert self.source.startswith("https://"), (self.id, "every fix needs its public source")
        assert set(self.files) <= set(FILE_KINDS), (self.id, self.files)


@dataclass(frozen=True, eq=False)  # hashed by identity: scanners cache per rule set
class RuleSet:
    """All rules plus lookup tables for each kind of matcher."""

    rules: tuple[Rule, ...]
    by_id: dict[str, Rule] = field(init=False)
    imports: dict[str, Rule] = field(init=False)
    text_rules: tuple[Rule, ...] = field(init=False)
    by_check: dict[str, Rule] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", {r.id: r for r in self.rules})
        imports: dict[str, Rule] = {}
        for rule in self.rules:
            for module in rule.imports:
                imports.setdefault(module, rule)
        object.__setattr__(self, "imports", imports)
        object.__setattr__(self, "text_rules", tuple(r for r in self.rules if r.pattern))
        object.__setattr__(self, "by_check", {r.check: r for r in self.rules if r.check})

    def package_rule(self, name: str, extras: frozenset[str] = frozenset()) -> Rule | None:
        """The first rule whose packages (and extras, when it names some) match a requirement."""
        return self._lookup("packages", normalise_name(name), extras)

    def conda_rule(self, name: str) -> Rule | None:
        return self._lookup("conda", name.lower(), frozenset())

    def env_rule(self, name: str) -> Rule | None:
        return self._lookup("env", name, frozenset())

    def command_rule(self, command: str) -> Rule | None:
        return self._lookup("commands", command, frozenset())

    def _lookup(self, attribute: str, name: str, extras: frozenset[str]) -> Rule | None:
        # Memoised per rule set: a scan asks for the same few names (torch, NCCL_DEBUG, ...) in
        # file after file, and each miss otherwise globs every pattern of every rule.
        key = (attribute, name, extras)
        cache = self._matches
        if key not in cache:
            cache[key] = _first_match(self.rules, attribute, name, extras)
        return cache[key]

    @functools.cached_property
    def _matches(self) -> dict[tuple[str, str, frozenset[str]], Rule | None]:
        return {}

    @functools.cached_property
    def env_prefixes(self) -> tuple[str, ...]:
        """Literal prefixes of every env pattern: a string can only match if it starts with one."""
        return tuple(sorted({p.split("*")[0] for r in self.rules for p in r.env}))

    @functools.cached_property
    def commands(self) -> tuple[str, ...]:
        return tuple(c for r in self.rules for c in r.commands)


def normalise_name(name: str) -> str:
    """A distribution name as PEP 503 compares it: runs of -, _ and . are one -, lower case."""
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.lru_cache(maxsize=4096)
def _glob_match(name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern)


def _first_match(
    rules: tuple[Rule, ...], attribute: str, name: str, extras: frozenset[str]
) -> Rule | None:
    # A rule that names it exactly (nvidia-tensorrt in the tensorrt rule) is more specific than
    # any pattern (nvidia-*), wherever the two stand in the file.
    for exact in (True, False):
        for rule in rules:
            patterns: tuple[str, ...] = getattr(rule, attribute)
            if not any(("*" not in p) is exact and _glob_match(name, p) for p in patterns):
                continue
            if rule.extras and not any(_glob_match(e, p) for e in extras for p in rule.extras):
                continue
            return rule
    return None


@functools.lru_cache(maxsize=1)
def load_rules() -> RuleSet:
    """The built-in rules from rocmkit/port/rules.toml (parsed once per process)."""
    text = resources.files("rocmkit.port").joinpath("rules.toml").read_text(encoding="utf-8")
    return parse_rules(text)


def parse_rules(text: str) -> RuleSet:
    """Build a RuleSet from TOML text in the rules.toml format."""
    rules = []
    for row in tomllib.loads(text)["rule"]:
        row = dict(row)
        if "pattern" in row:
            row["pattern"] = re.compile(row["pattern"], re.MULTILINE)
        keys = ("packages", "extras", "conda", "imports", "env", "commands", "files")
        for key in (*keys, "installs_on_rocm", "declared_with"):
            row[key] = tuple(row.get(key, ()))
        row["packages"] = tuple(normalise_name(p) for p in row["packages"])
        row["triggers"] = tuple(row.get("triggers", ()))
        rules.append(Rule(**row))
    ids = [r.id for r in rules]
    assert len(ids) == len(set(ids)), "duplicate rule id in rules.toml"
    return RuleSet(tuple(rules))
