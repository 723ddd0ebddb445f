"""Make the CUDA-linked PyPI torchvision importable against the CPU torch wheel.

PyPI has no CPU torchvision build matching torch 2.13.0+cpu; the CUDA-linked wheel fails at import with
"operator torchvision::nms does not exist" because its meta registrations reference C++ ops that were
never loaded. Defining those op schemas first lets its pure-Python parts (transforms, models) import,
which is all open_clip, timm and transformers need. `install()` adds a meta-path hook so that any later
`import torchvision` (direct or via open_clip / sentence_transformers) gets the schemas first; `make
setup` activates it at interpreter start through a .pth file, without importing torch eagerly.
"""
from __future__ import annotations

import importlib.abc
import sys

_LIB = None
_OPS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor",
)


def define_missing_ops() -> bool:
    """Define torchvision's C++ op schemas when its compiled extension cannot load; True if defined."""
    global _LIB
    if _LIB is not None:
        return True
    import torch

    if torch.version.cuda is not None or not _extension_needs_cuda():
        return False
    _LIB = torch.library.Library("torchvision", "FRAGMENT")
    for schema in _OPS:
        _LIB.define(schema)
    return True


def _extension_needs_cuda() -> bool:
    """True if the installed torchvision's compiled extension links against CUDA torch libraries."""
    from importlib.machinery import PathFinder
    from pathlib import Path

    spec = PathFinder.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return False
    for ext in Path(next(iter(spec.submodule_search_locations))).glob("_C*.so"):
        if b"libtorch_cuda" in ext.read_bytes():
            return True
    return False


class _Finder(importlib.abc.MetaPathFinder):
    """Runs define_missing_ops() right before the first import of torchvision."""

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name == "torchvision":
            sys.meta_path.remove(self)
            try:
                define_missing_ops()
            except Exception:  # never break an import because of the shim
                pass
        return None


def install() -> None:
    """Register the import hook (idempotent)."""
    if "torchvision" in sys.modules:
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
