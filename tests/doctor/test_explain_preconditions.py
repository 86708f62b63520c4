"""Fixes that presume a fact about the machine (an NVIDIA GPU, an AMD GPU, a GPU that is not a
Mac's) are given only when the log establishes it; when it does not, the answer abstains naming
the fix as one candidate and the command that decides; when the log rules it out, the fix is not
given at all."""

from __future__ import annotations

import sys
from importlib import resources

import pytest

from rocmkit.doctor.catalogue import entries
from rocmkit.doctor.evidence import LogFacts, precondition
from rocmkit.doctor.explain import Explanation, explain, preconditions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DOCKER = 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].'
BNB = (
    "UserWarning: The installed version of bitsandbytes was compiled without GPU support. "
    "8-bit optimizers, 8-bit multiplication, and GPU quantization are unavailable."
)
NO_BINARY = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"
NOT_COMPILED = "AssertionError: Torch not compiled with CUDA enabled"


def _one(text: str, family: str) -> Explanation:
    found = [m for m in explain(text) if family in (m.family, m.id.split(":")[0])]
    assert len(found) == 1, [m.id for m in explain(text)]
    return found[0]


# -- the fact is in the log: the fix ---------------------------------------------------------------


def test_nvidia_gpu_in_the_log_gives_the_container_toolkit_fix() -> None:
    log = "NVIDIA-SMI 550.120    Driver Version: 550.120    CUDA Version: 12.4\n" + DOCKER
    m = _one(log, "container-no-gpu-driver")
    assert not m.abstain
    assert "nvidia-container-toolkit" in m.fix
    assert m.confidence == "certain"


def test_amd_gpu_in_the_log_gives_the_override_fix() -> None:
    m = _one("rocminfo: Name: gfx1032\n" + NO_BINARY, "no-binary-for-gpu")
    assert not m.abstain
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in m.fix


def test_bitsandbytes_own_words_establish_the_gpu() -> None:
    log = "RuntimeError:\n        CUDA Setup failed despite GPU being available. Please run python -m bitsandbytes"
    m = _one(log, "bitsandbytes-setup")
    assert not m.abstain
    assert "pip install -U bitsandbytes" in m.fix


def test_cpu_torch_next_to_an_nvidia_gpu_gets_the_cuda_build() -> None:
    log = "NVIDIA-SMI 475.14       Driver Version: 475.14       CUDA Version: 11.4\n" + NOT_COMPILED
    m = _one(log, "not-compiled-with-cuda")
    assert not m.abstain and "download.pytorch.org/whl/cu" in m.fix
    assert "ROCm" not in m.fix


# -- the fact is not in the log: abstain with the candidates and the command that decides --------


def test_docker_without_a_gpu_in_the_log_abstains_and_asks_nvidia_smi() -> None:
    m = _one(DOCKER, "container-no-gpu-driver")
    assert m.abstain and m.confidence == "candidates"
    assert m.ask == "nvidia-smi -L" and "nvidia-smi -L" in m.fix
    # The fix is one candidate, not the answer.
    assert "nvidia-container-toolkit" not in m.cause + m.fix
    assert any("nvidia-container-toolkit" in c for c in m.candidates)
    assert any("no NVIDIA GPU" in c for c in m.candidates)


def test_no_binary_without_a_gfx_target_abstains_and_asks_rocminfo() -> None:
    m = _one(NO_BINARY, "no-binary-for-gpu")
    assert m.abstain and m.ask.startswith("rocminfo")
    assert "HSA_OVERRIDE" not in m.cause + m.fix
    assert any("HSA_OVERRIDE" in c for c in m.candidates)


def test_bitsandbytes_cpu_library_without_a_gpu_in_the_log_abstains() -> None:
    m = _one(BNB, "bitsandbytes-setup")
    assert m.abstain and "torch.version.cuda" in m.ask
    assert "upgrade" not in (m.cause + m.fix).lower()


# -- the log rules the fact out: no fix that presumes it -------------------------------------------


def test_a_mac_gets_no_bitsandbytes_upgrade_and_no_cuda() -> None:
    log = (
        "bin /Users/me/miniconda3/envs/g/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cpu.so\n"
        + BNB
    )
    m = _one(log, "bitsandbytes-setup")
    assert not m.abstain
    assert "Mac" in m.cause
    assert "pip install -U" not in m.fix and "mps" in m.fix
    assert m.deciding == {"os_macos": "yes"}


def test_a_mac_framework_python_gets_mps_or_cpu_for_torch_without_cuda() -> None:
    log = (
        '  File "/Library/Frameworks/Python.framework/Versions/3.11/lib/python3.11/site-packages/'
        'torch/cuda/__init__.py", line 239, in _lazy_init\n' + NOT_COMPILED
    )
    m = _one(log, "not-compiled-with-cuda")
    assert "mps" in m.fix and "whl/cu" not in m.fix


def test_an_amd_gpu_rules_out_the_docker_nvidia_fix() -> None:
    m = _one("GPU: AMD Radeon RX 7900 XTX\n" + DOCKER, "container-no-gpu-driver")
    assert not m.abstain
    assert "nvidia-container-toolkit" not in m.fix and "ROCm" in m.fix


def test_an_nvidia_gpu_rules_out_the_rocm_override() -> None:
    log = "GPU: Nvidia GeForce RTX 3050 Laptop GPU\n" + NO_BINARY
    fixes = " ".join(m.fix for m in explain(log))
    assert "HSA_OVERRIDE" not in fixes and "whl/cu" in fixes


# -- near misses: words that look like the fact but are not it --------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        '  File "c:/Users/me/project/run.py", line 3',  # Windows path with forward slashes
        "C:\\Users\\me\\anaconda3\\lib\\site-packages\\torch\\cuda\\__init__.py",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        "T4 instance type requested",  # a model name alone, no GPU context
        "torch 2.1.0+cu121",  # a CUDA wheel says nothing about the GPU
    ],
)
def test_near_misses_establish_nothing(line: str) -> None:
    m = _one(line + "\n" + DOCKER, "container-no-gpu-driver")
    assert m.abstain, m.cause


def test_a_windows_home_is_not_a_mac() -> None:
    log = "C:\\Users\\me\\venv\\lib\\site-packages\\bitsandbytes\\cextension.py:34: " + BNB
    m = _one(log, "bitsandbytes-setup")
    assert m.abstain and ":no-" not in m.id and "os_macos" not in m.deciding


# -- the data --------------------------------------------------------------------------------------


def test_precondition_state_reads_establishing_facts_first() -> None:
    spec = preconditions()["nvidia_gpu"]
    both = LogFacts(values={"gpu_nvidia": "yes", "gpu_amd": "yes"})
    assert precondition(spec, both) == ("yes", "gpu_nvidia")
    assert precondition(spec, LogFacts(values={"os_macos": "yes"})) == ("no", "os_macos")
    assert precondition(spec, LogFacts()) == ("unknown", "")


def test_every_presumed_precondition_is_defined_completely() -> None:
    raw = resources.files("rocmkit.doctor").joinpath("signatures.toml").read_text()
    rows = [*tomllib.loads(raw)["signature"], *entries()]
    presumed = {p for r in rows for p in r.get("presumes", ())}
    assert presumed == set(preconditions())
    keys = {"established", "ruled_out", "ask", "unknown_cause", "decide", "present", "absent"}
    for name, spec in preconditions().items():
        assert keys | {"ruled_out_cause", "ruled_out_fix", "facts"} <= set(spec), name
        assert set(spec["facts"]) == set(spec["ruled_out"]), name
