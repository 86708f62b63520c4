"""Every real log in tests/fixtures/explain_corpus gets the cause and fix its thread established,
and near misses stay silent (a wrong fix is worse than none)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rocmkit.doctor.explain import explain, signatures

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "explain_corpus"


def corpus() -> list[tuple[str, dict]]:
    logs = []
    for path in sorted(CORPUS.glob("*.toml")):
        for i, log in enumerate(tomllib.loads(path.read_text(encoding="utf-8"))["log"]):
            logs.append((f"{path.stem}[{i}]", log))
    return logs


LOGS = corpus()


@pytest.mark.parametrize("log", [log for _, log in LOGS], ids=[name for name, _ in LOGS])
def test_the_thread_fix_and_no_wrong_one(log):
    found = {e.id: e for e in explain(log["text"])}
    assert log["source"].startswith("https://github.com/") and log["resolution"]
    expected = log.get("expect")
    if expected:
        assert expected in found, f"{expected} not in {sorted(found)}"
        explanation = found[expected]
        for word in log.get("fix_contains", ()):
            assert word in explanation.fix, (word, explanation.fix)
        for word in log.get("fix_excludes", ()):
            assert word not in explanation.fix, (word, explanation.fix)
        assert explanation.level == log.get("level", explanation.level)
        assert not re.search(r"\{\w+\}", explanation.fix + explanation.cause)  # all filled
    for silent in log.get("expect_not", ()):
        assert silent not in found, f"{silent} fired on a near miss"


def test_corpus_size_and_every_signature_family_has_real_logs():
    """Issue 12: at least 60 real logs across at least 25 failure families."""
    covered = {s.family for _, log in LOGS for s in signatures() if s.id == log.get("expect")}
    assert len(LOGS) >= 60 and len(covered) >= 25, (len(LOGS), len(covered))
    near_misses = sum(bool(log.get("expect_not") or log.get("fix_excludes")) for _, log in LOGS)
    assert near_misses >= 20


def test_explanations_name_the_lines_they_read():
    log = next(log for name, log in LOGS if name.startswith("invalid-device-function[0]"))
    (found,) = [e for e in explain(log["text"]) if e.family == "invalid-device-function"]
    lines = dict(found.evidence)
    assert "current device: 1" in found.line or any(
        "current device: 1" in t for t in lines.values()
    )
    assert any("740M" in text and "gfx1103" in text for text in lines.values())
    assert found.facts["gfx"] == "gfx1103" and found.facts["integrated"] == "yes"


def test_on_the_failing_machine_detect_fills_what_the_log_lacks():
    from rocmkit.platform import DeviceInfo, Platform

    rx6700 = DeviceInfo(index=0, name="AMD Radeon RX 6700 XT", vendor="amd", arch="gfx1031")
    here = Platform(backend="rocm", torch_version="2.9.0+rocm6.4", devices=(rx6700,))
    log = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
    (alone,) = explain(log)
    assert "rocminfo" in alone.fix  # nothing in the log names the GPU: say what to run
    (combined,) = explain(log, here)
    assert (
        combined.fix.startswith("Set HSA_OVERRIDE_GFX_VERSION=10.3.0") and "gfx1031" in combined.fix
    )
    assert (0, "(this machine, from detect())") in combined.evidence


def test_docs_list_every_family_with_its_threads():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "doctor.md").read_text()
    for path in CORPUS.glob("*.toml"):
        assert f"`{path.stem}`" in docs, path.stem
    for _, log in LOGS:
        assert log["source"].replace("https://github.com/", "") in docs, log["source"]
