"""`rocmkit infer`: LLM inference benchmarks, local (transformers) and against OpenAI-compatible servers.

Argument parsing only. Flags are built from the settings dataclasses of `rocmkit.infer.settings`;
a preset, `--config` TOML file, dotted overrides (`--serve.num_prompts 200`) and typed flags fill
them through `rocmkit.config`, later sources winning. `rocmkit.infer.commands` runs the benchmark
and builds the result, `rocmkit.runs` saves it and `rocmkit.cli.pipeline` prints it (the report
layouts, or the document with `--json`).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.cli import pipeline
from rocmkit.errors import UserError

if TYPE_CHECKING:
    from rocmkit.infer.serve import ServePoint
    from rocmkit.infer.settings import LocalSettings, ServeSettings

_HELP = {
    "local": "time transformers generate() on a local Hugging Face model directory",
    "serve": "benchmark an OpenAI-compatible server (vLLM, SGLang, llama.cpp...)",
}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "infer", help="LLM inference benchmarks: a local model, or an OpenAI-compatible server"
    )
    modes = parser.add_subparsers(dest="infer_mode", metavar="MODE", parser_class=type(parser))
    for mode in ("local", "serve"):
        _add_mode(modes, mode)
    parser.set_defaults(handler=run, accepts_overrides=True)


def _add_mode(modes: argparse._SubParsersAction[argparse.ArgumentParser], mode: str) -> None:
    """One flag per settings field; absent flags stay absent so file and preset values hold."""
    from rocmkit.infer.settings import setting_fields

    p = modes.add_parser(mode, help=_HELP[mode], argument_default=argparse.SUPPRESS)
    for f in setting_fields(mode):
        text, default = f.metadata.get("help", ""), f.default
        if f.metadata.get("positional"):
            p.add_argument(f.name, metavar=f.name.upper(), help=text)
        elif default is True:
            p.add_argument(
                f"--no-{f.name.replace('_', '-')}", dest=f.name, action="store_false", help=text
            )
        elif default is False:
            p.add_argument(f"--{f.name.replace('_', '-')}", action="store_true", help=text)
        else:
            shown = ",".join(_shown(v) for v in default) if isinstance(default, tuple) else default
            note = "" if default in (None, ()) else f" (default: {_shown(shown)})"
            action = "append" if f.metadata.get("repeat") else "store"
            p.add_argument(f"--{f.name.replace('_', '-')}", action=action, help=text + note)
    p.add_argument("--preset", help="settings preset (see docs/infer.md)")
    p.add_argument("--config", type=Path, help="TOML file with these options as keys")
    pipeline.add_output_options(p, f"infer-{mode}", monitor_memory=mode == "local")


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    return "inf" if isinstance(value, float) and math.isinf(value) else str(value)


def _settings(args: argparse.Namespace) -> Any:
    from rocmkit.config import parse_overrides
    from rocmkit.infer.settings import load_settings, setting_fields

    names = {f.name for f in setting_fields(args.infer_mode)}
    flags = {k: v for k, v in vars(args).items() if k in names}
    return load_settings(
        args.infer_mode,
        preset=getattr(args, "preset", None),
        path=getattr(args, "config", None),
        dotted=parse_overrides(getattr(args, "overrides", None) or []),
        flags=flags,
    )


def run(args: argparse.Namespace) -> int:
    if getattr(args, "infer_mode", None) not in ("local", "serve"):
        raise UserError(
            "choose a mode: rocmkit infer local MODEL_DIR | rocmkit infer serve --url URL --model NAME"
        )
    settings = _settings(args)
    if args.infer_mode == "local":
        return _run_local(settings, args)
    return _run_serve(settings, args)


def _run_serve(settings: ServeSettings, args: argparse.Namespace) -> int:
    from rocmkit import runs
    from rocmkit.infer.commands import exit_code, plan_serve, run_serve
    from rocmkit.platform import detect

    plan = plan_serve(settings)  # bad options are refused before a run directory is made
    out = runs.resolve_out(getattr(args, "out", None), "infer-serve")
    with runs.run_directory(out):
        result = run_serve(plan, detect(), out=out, on_point=_print_point)
        path = runs.save(result, out)
    pipeline.emit(result, as_json=getattr(args, "json", False))
    _info(f"saved {path}")
    return exit_code(result)


def _run_local(settings: LocalSettings, args: argparse.Namespace) -> int:
    from rocmkit import runs
    from rocmkit.infer.commands import local_config, run_local
    from rocmkit.platform import detect

    local_config(settings)  # bad options are refused before a run directory is made
    out = runs.resolve_out(getattr(args, "out", None), "infer-local")
    with runs.run_directory(out):
        platform = detect()
        monitor_memory = getattr(args, "monitor_memory", False)
        with runs.memory_monitoring(monitor_memory, out, device=platform.torch_device) as monitor:
            result = run_local(settings, platform)
        runs.add_memory(result, monitor, name="infer local")
        path = runs.save(result, out)
    pipeline.emit(result, as_json=getattr(args, "json", False))
    _info(f"saved {path}")
    return 0


def _info(text: str) -> None:
    """Progress and file names go to stderr, so `--json` output stays one document."""
    from rocmkit.console import make_console

    make_console(stderr=True).print(text)


def _print_point(point: ServePoint) -> None:
    s = point.summary
    rate = "inf" if math.isinf(point.request_rate) else f"{point.request_rate:g}"
    _info(
        f"rate={rate} concurrency={point.max_concurrency or 'none'}: "
        f"{s.num_completed} ok, {s.num_failed} failed in {s.duration_s:.1f} s"
    )
