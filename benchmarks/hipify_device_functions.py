"""Regenerate hip_names/<X.Y>.device_absent.txt: CUDA device functions the HIP release lacks.

Two definitions meet: HIPIFY's own table of the CUDA device API (docs/tables/
CUDA_Device_API_supported_by_HIP.md, section "Device Functions": every CUDA device function, and
the HIP function and release that provides it, if any), and the target's headers. A function is
listed when HIPIFY names no HIP equivalent (or one added after the release) and no header the
release installs spells the name: every top-level `hip/*.h` of hip_names/<X.Y>.headers.txt is
preprocessed by the installed hipcc, device and host passes, and its identifiers collected (HIPIFY
leaves some functions unmapped because HIP spells them the same, `__bfloat162float` in newer
releases: those are declared, so not listed). rocmkit reports a use of a listed name as
unsupported (`__frcp_rd`: HIP has only the round-to-nearest form).

    git --git-dir=<ROCm/HIPIFY mirror> show 014177bc:docs/tables/CUDA_Device_API_supported_by_HIP.md \
        > /tmp/devapi.md
    python benchmarks/hipify_device_functions.py --table /tmp/devapi.md --hipify-commit 014177bc...
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from rocmkit.atomic import atomic_write_text  # noqa: E402
from rocmkit.hipify.check import find_hipcc  # noqa: E402
from rocmkit.hipify.versions import hip_headers, installed_version  # noqa: E402

_ROW = re.compile(r"^\|`(\w+)`\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|")
_WORD = re.compile(r"[A-Za-z_]\w*")
NAMES = REPO / "src" / "rocmkit" / "hipify" / "hip_names"


def unmapped_functions(table: str, version: str) -> list[str]:
    """CUDA device functions HIPIFY's table gives no HIP equivalent for in HIP `version`."""
    section = table.split("## **2.")[0]
    found = []
    for line in section.splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        name, hip, added = row.group(1), row.group(6).strip(), row.group(7).strip()
        if not hip or (added and _key(added) > _key(version)):
            found.append(name)
    return found


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


def declared_words(hipcc: str, version: str) -> set[str]:
    """Identifiers (and macro names) of every top-level hip/ header of the release, as hipcc
    preprocesses them for gfx90a."""
    headers = sorted(h for h in hip_headers(version) if h.count("/") == 1)
    words: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="hipify-device-") as scratch:
        unit = Path(scratch) / "all.hip"
        unit.write_text("".join(f"#include <{h}>\n" for h in headers))
        env = dict(os.environ, HIP_PLATFORM="amd")
        for side in ("--cuda-device-only", "--cuda-host-only"):
            for extra in ([], ["-dM"]):
                command = [hipcc, "--offload-arch=gfx90a", "-x", "hip", side, "-E", *extra]
                done = subprocess.run(
                    [*command, str(unit)], env=env, capture_output=True, text=True, timeout=600
                )
                words.update(_WORD.findall(done.stdout))
    return words


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, required=True, help="HIPIFY's device API table")
    parser.add_argument("--hipify-commit", required=True, help="the HIPIFY commit it came from")
    parser.add_argument("--hipcc", default=find_hipcc())
    args = parser.parse_args()
    version = installed_version(args.hipcc)
    if args.hipcc is None or version is None:
        print("needs hipcc with its HIP headers (Debian: apt-get install hipcc)", file=sys.stderr)
        return 2
    candidates = unmapped_functions(args.table.read_text(), version)
    declared = declared_words(args.hipcc, version)
    absent = sorted(n for n in candidates if n not in declared)
    header = [
        f"# HIP {version}: CUDA device functions its headers do not declare",
        f"# source: ROCm/HIPIFY {args.hipify_commit} docs/tables/CUDA_Device_API_supported_by_HIP.md"
        " (no HIP equivalent, or one added later)",
        f"# checked against: every top-level hip/*.h of {version}.headers.txt preprocessed by "
        f"{args.hipcc} for gfx90a ({len(candidates) - len(absent)} of {len(candidates)} declared)",
        "# built by benchmarks/hipify_device_functions.py",
    ]
    path = NAMES / f"{version}.device_absent.txt"
    atomic_write_text(path, "\n".join([*header, *absent]) + "\n")
    print(f"{path}: {len(absent)} names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
