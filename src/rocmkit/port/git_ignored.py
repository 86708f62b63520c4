"""The paths git ignores under a scanned folder, asked of git itself, so that `rocmkit port .` in a
checkout skips what the project does not ship (virtual environments under any name, build/ copies
of the package, downloaded models and caches), as ruff, black and semgrep do.

git is the definition: `git ls-files --others --ignored --exclude-standard --directory` applies
every .gitignore, .git/info/exclude and the user's core.excludesFile, negations included, and
never lists a tracked file (a tracked file is scanned even where a pattern matches it). Nothing is
skipped when the folder is not in a git work tree, when git is missing or fails, or when the
folder itself is ignored (a folder named on purpose is scanned whole).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

Runner = Callable[..., "subprocess.CompletedProcess[bytes]"]
TIMEOUT_S = 60


def _in_work_tree(folder: Path) -> bool:
    """Whether a .git entry (folder, or file of a worktree/submodule) is at or above `folder`:
    outside a checkout git is not started at all."""
    return any((parent / ".git").exists() for parent in (folder, *folder.parents))


def ignored_paths(root: Path, run: Runner = subprocess.run) -> frozenset[str] | None:
    """The ignored paths below `root`, relative to it ('/'-separated; a folder ends in '/'), or
    None when nothing is to be skipped (see the module's docstring)."""
    if not root.is_dir() or not _in_work_tree(root.resolve()):
        return None
    command = ["git", "-C", str(root), "ls-files", "-z", "--others", "--ignored"]
    command += ["--exclude-standard", "--directory"]
    try:
        done = run(command, capture_output=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):  # no git, or it hung
        return None
    if done.returncode != 0:  # not a work tree, or (git 2.39) a folder inside an ignored one
        return None
    paths = frozenset(p for p in done.stdout.decode("utf-8", "surrogateescape").split("\0") if p)
    if "./" in paths:  # the folder itself is ignored
        return None
    return paths
