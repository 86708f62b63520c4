"""One rank of the fleet test under torchrun: fake node names (2 ranks a node) and, for the rank
named by SLOW_RANK, a GEMM slowed on purpose (a sleep before each product: a test hook, no change
to production code). Then `rocmkit bench` with the given arguments."""

from __future__ import annotations

import os
import sys
import time

rank = int(os.environ["RANK"])
os.environ["ROCMKIT_HOSTNAME"] = f"node-{rank // 2}"
if os.environ.get("SLOW_RANK") == str(rank):
    from rocmkit.bench import gemm

    real = gemm.matmul_problem

    def slowed(*args, **kwargs):
        run, check = real(*args, **kwargs)

        def slow_run():
            time.sleep(0.005)
            return run()

        return slow_run, check

    gemm.matmul_problem = slowed

from rocmkit.cli.main import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
