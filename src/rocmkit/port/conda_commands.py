"""`conda install` / `conda create` command lines, judged like an environment.yml's lists.

A command line names its packages as arguments and its channels with `-c`/`--channel`
(docs.conda.io, `conda install`/`conda create`): `conda create -n env pytorch torchvision
cudatoolkit=11.3 -c pytorch` installs PyTorch's CUDA build exactly as the same packages under an
environment.yml's `dependencies:` do, so each package and channel goes through the conda rules
(conda-cuda: cudatoolkit, pytorch-cuda, cuda-toolkit, the nvidia channel). Anaconda's pytorch
channel publishes CUDA and CPU builds only; ROCm's torch comes from download.pytorch.org/whl/rocm*.
Read in shell scripts and Dockerfile RUN lines (with their continuations); not in READMEs (see
readme_install.RULE_IDS).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rocmkit.port.container_gpus import command_lines
from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import RuleSet

_COMMAND = re.compile(
    r"(?:^|[\s;&|(`])(?:conda|mamba|micromamba)(?:\s+(?:-\S+))*\s+(?:install|create)\s+(.*)"
)
# conda install/create options that take a value (the next word is not a package)
_WITH_VALUE = frozenset(
    {"-n", "--name", "-p", "--prefix", "--file", "--solver", "--platform"}
    | {"--subdir", "--repodata-fn", "--experimental", "--clone", "--revision", "--json-output"}
)
_CHANNEL = frozenset({"-c", "--channel"})


def conda_command_hits(text: str, rules: RuleSet) -> list[Hit]:
    """Hits of the conda rules for the packages and channels of each conda install/create line
    (a backslash continues the line; each hit at the physical line of its word)."""
    if "conda" not in text or ("install" not in text and "create" not in text):
        return []
    physical = text.splitlines()
    hits: list[Hit] = []
    for start, line in command_lines(text):
        for segment in re.split(r"&&|\|\||;|\|", line):
            match = _COMMAND.search(segment)
            if match is not None:
                hits.extend(_argument_hits(match.group(1).split(), start, physical, rules))
    return hits


def _argument_hits(
    args: list[str], start: int, physical: list[str], rules: RuleSet
) -> Iterator[Hit]:
    expect_value = expect_channel = False
    for arg in args:
        word = arg.strip("'\"")
        if expect_value or expect_channel:
            candidate, expect_value, expect_channel = (word if expect_channel else ""), False, False
        elif word.startswith("--channel=") or word.startswith("-c="):
            candidate = word.split("=", 1)[1]
        elif word in _CHANNEL:
            expect_channel = True
            continue
        elif word.startswith("-"):
            expect_value = word in _WITH_VALUE
            continue
        else:
            candidate = word
        if not candidate or candidate.startswith(("$", ".", "/")):
            continue
        channel, _, spec = candidate.rpartition("::")
        name = re.split(r"[=<>!\s\[]", spec, maxsplit=1)[0]
        for key in filter(None, (name, channel)):
            rule = rules.conda_rule(key)
            if rule is not None:
                yield hit(_line_of(physical, start, word), 0, rule, candidate)
                break


def _line_of(physical: list[str], start: int, word: str) -> int:
    """The physical line, from the command's first on, that holds `word`."""
    pattern = re.compile(rf"(?<![\w.-]){re.escape(word)}(?![\w.-])")
    return next(
        (k + 1 for k in range(start - 1, len(physical)) if pattern.search(physical[k])), start
    )
