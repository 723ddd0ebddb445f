"""`make demo`: run the DVC pipeline on the embedded procedural default and summarise where results are."""
from __future__ import annotations

import json
from pathlib import Path

from tiermap import schema
from tiermap.stages import dvc, labels_from_lexicon, load_params


def run_demo(repo: Path, ds: schema.DatasetPaths) -> dict[str, str]:
    """scenes → sequences → scene GT → labels (lexicon seed unless labels exist) → GT → validation."""
    params = load_params(repo / "params.yaml")
    if not (repo / ".dvc").is_dir():
        dvc(["init", "-q"], repo)
        dvc(["config", "core.analytics", "false"], repo)
        dvc(["config", "core.check_update", "false"], repo)
    dvc(["repro", "sequence", "scene_gt"], repo)
    labels = ds.labels / "labels.parquet"
    if not labels.is_file():
        # Human labels are never overwritten: the lexicon only seeds a dataset that has none yet.
        labels_from_lexicon(ds, list(params["scenes"]))
        dvc(["add", "-q", str(labels)], repo)
    dvc(["repro"], repo)
    report = json.loads(ds.validation_report.read_text())
    seqs = sorted(p.parent.relative_to(ds.dir).as_posix() for p in (ds.dir / "sequences").glob("*/*/meta.json"))
    return {
        "sequences": f"{ds.dir / 'sequences'} ({len(seqs)}: {', '.join(seqs)})",
        "previews": f"{ds.dir / 'previews'} (contact_sheet.png, topdown.png per scene)",
        "ground truth": str(ds.gt),
        "validation": f"{ds.validation_report} ({'clean' if report['success'] else 'FAILED'})",
        "next": f"tiermap release 0.1.0 --dataset {ds.name}   (after `git commit` and `dvc remote add -d ...`)",
    }
