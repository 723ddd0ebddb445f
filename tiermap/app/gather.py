"""Gathering validation inputs: a dataset's GT files, labels table and prompt list turned into pandas tables."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiermap.formats.base import SchemaError
from tiermap.formats.labels import LABEL_COLUMNS, LABELS_FILE, read_labels
from tiermap.formats.layout import GT_READERS, DatasetPaths
from tiermap.formats.openlex3d import (
    CATEGORIES,
    GT_CATEGORIES_FILE,
    GT_CLOUD_FILE,
    GTCategories,
    read_gt_categories,
    read_gt_cloud,
    read_prompt_list,
)

NO_LABELS = "no labels table"

GT_CLOUD = GT_CLOUD_FILE  # generation.scene_gt.GT_CLOUD (not imported: validation must not need generation/)



def md5(path: Path) -> str:
    """MD5 of a file (DVC's hash, so checksums match `dvc` listings)."""
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()



def gt_checksums(gt_dir: Path) -> dict[str, str]:
    """md5 of every file under gt/, keyed by relative path."""
    return {p.relative_to(gt_dir).as_posix(): md5(p) for p in sorted(gt_dir.rglob("*")) if p.is_file()}

COLUMNS = {
    "files": ["row", "file", "error"],
    "gt_labels": ["row", "scene", "object_id", "name", "category", "label"],
    "objects": ["row", "scene", "object_id", "name", "synonyms", "n_synonyms", "flag", "n_annotators", "cloud_key"],
    "clutter": ["row", "scene", "object_id", "name", "clutter_id", "clutter_int", "clutter_key"],
    "prompts": ["row", "line", "prompt", "prev"],
    "labels": ["row", "scene", "object_id", "annotator", "category", "label", "raw_label", "gt_key"],
}

ID_COLUMNS = {
    "files": ["row", "file"],
    "gt_labels": ["row", "scene", "object_id"],
    "objects": ["row", "scene", "object_id"],
    "clutter": ["row", "scene", "object_id"],
    "prompts": ["row", "line"],
    "labels": ["row", "scene", "object_id", "annotator"],
}



@dataclass
class Inputs:
    """Rows of every table, and the sets the membership expectations compare against."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {t: [] for t in COLUMNS})
    skipped: dict[str, str] = field(default_factory=dict)
    prompts: list[str] | None = None
    cloud_keys: set[str] = field(default_factory=set)
    gt_keys: set[str] = field(default_factory=set)
    label_union: set[str] = field(default_factory=set)
    annotators_per_object: dict[tuple[str, int], int] | None = None

    def file(self, path: Path | str, err: Exception | None = None) -> None:
        """Record a file read (and its one-line error)."""
        msg = str(err).splitlines()[0] if err is not None else None
        self.rows["files"].append({"file": str(path), "error": msg})

    def add_gt(self, scene: str, gt: GTCategories, cloud_ids: set[int] | None) -> None:
        """Label, object and clutter rows of one scene's gt_categories.json."""
        for s in gt.dataset.samples:
            a, oid = s.labels.image_attributes, s.object_id
            base = {"scene": scene, "object_id": oid, "name": s.name}
            self.gt_keys.add(f"{scene}/{oid}")
            for cat in CATEGORIES:
                for lbl in getattr(a, cat):
                    self.rows["gt_labels"].append({**base, "category": cat, "label": lbl})
                    self.label_union.add(lbl)
            n_ann = None
            if self.annotators_per_object is not None:
                n_ann = self.annotators_per_object.get((scene, oid), 0)
            self.rows["objects"].append({**base, "synonyms": ", ".join(a.synonyms), "n_synonyms": len(a.synonyms),
                                         "flag": s.labels.flag, "n_annotators": n_ann,
                                         "cloud_key": f"{scene}/{oid}" if cloud_ids is not None else None})
            for c in a.clutter:
                as_int = int(c) if c.lstrip("-").isdigit() else None
                key = f"{scene}/{as_int if as_int is not None else c}" if cloud_ids is not None else None
                self.rows["clutter"].append({**base, "clutter_id": c, "clutter_int": as_int, "clutter_key": key})
        if cloud_ids is not None:
            self.cloud_keys.update(f"{scene}/{i}" for i in cloud_ids)

    def frames(self) -> dict[str, Any]:
        """One DataFrame per table, with every column present even when empty."""
        import pandas as pd

        out = {}
        for table, cols in COLUMNS.items():
            rows = [{**r, "row": i} for i, r in enumerate(self.rows[table])]
            df = pd.DataFrame(rows, columns=cols) if rows else pd.DataFrame({c: pd.Series([], dtype=object) for c in cols})
            if table == "clutter" and rows:
                df["clutter_int"] = df["clutter_int"].astype("float64")  # None -> NaN; compared with object_id
            out[table] = df
        return out



def _prompt_rows(inp: Inputs, path: Path) -> None:
    """Prompt-list rows from the raw lines (blank lines included, so the expectations see them)."""
    try:
        read_prompt_list(path)
    except SchemaError as err:
        if not err.field.startswith("line "):  # blank lines are the prompt_no_blank expectation's job
            inp.file(path, err)
            return
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as err:
        inp.file(path, SchemaError(path, "<file>", f"UTF-8 text ({type(err).__name__})"))
        return
    inp.file(path)
    if lines and lines[-1] == "":
        lines.pop()
    inp.prompts = lines
    for n, line in enumerate(lines, start=1):
        inp.rows["prompts"].append({"line": n, "prompt": line, "prev": lines[n - 2] if n > 1 else None})



def _labels_frame(inp: Inputs, path: Path) -> Any:
    """The labels table through read_labels; on a SchemaError, the raw table if it has the columns."""
    import pandas as pd

    try:
        df = read_labels(path)
        inp.file(path)
        return df
    except SchemaError as err:
        inp.file(path, err)
    try:
        df = pd.read_parquet(path)
    except Exception:  # pyarrow raises several types for corrupt files; the reader's error is recorded
        return None
    if any(c not in df.columns for c in LABEL_COLUMNS):
        return None
    return df[list(LABEL_COLUMNS)].reset_index(drop=True)



def dataset_inputs(ds: DatasetPaths) -> Inputs:
    """Read every file of the dataset into table rows; reader errors become rows of the files table."""
    inp = Inputs()
    labels_path = ds.labels / LABELS_FILE
    labels = _labels_frame(inp, labels_path) if labels_path.is_file() else None
    if labels is not None:
        counts = labels.groupby(["scene", "object_id"])["annotator"].nunique()
        try:
            inp.annotators_per_object = {(str(s), int(o)): int(n) for (s, o), n in counts.items()}
        except (TypeError, ValueError):  # a raw table with non-integer ids: its reader error is recorded
            inp.skipped["annotator_count"] = "labels table unreadable"

    scenes = ds.gt_scenes()
    if not scenes:
        inp.rows["files"].append({"file": str(ds.gt), "error": f"{ds.gt}: no scene folders"})
    unreadable: set[str] = set()
    for scene in scenes:
        d = ds.gt / scene
        for name, reader in GT_READERS.items():
            if name == GT_CATEGORIES_FILE:
                continue
            try:
                reader(d / name)
                inp.file(d / name)
            except SchemaError as err:
                inp.file(d / name, err)
        cloud_ids = None
        try:
            _, ids = read_gt_cloud(d / GT_CLOUD)
            cloud_ids = {int(i) for i in set(ids.tolist())}
            inp.file(d / GT_CLOUD)
        except SchemaError as err:
            inp.file(d / GT_CLOUD, err)
        try:
            gt = read_gt_categories(d / GT_CATEGORIES_FILE)
            inp.file(d / GT_CATEGORIES_FILE)
        except SchemaError as err:
            inp.file(d / GT_CATEGORIES_FILE, err)
            unreadable.add(scene)
            continue
        inp.add_gt(scene, gt, cloud_ids)

    _prompt_rows(inp, ds.prompt_list)
    if inp.prompts is None:
        for name in ("labels_in_prompt_list", "prompt_no_blank", "prompt_sorted", "prompt_labels_known"):
            inp.skipped[name] = f"{ds.prompt_list.name} unreadable"
    elif unreadable or not scenes:
        inp.skipped["prompt_labels_known"] = "some gt_categories.json unreadable"

    if labels is None:
        reason = NO_LABELS if not labels_path.is_file() else "labels table unreadable"
        for name in ("annotator_count", "labels_category", "labels_annotator", "labels_format", "labels_known_objects"):
            inp.skipped[name] = reason
    else:
        for r in labels.to_dict("records"):
            scene = str(r["scene"])
            key = None if scene in unreadable else f"{scene}/{r['object_id']}"
            inp.rows["labels"].append({**r, "gt_key": key})
    return inp
