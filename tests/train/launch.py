"""`python tests/train/launch.py train ...`: the rocmkit CLI for subprocess tests.

With ROCMKIT_TEST_KILL_IN_SAVE=N set, it SIGKILLs itself in the middle of its N-th checkpoint
save (shards written, not yet published): the worst moment for a crash.
"""

import os
import signal
import sys
from pathlib import Path


def _kill_in_save(nth: int) -> None:
    from rocmkit.train import checkpoint

    calls = 0
    real_replace = checkpoint.os.replace

    def replace(src, dst):  # the publish step of save_checkpoint
        nonlocal calls
        if Path(src).name.startswith(".tmp-step_"):
            calls += 1
            if calls == nth:
                os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(src, dst)

    checkpoint.os.replace = replace  # type: ignore[attr-defined]


if os.environ.get("ROCMKIT_TEST_KILL_IN_SAVE"):
    _kill_in_save(int(os.environ["ROCMKIT_TEST_KILL_IN_SAVE"]))

from rocmkit.cli.main import main  # noqa: E402

sys.exit(main())
