"""Every figure in README.md and docs/*.md cites a benchmark result file or is allow-listed (issue 27).

The checker is scripts/check_figures.py; these tests run it on the real docs and on small
documents with a changed, an uncited and a well-cited figure.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load_checker():
    spec = importlib.util.spec_from_file_location(
        "check_figures", REPO / "scripts" / "check_figures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_figures"] = module
    spec.loader.exec_module(module)
    return module


checker = _load_checker()


def _resultfile():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import resultfile
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return resultfile


@pytest.fixture
def tree(tmp_path):
    """A repository-shaped folder with one result file written by benchmarks/resultfile.py."""
    resultfile = _resultfile()
    run = resultfile.ResultRun.start("demo")
    run.path = tmp_path / "benchmarks" / "results" / "demo.json"
    run.add("fast_over_eager", [1.61, 1.67, 1.70], unit="x", baseline="eager")
    run.add("client.req_per_cpu_s", [20_100.0, 20_421.4, 20_900.0], unit="req/CPU-s")
    run.finish()
    (tmp_path / "docs").mkdir()
    return tmp_path


def _check(root: Path, text: str, allow: str = "") -> list[str]:
    doc = root / "docs" / "page.md"
    doc.write_text(text)
    (root / "allow.toml").write_text(allow)
    problems, _ = checker.check([doc], checker.load_allowlist(root / "allow.toml"), root)
    return [str(p) for p in problems]


CITE = "([result](../benchmarks/results/demo.json#{}))"


def test_the_real_docs_pass():
    problems, figures = checker.check(
        checker.default_docs(), checker.load_allowlist(checker.ALLOWLIST)
    )
    assert [str(p) for p in problems] == []
    assert any(f.citation for f in figures)


def test_cited_figures_that_match_pass(tree):
    text = (
        f"Fast decoding is 1.67x {CITE.format('fast_over_eager')} eager; the client does "
        f"20,421 req/CPU-s {CITE.format('client.req_per_cpu_s')} or 20k req/CPU-s "
        f"{CITE.format('figures.client.req_per_cpu_s.median')}.\n"
    )
    assert _check(tree, text) == []


def test_a_changed_figure_fails(tree):
    problems = _check(tree, f"Fast decoding is 2.89x {CITE.format('fast_over_eager')} eager.\n")
    assert len(problems) == 1
    assert "'2.89x'" in problems[0] and "gives 1.67" in problems[0]


def test_an_uncited_figure_fails(tree):
    problems = _check(tree, "The client does 8,133 req/CPU-s on this machine.\n")
    assert problems == ["docs/page.md:1: uncited figure '8,133 req/CPU-s': cite its result "
                        "file or allow-list it"]  # fmt: skip


def test_an_uncited_table_figure_fails(tree):
    text = "| client | req/CPU-s |\n|---|---:|\n| httpx | 407 |\n"
    assert ["407" in p for p in _check(tree, text)] == [True]


def test_a_missing_key_fails(tree):
    problems = _check(tree, f"It is 1.67x {CITE.format('no_such_figure')} faster.\n")
    assert problems and "no 'no_such_figure'" in problems[0]


def test_not_figures_dates_versions_code_and_issue_numbers(tree):
    text = (
        "Measured 2026-11-25 with torch 2.14.1 at commit 773ac0c, issue 27, gfx942, 32x32 images.\n"
        "Run `bench --size 512 MB` or:\n\n```\nrocmkit bench  # 70 s\n```\n<!-- 3 s -->\n"
    )
    assert _check(tree, text) == []


def test_allow_list_covers_text_and_block_and_stale_entries_fail(tree):
    text = "Docker's default is 64 MiB.\n\n| GPU | memory |\n|---|---|\n| L4 | 24 GB, 300 GB/s |\n"
    allow = (
        '[[allow]]\ndoc = "docs/page.md"\ntext = "default is 64 MiB"\nreason = "a default"\n\n'
        '[[allow]]\ndoc = "docs/page.md"\ntext = "| L4 |"\nscope = "block"\nreason = "spec sheet"\n'
    )
    assert _check(tree, text, allow) == []
    stale = allow + '\n[[allow]]\ndoc = "docs/page.md"\ntext = "gone 5 ms"\nreason = "old"\n'
    assert _check(tree, text, stale) == [
        "docs/page.md:0: allow-list entry matches no figure: 'gone 5 ms'"
    ]


def test_rounding_rule():
    assert checker.matches("1.67", 1.6712)[0]
    assert not checker.matches("1.6", 1.6712)[0]
    assert checker.matches("20,421", 20_421.4)[0]
    assert checker.matches("345k", 345_200.0)[0]


def test_result_file_records_environment_load_and_spread(tree):
    document = json.loads((tree / "benchmarks" / "results" / "demo.json").read_text())
    figure = document["figures"]["fast_over_eager"]
    assert figure["median"] == 1.67 and figure["runs"] == [1.61, 1.67, 1.70]
    assert figure["baseline"] == "eager" and "under_load" in figure
    assert set(document["load"]) == {"before", "after", "cores", "under_load"}
    assert document["environment"]["versions"]["python"]
    assert "sha" in document["environment"]["commit"]


def test_a_figure_needs_three_runs():
    run = _resultfile().ResultRun.start("demo")
    with pytest.raises(ValueError, match="at least 3"):
        run.add("x", [1.0, 2.0], unit="x")


def test_fix_rewrites_cited_numbers_from_the_file(tree):
    doc = tree / "docs" / "page.md"
    doc.write_text(f"It is 0x {CITE.format('fast_over_eager')} and 8,133 req/CPU-s "
                   f"{CITE.format('client.req_per_cpu_s')}.\n")  # fmt: skip
    assert checker.fix(doc, tree) == 2
    assert doc.read_text().startswith("It is 1.67x (") and "20,421 req/CPU-s (" in doc.read_text()
    assert _check(tree, doc.read_text()) == []
