"""Host time per logged step of rocmkit's TensorBoard tracker vs SummaryWriter.add_scalar per value.

The loop calls trackers at sync points, while the GPU waits for the next step, so their host time
is idle device time. Both sides log the same 8 scalars per step into their own event file, in
alternating rounds. Prints the median microseconds per step of each and their ratio, timed in
process CPU time (the host work each costs, which other jobs on a shared machine cannot inflate).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/tracker_overhead.py [--steps 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from torch.utils.tensorboard import SummaryWriter

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resultfile import ResultRun, add_result_args, ratios

from rocmkit.train.metrics import StepMetrics
from rocmkit.train.trackers import open_trackers, tracker_scalars

METRICS = StepMetrics(
    step=1,
    loss=2.5,
    lr=3e-4,
    grad_norm=0.8,
    step_time_s=0.035,
    units_per_s=1e5,
    units_per_s_per_device=1e5,
    mfu=0.4,
    peak_memory_bytes=None,
    loss_scale=65536.0,
    unit_name="tokens",
)


def per_value(directory: Path, steps: int) -> float:
    """Seconds per step logging each scalar with add_scalar (the plain SummaryWriter way)."""
    writer = SummaryWriter(log_dir=str(directory))
    scalars = tracker_scalars(METRICS)
    start = time.process_time()
    for step in range(steps):
        for tag, value in scalars.items():
            writer.add_scalar(tag, value, global_step=step)
        writer.flush()
    elapsed = time.process_time() - start
    writer.close()
    return elapsed / steps


def rocmkit_tracker(directory: Path, steps: int) -> float:
    """Seconds per step through rocmkit's tracker (one Summary per step)."""
    trackers = open_trackers({"tensorboard": True}, directory, is_main=True, config={})
    start = time.process_time()
    for step in range(steps):
        trackers(StepMetrics(**{**METRICS.__dict__, "step": step}))
    elapsed = time.process_time() - start
    trackers.close()
    return elapsed / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    add_result_args(parser, "tracker_overhead")
    args = parser.parse_args()
    run = ResultRun.start("tracker_overhead", args)
    ours, plain = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(args.rounds):
            ours.append(rocmkit_tracker(Path(tmp) / f"ours{index}", args.steps))
            plain.append(per_value(Path(tmp) / f"plain{index}", args.steps))
    ours_us, plain_us = statistics.median(ours) * 1e6, statistics.median(plain) * 1e6
    print(f"rocmkit tracker: {ours_us:.0f} us/step; add_scalar per value: {plain_us:.0f} us/step")
    print(f"ratio (add_scalar / rocmkit): {plain_us / ours_us:.2f}x")
    run.add("rocmkit_us_per_step", [v * 1e6 for v in ours], unit="us", higher_is_better=False)
    run.add("add_scalar_us_per_step", [v * 1e6 for v in plain], unit="us", higher_is_better=False)
    run.add("add_scalar_over_rocmkit", ratios(plain, ours), unit="x", baseline="add_scalar")
    run.finish()


if __name__ == "__main__":
    main()
