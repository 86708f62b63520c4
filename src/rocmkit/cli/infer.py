"""`rocmkit infer`: LLM inference benchmarks, local (transformers) and against OpenAI-compatible servers.

Argument declarations only. Flags are built from the settings dataclasses of
`rocmkit.infer.settings`; `rocmkit.infer.command` (`SERVE`, `LOCAL`) fills them from a preset, a
`--config` TOML file, dotted overrides (`--serve.num_prompts 200`) and the typed flags, later sources
winning, and runs the benchmark; the driver saves and prints the result (the report layouts, or the
document with `--json`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rocmkit.cli import pipeline

_HELP = {
    "local": "time transformers generate() on a local Hugging Face model directory",
    "serve": "benchmark an OpenAI-compatible server (vLLM, SGLang, llama.cpp...)",
}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "infer", help="LLM inference benchmarks: a local model, or an OpenAI-compatible server"
    )
    modes = parser.add_subparsers(
        dest="infer_mode", metavar="local|serve", required=True, parser_class=type(parser)
    )
    for mode in ("local", "serve"):
        _add_mode(modes, mode)
    parser.set_defaults(accepts_overrides=True)


def _add_mode(modes: argparse._SubParsersAction[argparse.ArgumentParser], mode: str) -> None:
    """One flag per settings field; absent flags stay absent so file and preset values hold."""
    p = modes.add_parser(mode, help=_HELP[mode])
    settings = "LocalSettings" if mode == "local" else "ServeSettings"
    pipeline.add_config_flags(p, "rocmkit.infer.settings", settings, show_defaults=True)
    p.add_argument("--preset", help="settings preset (see docs/infer.md)")
    p.add_argument("--config", type=Path, help="TOML file with these options as keys")
    pipeline.add_output_options(p, f"infer-{mode}", monitor_memory=mode == "local")
    p.set_defaults(handler=pipeline.handler("rocmkit.infer.command", mode.upper()))
