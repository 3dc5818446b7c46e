"""Output targets: checked, creating nothing, before anything is charged."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .spec_errors import SpecError


def check_output_targets(folder: Path, files: Sequence[Path], where: str = "[output] dir"
                         ) -> None:
    """Check, creating nothing, that ``folder`` can be created (or is a folder) and that no file
    of ``files`` is a folder: an output that cannot be written fails before any charge.

    Raises :class:`SpecError` whose message starts with ``where`` (the option that named the
    folder)."""
    try:
        problem = _problem(folder, files)
    except ValueError:  # a NUL character
        raise SpecError(f"{where} is not a usable path") from None
    except OSError as exc:
        raise SpecError(f"{where}: cannot use {folder} ({type(exc).__name__})") from None
    if problem is not None:
        raise SpecError(f"{where}: {problem}")


def _problem(folder: Path, files: Sequence[Path]) -> str | None:
    """Why ``files`` cannot be written into ``folder``, or None."""
    if os.path.lexists(folder) and not folder.is_dir():
        return f"{folder} is a file, not a folder"
    ancestor = _nearest_existing(folder)
    if not ancestor.is_dir():
        return f"cannot create {folder}: {ancestor} is not a folder"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{ancestor} is not writable"
    taken = next((f for f in files if f.is_dir()), None)
    return None if taken is None else f"{taken} is a folder: a release file cannot replace it"


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (the root at worst)."""
    while not os.path.lexists(path) and path.parent != path:
        path = path.parent
    return path


__all__ = ["check_output_targets"]
