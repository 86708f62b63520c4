"""`rocmkit profile train|infer|memory`: what dominated a run, and what memory a config needs.

Argument declarations only: `rocmkit.profile.command` builds the jobs and runs them, the driver
saves and prints (`--json` prints the result document; the summary and hints are in its `data`).
"""

from __future__ import annotations

import argparse

from rocmkit.cli.pipeline import add_config_flags, add_output_options, handler
from rocmkit.cli.train_options import add_train_shortcuts

COMMANDS = "rocmkit.profile.command"

# A profile runs --wait + --warmup + --active steps: every short train flag but --steps.
PROFILE_SHORTCUTS = ("precision", "micro_batch", "grad_accum", "data", "parallel", "seed")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "profile", help="profile training/inference steps; estimate training memory"
    )
    parser.set_defaults(handler=handler(COMMANDS, "MISSING"))
    commands = parser.add_subparsers(
        dest="profile_command", metavar="SUBCOMMAND", parser_class=type(parser)
    )
    _add_train(commands)
    _add_infer(commands)
    _add_memory(commands)


def _add_schedule(parser: argparse.ArgumentParser) -> None:
    """--wait --warmup --active --top --threads, from `rocmkit.profile.commands.ScheduleOptions`."""
    add_config_flags(parser, "rocmkit.profile.commands", "ScheduleOptions")


def _add_train(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "train",
        help="profile a few steps of a rocmkit training config",
        description="Runs wait+warmup+active steps of a rocmkit.train config under torch.profiler. "
        "Short flags as in rocmkit train (--precision bf16 --micro-batch 4); extra "
        "--section.key value pairs override any setting (e.g. --train.lr 1e-3).",
    )
    parser.add_argument("--preset", help="a rocmkit.train preset (gpt-tiny, gpt2-124m, ...)")
    parser.add_argument("--config", help="TOML file with [model] [data] [train] ... sections")
    add_train_shortcuts(parser, PROFILE_SHORTCUTS)
    _add_schedule(parser)
    add_output_options(parser, "profile-train", monitor_memory=True, out_help=_out_help("train"))
    parser.set_defaults(handler=handler(COMMANDS, "TRAIN"), accepts_overrides=True)


def _out_help(what: str) -> str:
    return f"directory for trace.json and result.json (default: runs/profile-{what}-<UTC stamp>)"


def _add_infer(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "infer", help="profile generate() calls of a local Hugging Face model"
    )
    parser.add_argument("model_dir", help="local directory with config.json and weights")
    parser.add_argument("--prompt", default="The quick brown fox", help="prompt text")
    parser.add_argument(
        "--max-new-tokens", type=int, default=16, help="tokens per call (default 16)"
    )
    _add_schedule(parser)
    add_output_options(parser, "profile-infer", out_help=_out_help("infer"))
    parser.set_defaults(handler=handler(COMMANDS, "INFER"))


def _add_memory(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "memory",
        help="estimate parameters/gradients/optimizer/activations memory per device",
        description="Give --preset or all of --n-layer --d-model --n-head --seq-len --vocab-size.",
    )
    add_config_flags(parser, "rocmkit.profile.commands", "EstimateRequest")
    add_output_options(
        parser,
        "profile-memory",
        out_help="save the estimate as DIR/result.json (default: write no file; an estimate "
        "takes a moment to make again)",
    )
    parser.set_defaults(handler=handler(COMMANDS, "MEMORY"))
