"""Validation of the published GT and the labels table; writes a report that `tiermap release` checks."""
from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from tiermap import atomic, schema

LABEL_RE = re.compile(r"^[^\sA-Z_]+(?: [^\sA-Z_]+)*$")


@dataclass
class Check:
    """One named check and what failed."""

    name: str
    success: bool = True
    failures: list[str] = field(default_factory=list)

    def fail(self, msg: str) -> None:
        """Record a failure (kept to the first 20 for readability)."""
        self.success = False
        if len(self.failures) < 20:
            self.failures.append(msg)


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


def run_checks(ds: schema.DatasetPaths) -> list[Check]:
    """Schema and content checks over gt/ (OpenLex3D rules)."""
    checks = {n: Check(n) for n in ("files_readable", "synonym_present", "label_format", "unique_labels", "clutter_ids_exist", "prompt_list_matches")}
    all_labels: set[str] = set()
    scenes = ds.gt_scenes()
    if not scenes:
        checks["files_readable"].fail(f"{ds.gt}: no scene folders")
    for scene in scenes:
        d = ds.gt / scene
        try:
            for name, reader in schema.GT_READERS.items():
                reader(d / name)
            gt = schema.read_gt_categories(d / "gt_categories.json")
            _, ids = schema.read_gt_cloud(d / "gt_cloud.ply")
        except schema.SchemaError as err:
            checks["files_readable"].fail(str(err))
            continue
        cloud_ids = set(np.unique(ids).tolist())
        for s in gt.dataset.samples:
            a = s.labels.image_attributes
            where = f"{scene}/gt_categories.json object {s.object_id}"
            if not a.synonyms and s.labels.flag != "ambiguous":
                checks["synonym_present"].fail(f"{where}: no synonym and not flagged ambiguous")
            labels = [*a.synonyms, *a.depictions, *a.vis_sim]
            for lbl in labels:
                if not LABEL_RE.match(lbl):
                    checks["label_format"].fail(f"{where}: label {lbl!r} is not lowercase, single-spaced, without underscores")
            if len(labels) != len(set(labels)):
                checks["unique_labels"].fail(f"{where}: a label appears in more than one category")
            for c in a.clutter:
                if int(c) not in cloud_ids:
                    checks["clutter_ids_exist"].fail(f"{where}: clutter id {c} is not in the GT cloud")
            if s.object_id not in cloud_ids:
                checks["clutter_ids_exist"].fail(f"{where}: object id is not in the GT cloud")
            all_labels.update(labels)
    try:
        prompts = schema.read_prompt_list(ds.prompt_list)
        if prompts != sorted(all_labels):
            missing, extra = sorted(all_labels - set(prompts)), sorted(set(prompts) - all_labels)
            checks["prompt_list_matches"].fail(f"prompt_list.txt differs from the label union (missing {missing[:5]}, extra {extra[:5]})")
    except schema.SchemaError as err:
        checks["prompt_list_matches"].fail(str(err))
    return list(checks.values())


def validate_dataset(ds: schema.DatasetPaths) -> dict:
    """Run the checks and write validation.json (success, checks, GT checksums at validation time)."""
    checks = run_checks(ds)
    report = {
        "dataset": ds.name,
        "success": all(c.success for c in checks),
        "checks": [asdict(c) for c in checks],
        "checksums": gt_checksums(ds.gt) if ds.gt.is_dir() else {},
    }
    atomic.write_text(ds.validation_report, schema.dump_json(report))
    return report
