"""`rocmkit port`: find what in a Python project breaks or silently degrades on ROCm, with the fix.

Scans Python (with `ast`), requirements/pyproject/setup.py/environment.yml, Dockerfiles, compose
files, shell scripts and CUDA sources against the rules in rules.toml (each with its source).
"""

from rocmkit.port.findings import FileIssue, PortFinding, PortReport
from rocmkit.port.project import PortConfig, scan_project
from rocmkit.port.rules import Rule, RuleSet, load_rules

__all__ = [
    "FileIssue",
    "PortConfig",
    "PortFinding",
    "PortReport",
    "Rule",
    "RuleSet",
    "load_rules",
    "scan_project",
]
