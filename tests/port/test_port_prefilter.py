"""The byte pre-filters that let `rocmkit port` skip most Python files unread (issue 26 speed)
drop no finding: a file it skips is one where the whole Python scan finds nothing. Checked for
the run-time installer check, whose packages need hold no trigger key (`pip install vllm`), for
every fixture Python file, and (slow; skipped without the fetched corpus) for every Python file of
the real corpus; the AMD SMI search tried near each "smi" finds what the whole pattern finds."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import port_corpus

from rocmkit.port import (
    PortConfig,
    amd_management,
    capability_versions,
    installer,
    load_rules,
    project,
    scan_project,
)
from rocmkit.port.findings import Hit
from rocmkit.port.python_scan import scan_python, trigger_keys
from rocmkit.port.text_scan import ScanError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "port"
PROJECTS = port_corpus.load_manifest()


def _key(hits: list[Hit]) -> list[tuple[str, int, int, str, str]]:
    return sorted((h.rule.id, h.line, h.column, h.severity, h.evidence) for h in hits)


def _through_prefilter(path: Path) -> list[Hit]:
    """What port's per-file scan reports (the byte pre-filter first)."""
    return project.scan_file(str(path), "python", load_rules(), 10_000_000)[0]


def _whole_scan(path: Path) -> list[Hit]:
    """What the Python scan reports on the decoded text, with no pre-filter before it."""
    text = path.read_text(encoding="utf-8")
    return scan_python(text, load_rules(), is_setup=path.name == "setup.py")[0]


def _installed_packages() -> list[str]:
    """The packages the run-time installer check names exactly (as installer.package_lines)."""
    rules = load_rules()
    return sorted(
        {
            p.lower()
            for r in rules.rules
            if r.severity != "info" and not r.requirement_note
            for p in r.packages
            if "*" not in p
        }
    )


def test_a_module_that_only_installs_a_package_at_run_time_is_scanned(tmp_path: Path) -> None:
    # Before the seventh speed round, 15 of these 34 files (vllm, sglang, onnxruntime-gpu...)
    # held no trigger key and were skipped unread: the finding the check makes was lost.
    packages = _installed_packages()
    assert len(packages) >= 10
    for i, package in enumerate(packages):
        (tmp_path / f"env_{i}.py").write_text(
            "import subprocess\nimport sys\n\n\ndef prepare():\n"
            f'    subprocess.check_call([sys.executable, "-m", "pip", "install", "{package}"])\n'
        )
    report = scan_project(PortConfig(path=tmp_path, show_info=True))
    found = {f.path for f in report.findings if f.line == 6}
    expected = {
        f"env_{i}.py" for i, _ in enumerate(packages) if _whole_scan(tmp_path / f"env_{i}.py")
    }
    assert len(expected) >= 20  # the check reports most of them (not e.g. a package kept at info)
    assert found == expected


def test_the_installer_words_are_what_the_pre_filter_looks_for() -> None:
    # The pre-filter's words come from the check: one it adds is looked for without a second list.
    rules = load_rules()
    for word in installer._INSTALLER_WORDS:
        data = f'import os\nos.system("pip {word} vllm")\n'.encode()
        assert not trigger_keys(data, rules)  # no trigger key: only the installer words keep it
        assert project._may_install(data)


SMI_SPELLINGS = (
    "amdsmi.amdsmi_init()",
    "amdsmi_get_gpu_metrics_info (handle)",
    "rsmi_dev_power_ave_get(0)",
    "rocmsmi.rsmi_init(0)",
    'subprocess.run(["amd-smi", "metric"])',
    "subprocess.run('rocm-smi --showuse')",
    "import amdsmi",  # an import alone: no match
    "transmit(x); summit_smi(y); nvidia-smi",  # "smi" elsewhere: no match
    "xamdsmi_init()",  # not at a word's start: no match
)


@pytest.mark.parametrize("spelling", SMI_SPELLINGS)
def test_the_amd_smi_search_near_smi_equals_the_whole_pattern_search(spelling: str) -> None:
    # Tried only near each "smi" (the pattern, led by \b, gave `re` no literal to skip to).
    for before in ("", "x = 1\n", "transmission = 2  # smi\n" * 3, "é" * 40 + "\n"):
        for after in ("", "\n", "\nsemi = 'smi'\n"):
            data = (before + spelling + after).encode()
            expected = amd_management._AMD_LIBRARY.search(data) is not None
            assert amd_management.uses_amd_library(data) == expected, data


# The parser call a capability version passes through (capability_versions.holds_parser_call),
# read from "(" backwards, against the one pattern it replaces (led by the names' alternation,
# which gave `re` no literal to skip to: twenty times slower on a large module).
_PARSER_CALL_PATTERN = re.compile(
    r"\b(?:parse|Version|LooseVersion|float)\s*\(\s*(?:[rR]?[fF]|[fF][rR])[\"']{1,3}\{"
)
PARSER_CALLS = (
    'version.parse(f"{major}.{minor}")',
    "float(f'{p.major}.{p.minor}')",
    'LooseVersion (\n    rf"""{a}.{b}""")',
    "Version(   Fr'{cap[0]}.{cap[1]}')",
    'reparse(f"{a}.{b}")',  # another name ending in a parser's: no match
    'parse("{a}.{b}")',  # not an f-string: no match
    'parse(f"v{a}.{b}")',  # the f-string does not start with a field: no match
    "floaty = (f'{a}')",  # the name is not the call's: no match
    "é parse\u00a0\u2003(f'{a}.{b}')",  # Unicode spaces are \s
)


@pytest.mark.parametrize("spelling", PARSER_CALLS)
def test_the_parser_call_search_from_the_parenthesis_equals_the_whole_pattern(
    spelling: str,
) -> None:
    for before in ("", "x(1)\n", "(" * 3, "é" * 20 + "LooseVersion"):
        for after in ("", ")\n", " (f'{"):
            text = before + spelling + after
            expected = _PARSER_CALL_PATTERN.search(text) is not None
            assert capability_versions.holds_parser_call(text) == expected, text


@pytest.mark.parametrize(
    "path",
    sorted(FIXTURES.rglob("*.py")),
    ids=lambda p: str(p.relative_to(FIXTURES)),
)
def test_the_pre_filter_keeps_every_finding_of_a_fixture_file(path: Path) -> None:
    try:
        whole = _whole_scan(path)
    except (ScanError, UnicodeDecodeError):
        pytest.skip("not a scannable Python file")
    assert _key(_through_prefilter(path)) == _key(whole)


@pytest.mark.slow
@pytest.mark.parametrize("corpus_project", PROJECTS, ids=[p.name for p in PROJECTS])
def test_the_pre_filter_keeps_every_finding_on_real_projects(
    corpus_project: port_corpus.Project,
) -> None:
    root = corpus_project.root()
    if not root.is_dir():
        pytest.skip(f"{corpus_project.name} is not fetched (python benchmarks/port_corpus.py)")
    compared = 0
    for entry in corpus_project.scan:
        top = root / entry
        paths = [top] if top.is_file() else sorted(top.rglob("*.py")) if top.is_dir() else []
        for path in paths:
            if path.suffix != ".py" or not os.path.isfile(path):
                continue
            try:
                whole = _whole_scan(path)
                kept = _through_prefilter(path)
            except (ScanError, UnicodeDecodeError, OSError):
                continue
            assert _key(kept) == _key(whole), path
            data = path.read_bytes()
            expected = amd_management._AMD_LIBRARY.search(data) is not None
            assert amd_management.uses_amd_library(data) == expected, path
            compared += 1
    # a project whose scanned subset holds no Python file (fusedtok: build files and kernels)
    scanned_python = any(
        (root / e).suffix == ".py" or ((root / e).is_dir() and any((root / e).rglob("*.py")))
        for e in corpus_project.scan
    )
    assert compared or not scanned_python
