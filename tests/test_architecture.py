"""The layers: the contract (tiermap.formats, atomic, gemini) at the bottom, the concerns above it, the application on top."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tiermap", "generation", "annotation", "evaluation")
ALLOWED = {  # layer → layers it may import
    "contract": {"contract"},
    "generation": {"contract", "generation"},
    "annotation": {"contract", "annotation"},
    "evaluation": {"contract", "evaluation"},
    "app": {"contract", "generation", "annotation", "evaluation", "app"},
}


def layer(module: str) -> str | None:
    """The layer of a dotted module name of this project (None: a third-party module)."""
    top = module.split(".")[0]
    if top not in PACKAGES:
        return None
    if top == "tiermap":
        return "app" if module == "tiermap.app" or module.startswith("tiermap.app.") else "contract"
    return top


def modules() -> dict[str, Path]:
    """Every module of the four packages by dotted name."""
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
            for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def imports(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside functions."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.update(f"{node.module}.{a.name}" for a in node.names)  # `from tiermap import app` names a module
    return out


def test_layers_do_not_cross() -> None:
    """No module imports a layer above its own; the contract imports only the contract."""
    mods = modules()
    assert {layer(m) for m in mods} == set(ALLOWED), "every layer has modules"
    bad = sorted(f"{m} ({layer(m)}) imports {i} ({layer(i)})" for m, p in mods.items() for i in imports(p)
                 if layer(i) is not None and layer(i) not in ALLOWED[layer(m)])
    assert not bad, "\n".join(bad)


def test_layer_rule_catches_a_crossing(tmp_path: Path) -> None:
    """The checker itself: a contract module importing the application is reported."""
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from tiermap.app.stages import load_params\n")
    assert {layer(i) for i in imports(f)} == {"app"}
    assert "app" not in ALLOWED["contract"] and "generation" not in ALLOWED["evaluation"]


def test_contract_imports_stay_light() -> None:
    """Importing every format module pulls in none of the pipeline, renderers or embedding models."""
    names = [m for m in modules() if m.startswith("tiermap.formats.") or m in ("tiermap.atomic", "tiermap.gemini")]
    code = f"import sys, importlib; [importlib.import_module(m) for m in {names!r}]; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True).stdout.split())
    heavy = {"dvc", "great_expectations", "pyrender", "trimesh", "open3d", "torch", "sentence_transformers", "open_clip",
             "label_studio_sdk", "google.genai", "generation", "annotation", "evaluation", "tiermap.app"}
    assert not heavy & loaded


def _string_constants(path: Path) -> list[tuple[int, str]]:
    """String literals of a file, docstrings left out."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


@pytest.mark.parametrize("family", sorted(p.stem for p in (ROOT / "tiermap" / "formats").glob("*.py") if p.stem != "__init__"))
def test_file_names_are_defined_once(family: str) -> None:
    """A file name the contract defines (`*_FILE`) appears as a literal nowhere else in the product."""
    import importlib

    mod = importlib.import_module(f"tiermap.formats.{family}")
    names = {v for k, v in vars(mod).items() if k.endswith("_FILE") and isinstance(v, str)}
    hits = [f"{p.relative_to(ROOT)}:{line}: {s!r}" for m, p in modules().items() if not m.startswith("tiermap.formats")
            for line, s in _string_constants(p) if s in names]
    assert not hits, "\n".join(hits)
