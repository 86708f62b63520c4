"""`python -m rocmkit` is the same as the `rocmkit` command."""

import sys

from rocmkit.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
