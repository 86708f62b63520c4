"""Issue 26, session seventeen: each change, with a case where the finding must appear and one where
it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan


def _found(report: object, *rules: str) -> dict[tuple[str, int], str]:
    """{(path, line): severity} of every line of the given rules' findings."""
    return {
        (f.path, line): f.severity
        for f in report.findings  # type: ignore[attr-defined]
        if f.rule_id in rules
        for line in f.lines
    }


# -- a compose device reservation written as a Python dict ------------------------------------------

_COMPOSE = """import yaml


def service(image, gpus):
    config = {"image": image}
    if gpus:
        config["deploy"] = {
            "resources": {
                "reservations": {
                    "devices": [
                        {
                            "driver": "nvidia",
                            "count": gpus,
                            "capabilities": ["gpu"],
                        }
                    ]
                }
            }
        }
    return yaml.safe_dump({"services": {"model": config}})
"""


def test_a_generated_compose_reservation_for_the_nvidia_driver_is_an_error(
    tmp_path: Path,
) -> None:
    # compose-spec's device reservation: `driver: nvidia` names NVIDIA's container driver, which
    # an AMD host does not have, whether the file is written by hand or by the project's code.
    report = _scan(tmp_path, {"compose_gen.py": _COMPOSE})
    assert _found(report, "container-nvidia-gpu") == {("compose_gen.py", 12): "error"}
    (finding,) = [f for f in report.findings if f.rule_id == "container-nvidia-gpu"]
    assert "compose device reservation" in finding.evidence
    assert "/dev/kfd" in finding.fix


def test_a_dict_of_the_projects_own_with_a_driver_key_is_not_a_reservation(
    tmp_path: Path,
) -> None:
    # A "driver" key alone (a database or display driver setting) is not compose's reservation.
    source = 'SETTINGS = {"driver": "nvidia", "display": ":0"}\n'
    report = _scan(tmp_path, {"settings.py": source})
    assert _found(report, "container-nvidia-gpu") == {}
    # ...nor is the AMD driver's reservation.
    amd = _COMPOSE.replace('"driver": "nvidia"', '"driver": "amd"')
    assert _found(_scan(tmp_path / "amd", {"compose_gen.py": amd}), "container-nvidia-gpu") == {}
