"""`python tests/train/launch.py train ...`: the rocmkit CLI with the test stand-ins installed
when rocmkit.train.models/data are not merged yet (see standin.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import standin

standin.install()

from rocmkit.cli.main import main  # noqa: E402

sys.exit(main())
