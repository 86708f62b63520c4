"""Checks made before anything is read or written: inputs exist, outputs stay out of the inputs.

Issue 17's data loss: `hipify repro/a --output-dir repro/a` overwrote the CUDA sources with no
backup. An output that is, contains or lies inside an input is refused; rewriting sources is what
`--inplace` is for, and it keeps `.prehip` backups.
"""

from __future__ import annotations

from pathlib import Path

from rocmkit.errors import UserError


def check_input(path: Path) -> None:
    """A named input must exist; a looping or broken link is a one-line error, not a traceback."""
    try:
        path.resolve(strict=True)
    except RuntimeError:  # Python 3.11 raises this for a link loop
        raise UserError(
            f"{path} is a symbolic link loop: name the real file or directory"
        ) from None
    except OSError as exc:
        if path.is_symlink():
            raise UserError(
                f"{path} is a broken or looping symbolic link: {exc.strerror}"
            ) from None
        raise UserError(f"no such file or directory: {path}") from None


def check_output_location(
    paths: tuple[Path, ...], *, output: Path | None, output_dir: Path | None
) -> None:
    """Refuse outputs that would overwrite or mix with the sources (--inplace is for that)."""
    if output is not None and output.resolve() == paths[0].resolve():
        raise UserError(
            f"-o {output} is the input file: use --inplace (keeps a .prehip backup) "
            "or another output file"
        )
    if output_dir is None:
        return
    out = output_dir.resolve()
    for path in paths:
        source = path.resolve()
        if out == source or out.is_relative_to(source) or source.is_relative_to(out):
            relation = (
                "is"
                if out == source
                else "lies inside"
                if out.is_relative_to(source)
                else "contains"
            )
            raise UserError(
                f"--output-dir {output_dir} {relation} the input {path}: choose a directory "
                "outside the sources, or use --inplace (keeps .prehip backups)"
            )
