"""`rocmkit report` (placeholder until its issue lands)."""

from __future__ import annotations

import argparse

from rocmkit.errors import UserError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="(not available yet)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    raise UserError("'rocmkit report' is not available in this version yet")
