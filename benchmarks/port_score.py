"""Score `rocmkit port` on real projects: precision and recall against hand-checked hazards, and speed.

For each project of a part (benchmarks/port_corpus.toml, split decided before any rule was written
against it), port scans the listed subset of the pinned sdist; every finding at warn or error is
matched to the hand-written hazards of tests/fixtures/port_hazards/<name>.toml:

  match      same file, one of the finding's lines within +-LINE_SLACK (port reports one finding
             per rule and file, with every line), and the rule's kinds (RULE_KINDS) include the
             hazard's kind. A finding that matches a hazard is a true positive (two findings on one
             hazard both count); one on a `not_hazard` place or matching nothing is a false positive.
  precision  true-positive findings / findings at warn or error
  recall     hazards matched by a warn/error finding / hazards; a hazard reported only at info, or
             under a kind that does not fit, is a miss (the user would not see it, or be misled)

Speed: port over the part against a plain os.walk + read + ast.parse of the same .py files,
alternated for --rounds rounds in one process, in process CPU time (time.process_time).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/port_score.py [--part dev|test|test2|...|test21|test22|test23|test24|test25|test26|test27|test28|test29|test30|test31|test32|test33|test34|test35|test36|test37|test38|test39|test40|test41|test42|test43|test44|test45|test46|test47|test48|test49|test50|test51|test52|test54|test55|test56|test57|test58|test59|test60|test61|test62|test63|test64|test65|test66|test67|test68|test69|test70|test71|test72|test73|test74|test75|test76|test77|test78|test79|test80|test81|test82|test83|test84|test85|test86|test87|test88|test89|test90|test91|test92|test93|test94|test95|test96|test97|test98|test99|test100|test101|test102|test103|test104|test105|test106|test107|test108|test109|test110|test111|test112|test113|test114|test115|test116|test117|test118|test119|test120|test121|test122|test123|test124|test125|test126|test127|test128|test129|test130|test131|test132|test133|test134|test135|test136|test137|test138|test139|test140|test141|test142|test143|test144|test145|test146|test147|test148|test149|test150|test151|test152|test153|test154|test155|test156|test157|test158|test159|test160|test161|test162|test163|test164|test165|test166|test167|test168|test169|test170|test171|test172|test173|test174|test176|test177|test178|test179|test180|test181|test182|test183|test184|test185|test186|test187|test188|test189|test191|test192|test193|test194|test195|test196|test197|test198|test199|test201|test203|test205|test211|test212|test213|test214|test216|test217|test218|test219|test220|test221|test222|test223|test224|test225|test226|test227|test228|test229|test230|test231|test232|test233|test234|test235|test236|test237|test238|test239|test240|test241|test242|test243|test246|test247|test248|test249|test250|test251|test260|test261|test262|test263|test264|test265|test266|test267|test268|test269|test270|test271|test272|test273|test274|test275|test276|test277|test278|test279|test280|test281|test282|test283|test284|test285|test286|test287|test290|test292|test291|test288|test289|test293|test294|test295|test296|test297|test298|test299|test300|test301|test302|test303|test304|test305|test306|test307|test308|test309|test310|test311|test312|test313|test314|test315|test316|test317|test318|test319|test320|test321|test322|test323|test324|test325|test326|test327|test328|test329|test330|test331|test332|test333|test335|test336|test338|test340|test339|test341|test342|test343|test344|test345|test346|test347|test348|test349|test350|test351|test352|test353|test354|test355|test356|test357|test358|test359|test360|test361|test362|test363|test364|test365|test366|test367|test368|test369|test370|test371|test372|test373|test374|test375|test376|test377|test378|test379|test380|test381|test382|test383|test384|test385|test386|test387|test388|test389|test390|test391|test392|test393|test394|test395|test396|test397|test398|test399|test400|test401|test402|test403|test404|test405|test406|test407|test408|test409|test410|test411|test412|test413|test414|test415|test416|test417|test418|test419|test420|test421|test422|test423|test424|test425|test426|test427|test428|test429|test430|test431|test432|test433|test434|test435|test436|test437|test438|test439|test440|test441|test442|test443|test444|test445|test446|test447|test448|test449|test450|test451|test452|test453|test454|test455|test456|test457|test458|test459|test460|test461|test462|test463|test464|test465|test466|test467|test468|test469|test470|test471|test472|test473|test474|test475|test476|test477|test478|test479|test480|test481|test482|test483|test484|test485|test486|test487|test488|test489|test490|test491|test492|test493|test494|test495|test496|all]
        [--exclude NAME ...] [--rounds 3] [--write [--out FILE]]

Prints the scores; with --write saves benchmarks/results/port_score.json (or --out): commit,
command, machine, load, every round, medians, spreads, per-project precision/recall, every false positive and miss).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import port_corpus
from resultfile import cpu_model

from rocmkit import __version__
from rocmkit.port import PortConfig, PortFinding, scan_project

RESULT = port_corpus.REPO / "benchmarks" / "results" / "port_score.json"
LINE_SLACK = 3
_CODE = {"cuda-only-package", "cuda-only-import"}
_GPU_QUERY = {"nvidia-smi-call", "nvml-call"}
# A CUDA-only library loaded or linked (libcuda's driver API, NVRTC, CUTLASS/CuTe): the kind
# table's cuda-extension-no-hip names it too ("linking CUDA-only libraries (... libcuda ...)"), so
# a list may file it there or as the import/package it is (session thirty).
_LOADED = _CODE | {"cuda-extension-no-hip"}
# Which hazard kinds (port_corpus.KINDS) a finding of each rule can stand for.
RULE_KINDS: dict[str, set[str]] = {
    "flash-attn": _CODE,
    "bitsandbytes-old": _CODE,
    "xformers": _CODE,
    "apex": _CODE,
    "cupy-cuda": _CODE,
    # a provider choice with no AMD branch (cuda-only-import); session fourteen: annotators with no
    # ONNX Runtime kind file a list led by TensorrtExecutionProvider as TensorRT use (visionflow-edge,
    # nebullvm, both lists), so that kind counts too
    "ort-nvidia-provider": _CODE | {"tensorrt-import"},
    # ffmpeg asked for NVENC/CUVID (a video engine with no AMD driver; also how some count GPUs)
    "ffmpeg-nvidia-codec": _CODE | {"nvidia-smi-call"},
    # session thirty: apt/yum installs from NVIDIA's repos (the container toolkit's: GPU access)
    "nvidia-system-package": _CODE | {"docker-gpus"},
    "opencv-dnn-cuda": _CODE,  # OpenCV's CUDA DNN back end (no AMD build: runs on the CPU)
    "rapids-cuda": _CODE,  # RAPIDS' -cuXX wheels, CMake lookups and (round eleven) imports
    "dask-cuda": {"cuda-only-package"},
    "rocm-arch-list": {"gencode-flags"},  # a target list without gfx942/gfx950
    "nvml": _GPU_QUERY | {"cuda-only-package"},  # its packages (pynvml, nvidia-ml-py) too
    "nvidia-wheels": _CODE,
    "nvidia-library-import": _CODE,
    "cuda-build-package": _CODE,
    "paddle-gpu-pypi": _CODE,  # session twenty-eight: Paddle's PyPI GPU wheel is CUDA
    "cuda-local-version": {"torch-cuda-pin"} | _CODE,
    "pycuda": _CODE,
    "tensorrt": {"tensorrt-import"} | _CODE,
    "onnxruntime-gpu": _CODE,
    "cuda-gpu-framework": _CODE,  # round thirteen (c): tensorflow in a GPU-named extra
    "jax-cuda-plugin": _CODE,
    "jax-cuda-extra": _CODE,
    "tensorflow-cuda-extra": _CODE,  # session nineteen: tensorflow[and-cuda]
    "deepspeed-ops": _CODE,
    "conda-cuda": {"torch-cuda-pin"} | _CODE,
    "torch-cuda-index": {"torch-cuda-pin"},
    "cuda-base-image": {"cuda-base-image"},
    "docker-gpus": {"docker-gpus"},
    "taichi-cuda-arch": _CODE,
    # no kind names it; the lists that do file it with torch.version.cuda's tests
    "cuda-oom-message": {"torch-version-cuda"},
    "compose-nvidia": {"docker-gpus"},
    "nvidia-container-env": {"nvidia-container-env", "docker-gpus"},
    "cuda-visible-devices": {"cuda-visible-devices"},
    "ray-noset-cuda-visible-devices": {"cuda-visible-devices"},
    "paddle-tensorrt": {"tensorrt-import"},
    "cargo-cuda-crate": {"cuda-only-package", "cuda-extension-no-hip"},
    "cargo-cuda-feature": {"cuda-extension-no-hip", "cuda-only-package"},
    "nccl-nvlink-env": {"nccl-env"},
    "nccl-env": {"nccl-env"},
    "nvidia-smi": _GPU_QUERY,
    "nvidia-mps": _GPU_QUERY,
    "cmake-cuda-architectures": {"gencode-flags", "cmake-no-hip"},
    "dcgm": _GPU_QUERY | {"cuda-only-import"},
    "torch-version-cuda": {"torch-version-cuda"},
    "device-capability": {"device-capability"},
    "cudnn-disabled": {"cudnn-disabled"},
    "cudnn-means-miopen": set(),
    "warp-size-32": {"warp-size-32"},
    "cuda-kernel-hazard": {"warp-size-32"},
    "cuda-warp-mask-32": {"warp-size-32"},
    "cuda-inline-ptx": {"inline-ptx"},
    "python-inline-ptx": {"inline-ptx"},  # round fifteen (a): PTX in Python inline-asm calls
    "cuda-arch-guard": {"cuda-arch-guard"},
    "triton-tf32-dot": {"device-capability", "gencode-flags"},  # session thirteen
    "triton-num-warps-32": {"warp-size-32"},  # session fourteen
    "mlx-cuda": {"cuda-only-package"},  # session fourteen
    "cuda-wheel-index": {
        "cuda-only-package",
        "torch-cuda-pin",
        "cuda-only-import",
    },  # session fourteen
    "flash-attn-cute": {"cuda-only-package", "cuda-only-import"},  # session fourteen
    "tf-built-with-cuda": {"torch-version-cuda"},
    "lspci-nvidia": {
        "nvidia-smi-call"
    },  # session thirteen: GPU detection by NVIDIA's name  # session thirteen: the same question of TF
    # session thirteen: a stale AMD guard loses what its branch held (a warp of 64, a HIP path)
    "hip-platform-hcc": {"warp-size-32", "cuda-arch-guard", "cuda-extension-no-hip"},
    "cutlass-dsl": _LOADED,
    "cuda-image": {"cuda-base-image"},
    # session thirty: with its CUDA architecture lines (the kind table names CMAKE_CUDA_ARCHITECTURES)
    # and its CUDA library links (the kind table's "linking CUDA-only libraries")
    "cmake-cuda-only": {"cmake-no-hip", "gencode-flags", "cuda-extension-no-hip"},
    "torch-pypi-pin": {"torch-cuda-pin"},
    "uv-lock-cuda-torch": {"torch-cuda-pin"},
    "pixi-lock-cuda-torch": {"torch-cuda-pin"},
    # session sixteen: a pixi environment that needs CUDA
    "pixi-cuda": {"cuda-only-package", "torch-cuda-pin"},
    "cuda-python": _CODE,
    "vllm-pypi": _CODE,
    "sglang-pypi": _CODE,
    "flashinfer-pypi": _CODE,
    "flashinfer": _CODE,
    "eetq": _CODE,
    "transformer-engine-pypi": _CODE,
    "auto-gptq-pypi": _CODE,
    "grouped-gemm": _CODE,
    "keops-cuda-only": _CODE,
    "bitblas-pypi": _CODE,
    "ct2-device-from-torch": _CODE,
    "faster-whisper-ctranslate2": _CODE,
    "whisperx-ctranslate2": _CODE,
    "ctranslate2-pypi": _CODE,
    "xformers-pypi": _CODE,
    "autoawq-kernels": _CODE,
    "cuda-extension": {"cuda-extension-no-hip"},
    "nvcc-only-flags": {"gencode-flags"},
    "container-nvidia-gpu": {"docker-gpus"},
    "apptainer-nv": {"docker-gpus"},
    "cdi-nvidia-device": {"docker-gpus"},
    "cuda-home-none": {"cuda-extension-no-hip", "device-capability"},
    "jax-cuda-platform": {"cuda-extension-no-hip", "cuda-only-import"},
    "cuda-driver-library": _LOADED,
    "nvidia-only-library": _CODE,
    "nvidia-media-library": _CODE,
    "flash-attn-v1-api": _CODE,
    "cuequivariance-kernels": _CODE,
    "triton-cuda-libdevice": _CODE,
    "nvcc-jit-package": _CODE,
    "numba-cuda": {"cuda-only-import"},
    "nvidia-library-load": _LOADED,
    "isaac-gym": _CODE,
    "nvrtc-python": _LOADED,
    "sparse-conv-cuda-only": _CODE,  # round fourteen (b): torchsparse, MinkowskiEngine
    "cmake-old-findhip": {"cmake-no-hip"},
    "llama-cpp-cuda-build": {
        "cmake-no-hip"
    },  # session twenty: ggml configured for CUDA  # round fourteen (b): FindHIP from /opt/rocm/hip
    "cuda-only-pypi": _CODE,  # round fifteen (b): CUDA-only by its own PyPI metadata
    "nvidia-gpu-pypi": _CODE,  # session nine: NVIDIA CUDA by its own PyPI classifier
    "hip-atomic-redefinition": {"cuda-extension-no-hip"},  # session seven: hipcc rejects it
    "cuda-header-no-hip": {"cuda-extension-no-hip"},  # session eleven: hipcc finds no file
}


@dataclass(frozen=True, kw_only=True)
class Scan:
    """One project's findings (paths relative to the sdist's top folder) and file counts."""

    findings: tuple[PortFinding, ...]
    num_files: int
    num_python: int


# gitignore off: the pinned sdists are not checkouts; they sit in this repository's ignored cache,
# where git would be asked (and answer "ignored") once per entry. Left out for port before the
# option existed (port_speed.py --against an older commit runs this file with its src/).
_NO_GIT: dict[str, Any] = (
    {"gitignore": False} if "gitignore" in {f.name for f in dataclasses.fields(PortConfig)} else {}
)


def scan(project: port_corpus.Project) -> Scan:
    """port over each entry of the project's subset, paths rebased onto the sdist root."""
    root = project.root()
    findings: list[PortFinding] = []
    num_files = num_python = 0
    for entry in project.scan:
        path = root / entry
        report = scan_project(PortConfig(path=path, show_info=True, **_NO_GIT))
        num_files += sum(report.num_files.values())
        num_python += report.num_files.get("python", 0)
        for f in report.findings:
            rel = entry if path.is_file() else _join(entry, f.path)
            findings.append(PortFinding(**{**vars(f), "path": rel}))
    return Scan(findings=tuple(findings), num_files=num_files, num_python=num_python)


def _join(entry: str, rel: str) -> str:
    return rel if entry == "." else f"{entry.rstrip('/')}/{rel}"


def python_files(project: port_corpus.Project) -> list[str]:
    """The .py files of the subset, by a plain os.walk (the baseline's input)."""
    files = []
    for entry in project.scan:
        path = project.root() / entry
        if path.is_file():
            files += [str(path)] if path.suffix == ".py" else []
            continue
        for directory, _, names in os.walk(path):
            files += [os.path.join(directory, n) for n in names if n.endswith(".py")]
    return files


def parse_all(files: list[str]) -> None:
    """The baseline: read and ast.parse every file (what any AST scanner pays at least)."""
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        with contextlib.suppress(SyntaxError, ValueError):  # py2 files in old sdists
            ast.parse(data)


def _near(finding: PortFinding, place: dict[str, Any]) -> bool:
    """Same file and one of the finding's lines (a finding groups a rule's places in a file)
    within LINE_SLACK of the place."""
    return finding.path == place["file"] and any(
        abs(line - place["line"]) <= LINE_SLACK for line in finding.lines or (finding.line,)
    )


def score(
    project: port_corpus.Project, found: Scan, expected: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Precision/recall of one project's findings against its hazard list (or `expected`:
    {'hazard': [...], 'not_hazard': [...]}, e.g. a second annotator's list)."""
    expected = expected or port_corpus.load_hazards(project.name)
    hazards, not_hazards = expected["hazard"], expected["not_hazard"]
    shown = [f for f in found.findings if f.severity in port_corpus.SEVERITIES]
    true_positives, false_positives = [], []
    for f in shown:
        kinds = RULE_KINDS.get(f.rule_id, set())
        if any(_near(f, h) and h["kind"] in kinds for h in hazards):
            true_positives.append(f)
            continue
        known = next((n for n in not_hazards if _near(f, n)), None)
        false_positives.append(_fp_row(f, known))
    misses = [_miss_row(h, found.findings) for h in hazards if not _matched(h, shown)]
    return {
        "num_findings": len(shown),
        "num_info_findings": len(found.findings) - len(shown),
        "num_true_positive": len(true_positives),
        "num_hazards": len(hazards),
        "num_hazards_found": len(hazards) - len(misses),
        "precision": _ratio(len(true_positives), len(shown)),
        "recall": _ratio(len(hazards) - len(misses), len(hazards)),
        "false_positives": false_positives,
        "misses": misses,
    }


def _matched(hazard: dict[str, Any], findings: list[PortFinding]) -> bool:
    return any(
        _near(f, hazard) and hazard["kind"] in RULE_KINDS.get(f.rule_id, ()) for f in findings
    )


def _fp_row(f: PortFinding, known: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "where": f"{f.path}:{f.line}",
        "rule": f.rule_id,
        "severity": f.severity,
        "listed_not_hazard": known is not None,
        "why_not": known["why"] if known else None,
    }


def _miss_row(hazard: dict[str, Any], findings: tuple[PortFinding, ...]) -> dict[str, Any]:
    nearby = [f for f in findings if _near(f, hazard)]
    return {
        "where": f"{hazard['file']}:{hazard['line']}",
        "kind": hazard["kind"],
        "severity": hazard["severity"],
        "why": hazard["why"],
        "nearby_findings": [f"{f.rule_id} ({f.severity}) at {f.line}" for f in nearby],
    }


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def score_part(projects: list[port_corpus.Project]) -> dict[str, Any]:
    per_project = {p.name: score(p, scan(p)) for p in projects}
    totals = {
        key: sum(r[key] for r in per_project.values())
        for key in ("num_findings", "num_true_positive", "num_hazards", "num_hazards_found")
    }
    return {
        "projects": [p.name for p in projects],
        **totals,
        "precision": _ratio(totals["num_true_positive"], totals["num_findings"]),
        "recall": _ratio(totals["num_hazards_found"], totals["num_hazards"]),
        "per_project": per_project,
    }


def pooled(scored: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The parts' counts added together (precision and recall over all their findings/hazards)."""
    keys = ("num_findings", "num_true_positive", "num_hazards", "num_hazards_found")
    totals = {key: sum(part[key] for part in scored.values()) for key in keys}
    return {
        "parts": list(scored),
        **totals,
        "precision": _ratio(totals["num_true_positive"], totals["num_findings"]),
        "recall": _ratio(totals["num_hazards_found"], totals["num_hazards"]),
    }


def time_part(projects: list[port_corpus.Project], rounds: int) -> dict[str, Any]:
    """Alternating rounds of port and the parse baseline, in process CPU seconds."""
    files = [f for p in projects for f in python_files(p)]
    cpu: dict[str, list[float]] = {"port": [], "baseline": []}
    wall: dict[str, list[float]] = {"port": [], "baseline": []}
    num_files = num_python = 0
    for _ in range(rounds):
        for name in ("port", "baseline"):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            if name == "port":
                scans = [scan(p) for p in projects]
                num_files = sum(s.num_files for s in scans)
                num_python = sum(s.num_python for s in scans)
            else:
                parse_all(files)
            cpu[name].append(time.process_time() - cpu0)
            wall[name].append(time.perf_counter() - wall0)
    return _speed_summary(cpu, wall, num_files, num_python, len(files))


def _speed_summary(
    cpu: dict[str, list[float]],
    wall: dict[str, list[float]],
    num_files: int,
    num_python: int,
    num_baseline: int,
) -> dict[str, Any]:
    port_rates = [num_files / s for s in cpu["port"]]
    port_py_rates = [num_python / s for s in cpu["port"]]
    base_rates = [num_baseline / s for s in cpu["baseline"]]
    ratios = [p / b for p, b in zip(port_py_rates, base_rates, strict=True)]
    return {
        "num_files_port": num_files,
        "num_python_port": num_python,
        "num_python_baseline": num_baseline,
        "rounds": {"cpu_s": cpu, "wall_s": wall},
        "port_files_per_cpu_s": _stats(port_rates),
        "port_python_files_per_cpu_s": _stats(port_py_rates),
        "baseline_python_files_per_cpu_s": _stats(base_rates),
        "port_over_baseline_python": _stats(ratios),
    }


def _stats(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 2),
        "min": round(min(values), 2),
        "max": round(max(values), 2),
        "spread_pct": round(100 * (max(values) - min(values)) / statistics.median(values), 1),
    }


def environment() -> dict[str, Any]:
    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=port_corpus.REPO, capture_output=True, text=True)
        return out.stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "rocmkit": __version__,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part",
        nargs="+",
        choices=(*port_corpus.PARTS, "all"),
        default=["all"],
        help="one or more parts; several named parts get `pooled` totals (not with all)",
    )
    parser.add_argument(
        "--exclude",
        nargs="+",
        default=[],
        metavar="NAME",
        help="leave these projects out (e.g. one a rules round saw by accident); recorded",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="save the result file (--out)")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    projects = port_corpus.load_manifest()
    unknown = set(args.exclude) - {p.name for p in projects}
    if unknown:
        parser.error(f"--exclude: no such project in the manifest: {', '.join(sorted(unknown))}")
    projects = [p for p in projects if p.name not in args.exclude]
    problems = port_corpus.fetch(projects)
    if problems:
        print("\n".join(f"port corpus: could not fetch {p}" for p in problems), file=sys.stderr)
        return 1
    parts = port_corpus.PARTS if "all" in args.part else tuple(dict.fromkeys(args.part))
    load_before = os.getloadavg()
    document: dict[str, Any] = {
        "schema": "rocmkit.port_score",
        "schema_version": 1,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "environment": environment(),
        "line_slack": LINE_SLACK,
        "manifest": {p.name: f"{p.version} {p.sha256[:12]} {p.part}" for p in projects},
        "split": port_corpus.load_split(),
        "excluded": sorted(args.exclude),
        "parts": {},
    }
    for part in parts:
        chosen = [p for p in projects if p.part == part]
        document["parts"][part] = {
            **score_part(chosen),
            "speed": time_part(chosen, args.rounds),
        }
    if len(parts) > 1 and "all" not in args.part:  # pooled held-out parts, never seen with unseen
        document["pooled"] = pooled(document["parts"])
    document["load_average"] = {"before": load_before, "after": os.getloadavg()}
    if args.write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(document, indent=1) + "\n")
    _print_summary(document)
    return 0


def _print_summary(document: dict[str, Any]) -> None:
    if "pooled" in document:
        p = document["pooled"]
        print(
            f"pooled {'+'.join(p['parts'])}: precision {p['precision']} ({p['num_true_positive']}/"
            f"{p['num_findings']}), recall {p['recall']} ({p['num_hazards_found']}/{p['num_hazards']})"
        )
    for part, result in document["parts"].items():
        speed = result["speed"]
        print(
            f"{part}: precision {result['precision']} ({result['num_true_positive']}/"
            f"{result['num_findings']}), recall {result['recall']} ({result['num_hazards_found']}/"
            f"{result['num_hazards']}); port {speed['port_python_files_per_cpu_s']['median']:,.0f} "
            f"py files/CPU-s vs parse {speed['baseline_python_files_per_cpu_s']['median']:,.0f}"
        )
        for name, r in result["per_project"].items():
            print(
                f"  {name:14} findings {r['num_findings']:3d}  tp {r['num_true_positive']:3d}  "
                f"hazards {r['num_hazards_found']}/{r['num_hazards']}"
            )


if __name__ == "__main__":
    sys.exit(main())
