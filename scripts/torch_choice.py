#!/usr/bin/env python3
"""Which PyTorch wheels `scripts/install` installs, decided once from two probes.

Prints the pip arguments on stdout and one line saying why on stderr:
  ROCMKIT_TORCH_SPEC set           -> that, as it is
  a GPU driver seen                -> the pinned wheels from the default index (CUDA build)
  no GPU driver, CPU index answers -> the pinned wheels from PyTorch's CPU index (~5 GB less)
  no GPU driver, CPU index silent  -> the pinned wheels from the default index, said in one line
The probes are injectable so tests decide offline; the index probe gives up after
PROBE_TIMEOUT_S even when name resolution hangs (CI reaches only PyPI).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Mapping

PINNED = "torch==2.14.1 torchvision==0.29.1"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PROBE_TIMEOUT_S = 4.0
DEVICE_FILES = ("/dev/nvidia*", "/dev/kfd")
# A tool that answers (exit 0) means a driver is loaded; one that is merely installed does not.
DRIVER_TOOLS = (("nvidia-smi", "-L"), ("rocminfo",))


def _answers(command: tuple[str, ...]) -> bool:
    if shutil.which(command[0]) is None:
        return False
    try:
        done = subprocess.run(command, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def gpu_driver_seen(
    find: Callable[[str], list[str]] = glob.glob,
    answers: Callable[[tuple[str, ...]], bool] = _answers,
) -> str | None:
    """What shows a GPU driver here (`/dev/kfd`, `nvidia-smi`), or None."""
    for pattern in DEVICE_FILES:
        found = find(pattern)
        if found:
            return sorted(found)[0]
    for command in DRIVER_TOOLS:
        if answers(command):
            return command[0]
    return None


def _fetch(url: str, timeout: float) -> bool:
    request = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return bool(response.status < 400)


def index_reachable(
    url: str = CPU_INDEX + "/torch/",
    timeout: float = PROBE_TIMEOUT_S,
    fetch: Callable[[str, float], bool] = _fetch,
) -> bool:
    """Whether `url` answers within `timeout` seconds (DNS included: the probe runs in a
    thread that is abandoned when it is late)."""
    answer: list[bool] = []

    def probe() -> None:
        try:
            answer.append(fetch(url, timeout))
        except Exception:
            answer.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answer and answer[0])


def choose(
    env: Mapping[str, str],
    gpu_seen: Callable[[], str | None] = gpu_driver_seen,
    cpu_index_ok: Callable[[], bool] = index_reachable,
) -> tuple[str, str]:
    """(pip arguments, the one line that says why)."""
    spec = env.get("ROCMKIT_TORCH_SPEC", "").strip()
    if spec:
        return spec, f"torch: ROCMKIT_TORCH_SPEC: {spec}"
    gpu = gpu_seen()
    if gpu:
        return PINNED, f"torch: GPU driver seen ({gpu}): the default build from PyPI ({PINNED})"
    if cpu_index_ok():
        return (
            f"{PINNED} --index-url {CPU_INDEX}",
            f"torch: no GPU driver seen: PyTorch's CPU-only build from {CPU_INDEX}",
        )
    return PINNED, (
        "torch: no GPU driver seen but the PyTorch CPU index is unreachable: installing the "
        "default torch build from PyPI"
    )


def main() -> int:
    spec, why = choose(os.environ)
    print(why, file=sys.stderr)
    print(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
