"""Derive port's list of nvcc-only flags from the two compilers' own definitions.

On a ROCm torch, torch.utils.cpp_extension hands `extra_compile_args["nvcc"]` (and `load()`'s
`extra_cuda_cflags`) to hipcc, which passes every option it does not handle itself to clang. A flag
is nvcc-only when nvcc documents it (`nvcc --help`) and clang's HIP driver rejects it. This script
reads every option of `nvcc --help`, gives each spelling (long and short) a value of the documented
kind, compiles an empty HIP file with clang with that option (`--flag value` and `--flag=value`),
and writes the spellings and forms clang rejects to src/rocmkit/port/nvcc_only_flags.toml.

    python tests/port/derive_nvcc_flags.py [--nvcc nvcc] [--clang clang++] [--write]

Not a test: it needs nvcc and clang (the committed file says which versions produced it).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "src" / "rocmkit" / "port" / "nvcc_only_flags.toml"
_OPTION = re.compile(r"^(--[\w-]+)(?:\s+(\S+))?\s+\((-[\w-]+)\)")
_CHOICE = re.compile(r"^[{\[]([^|,}\]]+)")


def options(help_text: str) -> list[tuple[str, str | None]]:
    """(spelling, sample value or None) for the long and short name of every nvcc option."""
    found = []
    for line in help_text.splitlines():
        match = _OPTION.match(line)
        if match is None:
            continue
        long, value, short = match.groups()
        sample = _sample(value) if value else None
        found += [(long, sample), (short, sample)]
    return found


def _sample(kind: str) -> str:
    choice = _CHOICE.match(kind)
    if choice:
        return choice.group(1)
    kind = kind.strip("<>,.")
    return {
        "file": "empty.h",
        "file name": "empty.h",
        "path": ".",
        "directory": ".",
        "def": "FOO",
        "arch": "sm_80",
        "code": "sm_80",
        "specification": "arch=compute_80,code=sm_80",
        "options": "-O3",
        "error-number": "20012",
        "kind": "inline",
        "library": "m",
    }.get(kind, "1")


def clang_options(clang: str) -> set[str]:
    """The spellings clang documents as its own options (-include, -std=, -O<level>, -x): a
    rejection of those comes from the sample value, not the flag, so they are left out."""
    text = subprocess.run([clang, "--help-hidden"], capture_output=True, text=True).stdout
    return set(re.findall(r"^\s+(-{1,2}[\w+-]+?)(?:[=<\s,]|$)", text, re.MULTILINE))


def rejected(clang: str, args: list[str], workdir: Path) -> bool:
    return _compile(clang, args, workdir).returncode != 0


def _compile(clang: str, args: list[str], workdir: Path) -> subprocess.CompletedProcess[str]:
    command = [clang, "-x", "hip", "--cuda-host-only", "-nogpuinc", "-nogpulib"]
    command += ["--offload-arch=gfx90a", "-c", "empty.hip", "-o", "out.o", *args]
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=60)


def rejects_flag_itself(clang: str, args: list[str], workdir: Path) -> bool:
    """Whether clang rejects the option by name, not its value: how clang >= 18 answers a
    spelling that is its own but target-specific (`-arch` is Darwin-only since llvm-project
    PR #74365: "unsupported option '-arch' for target ..."), so such spellings are kept."""
    done = _compile(clang, args, workdir)
    name = args[0].split("=", 1)[0]
    said = done.stderr
    named = (
        f"unsupported option '{name}'",
        f"unknown argument '{args[0]}'",
        f"unknown argument: '{args[0]}'",
    )
    return done.returncode != 0 and any(n in said for n in named)


def derive(nvcc: str, clang: str) -> str:
    """The text of nvcc_only_flags.toml for these two compilers."""
    help_text = subprocess.run([nvcc, "--help"], capture_output=True, text=True).stdout
    nvcc_version = subprocess.run([nvcc, "--version"], capture_output=True, text=True)
    clang_version = subprocess.run([clang, "--version"], capture_output=True, text=True)
    rows: dict[str, list[str]] = {"bare": [], "separate": [], "joined": []}
    own = clang_options(clang)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "empty.hip").write_text("")
        (workdir / "empty.h").write_text("")
        for spelling, sample in options(help_text):
            if len(spelling) <= 2:
                continue  # one letter (-O, -m, -t): no evidence in a list
            if spelling in own:
                # clang's own: a rejection usually comes from the sample value, unless clang
                # names the option itself (a target-specific one such as -arch)
                if sample is not None and rejects_flag_itself(clang, [spelling, sample], workdir):
                    rows["separate"].append(spelling)
                if sample is not None and rejects_flag_itself(
                    clang, [f"{spelling}={sample}"], workdir
                ):
                    rows["joined"].append(spelling)
                continue
            if sample is None:
                if rejected(clang, [spelling], workdir):
                    rows["bare"].append(spelling)
                continue
            if rejected(clang, [spelling, sample], workdir):
                rows["separate"].append(spelling)
            if rejected(clang, [f"{spelling}={sample}"], workdir):
                rows["joined"].append(spelling)
    text = "# nvcc options that clang's HIP driver rejects: written by tests/port/derive_nvcc_flags.py\n"
    text += f"# nvcc: {nvcc_version.stdout.strip().splitlines()[-1]}\n"
    text += f"# clang: {clang_version.stdout.splitlines()[0]}\n"
    text += "# bare: the flag alone; separate: the flag, then its value as the next argument;\n"
    text += (
        "# joined: flag=value. hipcc passes these to clang unchanged (ROCm/HIPCC hipBin_amd.h).\n"
    )
    text += (
        "# Left out: one letters, and spellings clang documents as its own (clang --help-hidden)\n"
    )
    text += "# unless clang rejects the option by name (target-specific: -arch off Darwin, clang >= 18).\n"
    for key, spellings in rows.items():
        listed = ",\n".join(f'    "{s}"' for s in sorted(set(spellings)))
        text += f"{key} = [\n{listed},\n]\n"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nvcc", default="nvcc")
    parser.add_argument("--clang", default="clang++")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    text = derive(args.nvcc, args.clang)
    if args.write:
        OUT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
