"""`rocmkit port` speed on a generated tree vs the plain AST scan every Python file would need.

Generates a project of --files Python modules (default 6,000; a --hot share of them contain
something port reports: a flash_attn import, a torch.version.cuda check, NCCL variables), plus
requirements files and Dockerfiles, then times, alternating rounds in one process on one core:

  port      rocmkit.port.scan_project over the tree (findings, file issues, everything)
  baseline  os.walk + read + ast.parse of every .py file (no rules at all): the floor of any
            scanner that parses each file once
  read      os.walk + read of every .py file (the I/O floor)

Prints Python files per CPU-second (process CPU time: a generated tree sits in the page cache, so the
work is CPU work) for each and port/baseline. A generated tree is kinder than a real one (same
module shape everywhere); real trees are scored by another benchmark (port_score.json).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/port_speed.py [--files 6000] [--rounds 3]

With --part PART (any part benchmarks/port_corpus.toml names: dev, test, test2, ...) the tree is
not generated: port scans the pinned real projects of that part (their listed subsets, every file
kind), alternated with a plain walk + read + ast.parse of the same .py files; the result goes to
port_speed_<part>.json.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/port_speed.py --part test --rounds 5

--against COMMIT adds port at an older commit (its src/ from git archive), alternated with this
tree's, each round in a fresh process for both sides (the median of three warm scans there): a
before/after figure on the same machine under the same load (a shared machine's load moves the
absolute figures by a third).
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resultfile import ResultRun, add_result_args, ratios

from rocmkit.port import PortConfig, scan_project

CLEAN_MODULE = '''"""Module {i}: a training utility that knows nothing about vendors."""

import math
import torch
from torch import nn


class Block{i}(nn.Module):
    """A residual MLP block."""

    def __init__(self, width: int = {width}, dropout: float = 0.1) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(self.norm(x))
        h = torch.nn.functional.gelu(h)
        return x + self.drop(self.down(h))


def schedule_{i}(step: int, warmup: int = 100, total: int = 10_000) -> float:
    if step < warmup:
        return step / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1 + math.cos(math.pi * progress))


def device_{i}() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
'''

HOT_SNIPPETS = (
    "from flash_attn import flash_attn_func\n",
    "if torch.version.cuda is None:\n    raise RuntimeError('needs CUDA')\n",
    "os.environ['NCCL_P2P_LEVEL'] = 'NVL'\n",
    "major, minor = torch.cuda.get_device_capability()\nUSE_BF16 = major >= 8\n",
    "out = subprocess.run(['nvidia-smi', '-L'], capture_output=True)\n",
)


def make_tree(root: Path, num_files: int, hot_share: float, seed: int = 0) -> int:
    """Write the project; returns the number of Python files."""
    rng = random.Random(seed)
    for i in range(num_files):
        package = root / f"pkg{i // 200}" / f"sub{i // 50 % 4}"
        package.mkdir(parents=True, exist_ok=True)
        text = CLEAN_MODULE.format(i=i, width=rng.choice((256, 512, 768)))
        if rng.random() < hot_share:
            text = "import os\nimport subprocess\n" + text + rng.choice(HOT_SNIPPETS)
        (package / f"module_{i}.py").write_text(text)
    for i in range(num_files // 500):
        (root / f"pkg{i}" / "requirements.txt").write_text("torch>=2.4\nflash-attn==2.6.3\nnumpy\n")
        (root / f"pkg{i}" / "Dockerfile").write_text("FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n")
    return num_files


def python_files(root: Path) -> list[str]:
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names if n.endswith(".py")]


def baseline(root: Path, parse: bool) -> int:
    count = 0
    for path in python_files(root):
        with open(path, "rb") as f:
            data = f.read()
        if parse:
            ast.parse(data)
        count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=6000)
    parser.add_argument("--hot", type=float, default=0.05, help="share of files with findings")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--part", help="time a part of the real corpus instead (a part of port_corpus.toml)"
    )
    parser.add_argument(
        "--against",
        metavar="COMMIT",
        help="with --part: also time port's src/ at COMMIT against this tree's, each round in a"
        " fresh process for both, alternated (figure port_over_COMMIT)",
    )
    add_result_args(parser, "port_speed")
    args = parser.parse_args()
    if args.part:
        corpus_speed(args)
        return
    run = ResultRun.start("port_speed", args)
    with tempfile.TemporaryDirectory(prefix="rocmkit-port-speed-") as scratch:
        root = Path(scratch)
        num_py = make_tree(root, args.files, args.hot)
        times: dict[str, list[float]] = {"port": [], "baseline": [], "read": []}
        num_findings = 0
        for _ in range(args.rounds):
            start = time.process_time()
            report = scan_project(PortConfig(path=root))
            times["port"].append(time.process_time() - start)
            num_findings = len(report.findings)
            for name, parse in (("baseline", True), ("read", False)):
                start = time.process_time()
                baseline(root, parse)
                times[name].append(time.process_time() - start)
        rates = {k: num_py / statistics.median(v) for k, v in times.items()}
        print(f"{num_py} Python files ({args.hot:.0%} with findings), {num_findings} findings")
        for name, rate in rates.items():
            print(f"  {name:9} {rate:10,.0f} Python files/CPU-s (median of {args.rounds})")
            run.add(
                f"{name}_files_per_cpu_s", [num_py / t for t in times[name]], unit="files/CPU-s"
            )
        print(
            f"port / baseline (read + ast.parse every file) = {rates['port'] / rates['baseline']:.2f}x"
        )
        print(f"port / read-only floor = {rates['port'] / rates['read']:.2f}x")
        run.add(
            "port_over_baseline",
            ratios(times["baseline"], times["port"]),
            unit="x",
            baseline="read + ast.parse of every file",
        )
    run.finish()


def corpus_speed(args: argparse.Namespace) -> None:
    """Alternated rounds of port over a corpus part and of read + ast.parse of its .py files."""
    import port_corpus
    import port_score

    manifest = port_corpus.load_manifest()
    projects = [p for p in manifest if p.part == args.part]
    if not projects:  # the parts are whatever the manifest names (a new one needs no code)
        parts = ", ".join(sorted({p.part for p in manifest}))
        raise SystemExit(f"no project in part {args.part!r}; parts: {parts}")
    problems = port_corpus.fetch(projects)
    if problems:
        raise SystemExit("port corpus: could not fetch " + "; ".join(problems))
    name = f"port_speed_{args.part}"
    if args.result == Path(__file__).resolve().parent / "results" / "port_speed.json":
        args.result = args.result.with_name(name + ".json")
    run = ResultRun.start(name, args)
    files = [f for p in projects for f in port_score.python_files(p)]
    scans = [port_score.scan(p) for p in projects]  # warm the page cache and the rule tables
    num_all = sum(s.num_files for s in scans)
    num_py = sum(s.num_python for s in scans)
    times: dict[str, list[float]] = {"port": [], "baseline": [], "now": [], "then": []}
    with tempfile.TemporaryDirectory(prefix="rocmkit-port-then-") as then:
        if args.against:
            _export_src(args.against, Path(then))
        for _ in range(args.rounds):
            start = time.process_time()
            for p in projects:
                port_score.scan(p)
            times["port"].append(time.process_time() - start)
            start = time.process_time()  # the walk is timed too, as it is in port's rounds
            port_score.parse_all([f for p in projects for f in port_score.python_files(p)])
            times["baseline"].append(time.process_time() - start)
            if args.against:
                times["then"].append(_round_in_process(Path(then) / "src", args.part))
                times["now"].append(_round_in_process(REPO / "src", args.part))
    run.add("port_files_per_cpu_s", [num_all / t for t in times["port"]], unit="files/CPU-s",
            note=f"all {num_all} files port reads ({num_py} Python)")  # fmt: skip
    run.add("port_python_files_per_cpu_s", [num_py / t for t in times["port"]],
            unit="files/CPU-s")  # fmt: skip
    run.add("baseline_python_files_per_cpu_s", [len(files) / t for t in times["baseline"]],
            unit="files/CPU-s", note="os.walk + read + ast.parse of every .py file")  # fmt: skip
    run.add("port_over_baseline", ratios(times["baseline"], times["port"]), unit="x",
            baseline="read + ast.parse of the same .py files (port also reads the other files)")  # fmt: skip
    if args.against:
        ref = "".join(c for c in args.against if c.isalnum())
        run.add(f"port_{ref}_files_per_cpu_s", [num_all / t for t in times["then"]],
                unit="files/CPU-s", note=f"src/ at {args.against}, a fresh process per round")  # fmt: skip
        run.add("port_in_process_files_per_cpu_s", [num_all / t for t in times["now"]],
                unit="files/CPU-s", note="this tree, a fresh process per round")  # fmt: skip
        run.add(f"port_over_{ref}", ratios(times["then"], times["now"]), unit="x",
                baseline=f"port at {args.against}, alternated, a fresh process per round")  # fmt: skip
    run.notes.append(f"projects: {', '.join(f'{p.name} {p.version}' for p in projects)}")
    for key in ("port", "baseline"):
        median = statistics.median(times[key])
        print(f"  {key:9} {median:.3f} CPU-s a round (median of {args.rounds})")
    print(f"{num_all} files ({num_py} Python): port {num_all / statistics.median(times['port']):,.0f} "
          f"files/CPU-s, read+parse {len(files) / statistics.median(times['baseline']):,.0f}")  # fmt: skip
    if args.against:
        earlier, now = (num_all / statistics.median(times[k]) for k in ("then", "now"))
        print(f"a process a round: at {args.against} {earlier:,.0f} files/CPU-s, now {now:,.0f}")
    run.finish()


REPO = Path(__file__).resolve().parent.parent
_ROUND = """
import sys, time
import rocmkit.port  # from PYTHONPATH, before the benchmarks put this tree's src/ first
sys.path.insert(0, {bench!r})
import port_corpus, port_score
projects = [p for p in port_corpus.load_manifest() if p.part == {part!r}]
for p in projects:
    port_score.scan(p)  # warm: rule tables, regexes, page cache
rounds = []
for _ in range(3):
    start = time.process_time()
    for p in projects:
        port_score.scan(p)
    rounds.append(time.process_time() - start)
print(sorted(rounds)[1])
"""


def _export_src(commit: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "archive", commit, "src"], cwd=REPO, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def _round_in_process(src: Path, part: str) -> float:
    """CPU seconds of a warm round of port over a part (the median of three in one process), run by
    the rocmkit under `src`."""
    code = _ROUND.format(bench=str(REPO / "benchmarks"), part=part)
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"port at {src} failed: {out.stderr.strip().splitlines()[-1:]}")
    return float(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
