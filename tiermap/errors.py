"""Which errors a command shows as one line (the user can fix them) and which keep their traceback (bugs)."""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tiermap.extras import MissingExtraError
from tiermap.formats.base import InputError

USER_ERRORS: tuple[type[BaseException], ...] = (InputError, MissingExtraError)
"""The contract's own input errors (SchemaError is an InputError) and a missing optional extra."""


def command_paths() -> list[Path]:
    """Every path among the running command's option and argument values (its parent groups' included)."""
    try:  # typer >= 0.26 runs on its own copy of click, whose context stack click's get_current_context does not see
        from typer._click.globals import get_current_context
    except ImportError:
        from click import get_current_context

    ctx = get_current_context(silent=True)
    out: list[Path] = []
    while ctx is not None:
        for value in ctx.params.values():
            for v in value if isinstance(value, list | tuple) else [value]:
                if isinstance(v, Path):
                    out.append(v)
        ctx = ctx.parent
    return out


def _inside(name: Any, roots: list[Path]) -> bool:
    if not isinstance(name, str | os.PathLike):
        return False
    p = Path(os.path.abspath(name))
    return any(p == r or r in p.parents for r in roots)


def is_user_error(err: BaseException, paths: Iterable[Path] = (), also: tuple[type[BaseException], ...] = ()) -> bool:
    """True for an input error of the project (or of `also`), or an OSError about a file at or under a given path."""
    if isinstance(err, USER_ERRORS + also):
        return True
    if isinstance(err, OSError):
        roots = [Path(os.path.abspath(p)) for p in paths]
        return _inside(err.filename, roots) or _inside(err.filename2, roots)
    return False
