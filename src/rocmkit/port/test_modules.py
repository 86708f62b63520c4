"""Values written into a project's tests: test data, not what a user runs.

pytest collects `test_*.py` and `*_test.py` files (its default `python_files`), reads fixtures
from `conftest.py`, and by convention finds them under a `tests/` or `test/` folder (pytest's
"Good Integration Practices"). In those files a Kubernetes resource name, an ONNX Runtime provider
list, a wheel index URL, an out-of-memory message or an ffmpeg encoder name is what a test feeds to
the code under test or expects back from it (`assert limits == {"nvidia.com/gpu": 1}`): a ROCm
user never runs it, and the project's own code, where the value comes from, is scanned anyway.
Such findings are kept at info. Calls and imports in tests stay as they are: an NVIDIA-only
import or an nvidia-smi call in a test is still a test that fails on an AMD machine.
"""

from __future__ import annotations

import fnmatch
import posixpath

from rocmkit.port.findings import Hit, demoted

# pytest's defaults (docs: "Changing naming conventions", python_files) and its plugin file
_TEST_FILES = ("test_*.py", "*_test.py", "conftest.py")
_TEST_DIRS = frozenset({"tests", "test"})
# Checks and rules whose finding is a value written in the code rather than a call or an import:
# a test's fixture or expected output when it sits in a test module.
VALUE_CHECKS = frozenset(
    {"container-gpu-request", "ort-nvidia-provider", "cuda-oom-message", "ffmpeg-nvidia-codec"}
)
VALUE_RULES = frozenset({"torch-cuda-index", "cuda-wheel-index", "docker-gpus"})
NOTE = "a value in the project's tests (test data): a ROCm user never runs it"


def is_test_file(rel: str) -> bool:
    """Whether `rel` ('/'-separated) is a test module by pytest's conventions, or any file in a
    tests/ or test/ folder (fixtures, golden outputs)."""
    folders = rel.split("/")[:-1]
    if any(part.lower() in _TEST_DIRS for part in folders):
        return True
    name = posixpath.basename(rel)
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _TEST_FILES)


def demote_test_values(rel: str, hits: list[Hit]) -> list[Hit]:
    """`hits` of a file, with the values a test module holds kept at info."""
    if not hits or not is_test_file(rel):
        return hits
    return [demoted(h, "info", NOTE) if _is_value(h) else h for h in hits]


def _is_value(h: Hit) -> bool:
    return h.severity != "info" and (h.rule.check in VALUE_CHECKS or h.rule.id in VALUE_RULES)
