"""Every rule in rules.toml fires on its own fixture, exactly where the markers say; clean files
produce nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import expected_markers, found

import rocmkit.port
from rocmkit.port import PortConfig, load_rules, scan_project
from rocmkit.port.rules import parse_rules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "port"
RULE_IDS = [rule.id for rule in load_rules().rules]


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_each_rule_fires_on_its_fixture_exactly_at_the_marked_lines(rule_id: str) -> None:
    folder = FIXTURES / "rules" / rule_id
    assert folder.is_dir(), (
        f"rule {rule_id} needs a fixture folder tests/fixtures/port/rules/{rule_id}"
    )
    report = scan_project(PortConfig(path=folder, show_info=True))
    expected = expected_markers(folder)
    assert any(rule == rule_id for _, _, rule in expected)
    assert found(report) == expected
    assert not report.issues


def test_clean_files_produce_no_finding_and_no_issue() -> None:
    report = scan_project(PortConfig(path=FIXTURES / "clean"))
    assert report.findings == ()
    assert report.issues == ()
    assert sum(report.num_files.values()) == 10  # every clean file was looked at, none skipped


def test_every_rule_names_a_fix_and_a_public_source() -> None:
    for rule in load_rules().rules:
        assert rule.fix and rule.title
        assert rule.source.startswith("https://"), rule.id


def test_a_rule_without_a_source_is_refused() -> None:
    bad = '[[rule]]\nid = "x"\nseverity = "warn"\ntitle = "t"\nfix = "f"\nsource = "somewhere"\n'
    with pytest.raises(AssertionError, match="public source"):
        parse_rules(bad)


def test_specific_rules_win_over_general_ones() -> None:
    rules = load_rules()
    assert rules.env_rule("NCCL_NVLS_ENABLE").id == "nccl-nvlink-env"
    assert rules.env_rule("NCCL_DEBUG").id == "nccl-env"
    assert rules.package_rule("nvidia-ml-py").id == "nvml"
    assert rules.package_rule("nvidia_cublas_cu12").id == "nvidia-wheels"
    assert rules.package_rule("jax", frozenset({"cuda12"})).id == "jax-cuda-extra"
    assert rules.package_rule("jax", frozenset({"cpu"})) is None


def test_public_api_is_pinned() -> None:
    assert rocmkit.port.__all__ == sorted(rocmkit.port.__all__)
    assert set(rocmkit.port.__all__) == {
        "FileIssue",
        "PortConfig",
        "PortFinding",
        "PortReport",
        "Rule",
        "RuleSet",
        "load_rules",
        "scan_project",
    }


def test_docs_page_lists_every_rule() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "port.md").read_text()
    missing = [rule_id for rule_id in RULE_IDS if f"| `{rule_id}` |" not in page]
    assert missing == []


def test_a_trimmed_rule_set_scans_with_what_it_has(tmp_path: Path) -> None:
    from rocmkit.port.rules import RuleSet

    only_nvml = RuleSet(tuple(r for r in load_rules().rules if r.id == "nvml"))
    (tmp_path / "a.py").write_text("import pynvml, torch\nx = torch.version.cuda\n")
    report = scan_project(PortConfig(path=tmp_path), only_nvml)
    assert [f.rule_id for f in report.findings] == ["nvml"]
