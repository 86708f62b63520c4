"""Generate src/rocmkit/port/cuda_extras.toml: the extras of PyPI packages that pull a CUDA-only
package, by the packages' OWN published metadata (issue 26, session twenty-nine).

`audio-separator[gpu]`, `onnxtr[gpu]`, `pymtcnn[onnx-gpu]`: an extra's name says nothing certain
of what it installs; the package's metadata does. For each package of the universe, the latest
release's Requires-Dist (PyPI's JSON API, `info.requires_dist`) is read, and every requirement
that pip installs on Linux x86-64 only when an extra is asked for (`onnxruntime-gpu>=1.20; extra
== "gpu"`: its marker holds with that extra and not without) is judged by port's own rules, as a
line of a requirements file naming it would be: a package a hand rule of rules.toml matches
(onnxruntime-gpu, cupy-cuda12x, tensorrt, nvidia-*-cu12 ...) or the generated table of CUDA-only
packages (cuda_packages.toml) matches. A rule whose requirement note says the package installs
and fails only where called (NVML's bindings) is left out: the call is the finding. A ROCm extra
beside the CUDA one does not change what the CUDA one pulls: each row is one extra.

The universe is the one port_cuda_packages.py uses (a names file, every name up to --top), and the
metadata comes from its cache (.cache/port-cuda-packages.json, filled by that script or here):
never the corpus.

    PYTHONPATH=src python benchmarks/port_cuda_extras.py --names NAMES.tsv --top 15000 \
        --max-requests 16000 --threads 8
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

import port_cuda_packages  # noqa: E402

from rocmkit.atomic import atomic_write_text  # noqa: E402
from rocmkit.port import cuda_extras  # noqa: E402
from rocmkit.port.requirements import installed_on_rocm_machine, requirement_hits  # noqa: E402
from rocmkit.port.rules import RuleSet, load_rules, normalise_name  # noqa: E402

TABLE = REPO / "src" / "rocmkit" / "port" / "cuda_extras.toml"
_EXTRA_IN_MARKER = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")
# torch's PyPI pin rule: the extra pulls torch, whose build the project's own install picks
_LEFT_OUT = frozenset({"torch-pypi-pin"})


def pulled_finding(requirement: str, rules: RuleSet) -> tuple[str, str] | None:
    """(rule id, severity) of port's finding for a requirements-file line naming `requirement`
    (no marker), or None: judged by the same code a requirements file is (hand rules with their
    version bounds, the CUDA-only table). NVIDIA's libraries that install on any machine and fail
    only when called (NCCL, cuda-python: what tritonclient[all] pulls for its CUDA shared memory)
    are left out, as port_cuda_packages.py leaves them out for a package not named for CUDA. torch's own pins are left out: what an extra pulls from
    torch is torch's build, which the project's install picks, not the extra."""
    if port_cuda_packages._CUDA_LIBRARIES.match(
        normalise_name(re.split(r"[\[<>=!~; ]", requirement)[0])
    ):
        return None  # NCCL, CUDA's Python bindings: install anywhere, fail only where called
    for found in requirement_hits(requirement, 1, rules):
        if found.severity in ("error", "warn") and found.rule.id not in _LEFT_OUT:
            return found.rule.id, found.severity
    return None


def extras_of(meta: dict[str, Any], rules: RuleSet) -> list[dict[str, str]]:
    """One row per (package, extra) whose extra pulls a CUDA-only package, from JSON metadata."""
    info = meta.get("info") or {}
    name = normalise_name(str(info.get("name", "")))
    version = str(info.get("version", ""))
    if not name or name in port_cuda_packages._TORCH:
        return []
    pulled: dict[str, list[tuple[str, str, str]]] = {}
    for text in info.get("requires_dist") or []:
        try:
            req = Requirement(str(text))
        except InvalidRequirement:
            continue
        if req.marker is None or installed_on_rocm_machine(str(text), ""):
            continue  # every install pulls it: the package itself (cuda_packages.toml's matter)
        dependency = normalise_name(req.name)
        if dependency == name:
            continue  # `pkg[all]` requiring `pkg[gpu]`: the other extra's own row says it
        for extra in sorted(set(_EXTRA_IN_MARKER.findall(str(req.marker)))):
            if not installed_on_rocm_machine(str(text), extra):
                continue
            spec = f"{req.name}{'[' + ','.join(sorted(req.extras)) + ']' if req.extras else ''}"
            finding = pulled_finding(f"{spec}{req.specifier}", rules)
            if finding is not None:
                pulled.setdefault(normalise_name(extra), []).append(
                    (f"{spec}{req.specifier}", *finding)
                )
    rows = []
    for extra, deps in sorted(pulled.items()):
        # the row's finding: the first error's, else the first warning's (in name order)
        deps = sorted(set(deps), key=lambda d: (d[2] != "error", d[0]))
        rows.append(
            {
                "name": name,
                "extra": extra,
                "version": version,
                "pulls": ", ".join(d[0] for d in deps)[:160],
                "rule": deps[0][1],
                "severity": deps[0][2],
            }
        )
    return rows


_COMMENT = (
    "# Extras of PyPI packages that pull a CUDA-only package, by the packages' own metadata:",
    "# generated by benchmarks/port_cuda_extras.py (see its docstring and docs/port.md,",
    "# session twenty-nine). Do not edit by hand: regenerate, and review the diff.",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", type=Path, required=True, help="a ranked TSV of names")
    parser.add_argument("--top", type=int, default=15000, help="keep TSV rows ranked <= this")
    parser.add_argument("--max-requests", type=int, default=60)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--cache", type=Path, default=port_cuda_packages.CACHE)
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args()
    names, _ = port_cuda_packages.universe_from_names(args.names, args.top, every_name=True)
    asked = sorted(set(names))
    cache = json.loads(args.cache.read_text()) if args.cache.is_file() else {}
    missing = [n for n in asked if n not in cache]
    if len(missing) > args.max_requests:
        parser.error(f"{len(missing)} names to look up, over --max-requests {args.max_requests}")
    if missing:
        port_cuda_packages.fetch(missing, cache, args.threads, args.timeout)
        atomic_write_text(args.cache, json.dumps(cache, indent=1, sort_keys=True))
    rules = load_rules()
    # judged without the table being generated: a row never rests on the previous table's rows
    cuda_extras.table = lambda: {}  # type: ignore[assignment]
    rows = [row for n in asked for row in extras_of(cache[n], rules)]
    header = {
        "generated": datetime.date.today().isoformat(),
        "universe": f"names file {args.names.name}, top {args.top}, every name",
        "num_names": len(asked),
        "num_not_found": sum(1 for n in asked if "error" in cache[n]),
        "num_extras": len(rows),
    }
    atomic_write_text(args.out, port_cuda_packages.render(rows, header, _COMMENT, "extra"))
    print(json.dumps(header))
    for row in rows:
        print(
            f"  {row['name']}[{row['extra']}]  ->  {row['pulls']}  ({row['rule']}, {row['severity']})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
