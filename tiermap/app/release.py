"""`tiermap release`: datasheet with label diff, DVC artifact in GTO form, push, commit and tag."""
from __future__ import annotations

import json
import re
import subprocess
from datetime import date
from pathlib import Path
from typing import Any

from tiermap import atomic
from tiermap.app.gather import gt_checksums
from tiermap.app.stages import dvc, dvc_remotes
from tiermap.formats.base import SchemaError
from tiermap.formats.labels import LABELS_FILE, read_labels
from tiermap.formats.layout import GT_READERS, DatasetPaths
from tiermap.formats.params import DVC_FILE, add_dvc_artifact
from tiermap.formats.openlex3d import (
    GT_CATEGORIES,
    GT_CATEGORIES_FILE,
    read_gt_categories,
)
from tiermap.formats.records import (
    AnnotatorChange,
    LabelChange,
    ReleaseDiff,
    ReleaseManifest,
    parse_release_manifest,
    read_validation_report,
    write_release_manifest,
)

VERSION_RE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")
"""A canonical X.Y.Z: no leading zeros, so each version has one tag that `dvc artifacts get --rev vX.Y.Z` finds."""


class ReleaseError(RuntimeError):
    """A release was refused; nothing was pushed or tagged."""


def _git(args: list[str], cwd: Path, check: bool = True) -> str:
    res = subprocess.run(["git", *args], cwd=cwd, text=True, capture_output=True)
    if check and res.returncode != 0:
        raise ReleaseError(f"`git {' '.join(args)}` failed: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}")
    return res.stdout


def artifact_name(dataset: str) -> str:
    """The DVC/GTO artifact name of a dataset's GT."""
    return f"{dataset}-gt"


def tag_name(dataset: str, version: str) -> str:
    """GTO registration tag, e.g. demo-gt@v0.1.0."""
    return f"{artifact_name(dataset)}@v{version}"


def parse_version(text: str) -> tuple[int, int, int] | None:
    """A canonical X.Y.Z as numbers (so 0.10.0 > 0.9.0); None for anything else (01.2.3, 1.0, v1.2.3)."""
    m = VERSION_RE.fullmatch(text)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def released_versions(repo: Path, dataset: str) -> list[tuple[int, int, int]]:
    """Canonical versions already tagged for this dataset, ascending (other tags are not releases `dvc artifacts get` finds)."""
    found = (parse_version(t.split("@v", 1)[1]) for t in _git(["tag", "-l", f"{artifact_name(dataset)}@v*"], repo).split())
    return sorted(v for v in found if v is not None)


def manifest(ds: DatasetPaths, version: str, today: str) -> ReleaseManifest:
    """What a release contains: labels per scene/object/category, conditions, GT checksums."""
    scenes: dict[str, Any] = {}
    for scene in ds.gt_scenes():
        gt = read_gt_categories(ds.gt / scene / GT_CATEGORIES_FILE)
        scenes[scene] = {str(s.object_id): {c: list(getattr(s.labels.image_attributes, c)) for c in GT_CATEGORIES}
                         for s in gt.dataset.samples}
    conditions = sorted({p.parent.name for p in (ds.dir / "sequences").glob("*/*/meta.json")})
    return ReleaseManifest(dataset=ds.name, version=version, date=today, scenes=scenes, conditions=conditions,
                           annotators=annotator_labels(ds.labels / LABELS_FILE), checksums=gt_checksums(ds.gt))


def annotator_labels(path: Path) -> dict[str, dict[str, list[str]]]:
    """Per annotator and object (scene/id): the 'category: label' pairs it gave (empty without a labels table)."""
    if not path.is_file():
        return {}
    df = read_labels(path)
    out: dict[str, dict[str, list[str]]] = {}
    for (who, scene, oid), g in df.groupby(["annotator", "scene", "object_id"], sort=True):
        out.setdefault(str(who), {})[f"{scene}/{oid}"] = sorted(set(g["category"] + ": " + g["label"]))
    return out


def label_diff(old: ReleaseManifest | None, new: ReleaseManifest) -> ReleaseDiff:
    """Objects added/removed and labels added/removed per category between two manifests."""
    o_sc = old.scenes if old else {}
    added, removed, changes = [], [], []
    for scene in sorted(set(o_sc) | set(new.scenes)):
        a, b = o_sc.get(scene, {}), new.scenes.get(scene, {})
        added += [f"{scene}/{i}" for i in sorted(set(b) - set(a), key=int)]
        removed += [f"{scene}/{i}" for i in sorted(set(a) - set(b), key=int)]
        for oid in sorted(set(a) & set(b), key=int):
            for cat in GT_CATEGORIES:
                plus = sorted(set(b[oid].get(cat, [])) - set(a[oid].get(cat, [])))
                minus = sorted(set(a[oid].get(cat, [])) - set(b[oid].get(cat, [])))
                if plus or minus:
                    changes.append(LabelChange(object=f"{scene}/{oid}", category=cat, added=plus, removed=minus))
    return ReleaseDiff(objects_added=added, objects_removed=removed, label_changes=changes,
                       annotator_changes=annotator_diff(old.annotators if old else {}, new.annotators))


def annotator_diff(old: dict[str, dict[str, list[str]]], new: dict[str, dict[str, list[str]]]) -> list[AnnotatorChange]:
    """Which annotator's labels changed on which object: labels added and removed (a whole annotator too)."""
    out = []
    for who in sorted(set(old) | set(new)):
        a, b = old.get(who, {}), new.get(who, {})
        for obj in sorted(set(a) | set(b)):
            plus, minus = sorted(set(b.get(obj, [])) - set(a.get(obj, []))), sorted(set(a.get(obj, [])) - set(b.get(obj, [])))
            if plus or minus:
                out.append(AnnotatorChange(annotator=who, object=obj, added=plus, removed=minus))
    return out


def datasheet(m: ReleaseManifest, diff: ReleaseDiff, previous: str | None) -> str:
    """RELEASE.md text."""
    counts = {c: 0 for c in GT_CATEGORIES}
    n_obj = 0
    for objs in m.scenes.values():
        n_obj += len(objs)
        for cats in objs.values():
            for c in counts:
                counts[c] += len(cats.get(c, []))
    lines = [f"# {m.dataset} ground truth v{m.version}", "",
             f"- Artifact: `{artifact_name(m.dataset)}` (tag `{tag_name(m.dataset, m.version)}`)",
             f"- Date: {m.date}", f"- Scenes: {', '.join(m.scenes) or '(none)'}",
             f"- Conditions: {', '.join(m.conditions) or '(none)'}", f"- Objects: {n_obj}", "",
             "## Labels per category", "", "| category | labels |", "|---|---|"]
    lines += [f"| {c} | {n} |" for c, n in counts.items()]
    lines += ["", f"## Changes since {'v' + previous if previous else 'nothing (first release)'}", ""]
    lines += [f"- Objects added: {', '.join(diff.objects_added) or 'none'}",
              f"- Objects removed: {', '.join(diff.objects_removed) or 'none'}", ""]
    if diff.label_changes:
        lines += ["| object | category | added | removed |", "|---|---|---|---|"]
        lines += [f"| {c.object} | {c.category} | {', '.join(c.added)} | {', '.join(c.removed)} |" for c in diff.label_changes]
    else:
        lines.append("No label changes.")
    if diff.annotator_changes:
        lines += ["", "### Whose labels changed", "", "| annotator | object | added | removed |", "|---|---|---|---|"]
        lines += [f"| {c.annotator} | {c.object} | {', '.join(c.added)} | {', '.join(c.removed)} |"
                  for c in diff.annotator_changes]
    lines += ["", "## Checksums (md5) of GT files", "", "| file | md5 |", "|---|---|"]
    lines += [f"| gt/{f} | `{h}` |" for f, h in m.checksums.items()]
    lines += ["", "## Get it", "", "```bash",
              f"dvc artifacts get <repo-url> {artifact_name(m.dataset)} --rev v{m.version}",
              f"git clone --branch {tag_name(m.dataset, m.version)} <repo-url> && dvc pull datasets/{m.dataset}/gt", "```", ""]
    return "\n".join(lines)


def ensure_artifact(repo: Path, ds: DatasetPaths) -> bool:
    """Declare the dataset's GT as a DVC artifact in dvc.yaml; True if dvc.yaml changed."""
    return add_dvc_artifact(repo / DVC_FILE, artifact_name(ds.name), {
        "path": ds.gt.resolve().relative_to(repo.resolve()).as_posix(), "type": "dataset",
        "desc": f"OpenLex3D / BenchBot ground truth of the {ds.name} dataset", "labels": ["ground-truth", "openlex3d", "benchbot"]})


def check_ready(repo: Path, ds: DatasetPaths, version: str, remote: str | None) -> tuple[str, str | None]:
    """Every refusal condition; returns (remote name, previous version)."""
    new = parse_version(version)
    if new is None:
        raise ReleaseError(f"version {version!r}: expected X.Y.Z, numbers without leading zeros (e.g. 0.1.0)")
    dirty = _git(["status", "--porcelain"], repo).splitlines()
    if dirty:
        raise ReleaseError(f"working tree is dirty ({len(dirty)} change(s), e.g. '{dirty[0].strip()}'): commit or stash first")
    remotes, default = dvc_remotes(repo)
    name = remote or default
    if not name or name not in remotes:
        raise ReleaseError(f"DVC remote {name or '(default)'} is not configured (have {remotes or 'none'}): "
                           "add one with `dvc remote add -d NAME PATH_OR_URL`")
    have = released_versions(repo, ds.name)
    if new in have:
        raise ReleaseError(f"{tag_name(ds.name, version)} already exists: pick a higher version")
    if have and new < have[-1]:
        raise ReleaseError(f"version {version} is lower than the latest release {'.'.join(map(str, have[-1]))}")
    if not ds.gt.is_dir() or not ds.gt_scenes():
        raise ReleaseError(f"{ds.gt}: no GT to release (run `dvc repro`)")
    for scene in ds.gt_scenes():
        for name_, reader in GT_READERS.items():
            try:
                reader(ds.gt / scene / name_)
            except SchemaError as err:
                raise ReleaseError(f"invalid GT file: {err}") from None
    if not ds.validation_report.is_file():
        raise ReleaseError(f"{ds.validation_report}: no validation report (run `tiermap validate --dataset {ds.name}`)")
    report = read_validation_report(ds.validation_report)
    if not report.success:
        failed = [c.name for c in report.failed()]
        raise ReleaseError(f"validation report is not clean (failed: {', '.join(failed)}); fix the labels and re-validate")
    if report.checksums != gt_checksums(ds.gt):
        raise ReleaseError(f"{ds.validation_report} was made for other GT files: run `tiermap validate --dataset {ds.name}`")
    stale = dvc(["status", "--json"], repo, check=False, quiet=True)
    if stale.returncode != 0 or stale.stdout.strip() not in ("{}", ""):
        changed = sorted(json.loads(stale.stdout or "{}")) if stale.returncode == 0 else ["(dvc status failed)"]
        raise ReleaseError(f"workspace outputs differ from dvc.lock (stages: {', '.join(changed[:5])}): run `dvc repro` and commit")
    prev = ".".join(map(str, have[-1])) if have else None
    return name, prev


def release(version: str, ds: DatasetPaths, remote: str | None = None, today: str | None = None) -> Path:
    """Release the dataset's GT: refuse unless ready; datasheet; dvc push; commit; GTO tag. Returns RELEASE.md."""
    repo = Path(_git(["rev-parse", "--show-toplevel"], ds.root if ds.root.exists() else Path.cwd()).strip())
    remote_name, prev = check_ready(repo, ds, version, remote)
    m = manifest(ds, version, today or date.today().isoformat())
    old = None
    if prev:
        rel = ds.release_manifest.resolve().relative_to(repo).as_posix()
        shown = subprocess.run(["git", "show", f"{tag_name(ds.name, prev)}:{rel}"], cwd=repo, text=True, capture_output=True)
        old = parse_release_manifest(shown.stdout, f"{tag_name(ds.name, prev)}:{rel}") if shown.returncode == 0 else None
    diff = label_diff(old, m)
    m.diff = diff
    touched = [ds.release_notes, ds.release_manifest]
    atomic.write_text(ds.release_notes, datasheet(m, diff, prev))
    write_release_manifest(m, ds.release_manifest)
    if ensure_artifact(repo, ds):
        touched.append(repo / DVC_FILE)
    try:
        # Content-addressed and idempotent: an interrupted push is finished by running release again.
        dvc(["push", "-r", remote_name], repo, quiet=True)
    except RuntimeError as err:
        _git(["checkout", "--", *[str(p) for p in touched if _git(["ls-files", str(p)], repo).strip()]], repo, check=False)
        for p in touched:
            if not _git(["ls-files", str(p)], repo).strip():
                p.unlink(missing_ok=True)
        raise ReleaseError(f"dvc push to {remote_name!r} failed, nothing tagged: {err}") from None
    ident = [] if _git(["config", "user.name"], repo, check=False).strip() else ["-c", "user.name=tiermap", "-c", "user.email=tiermap@localhost"]
    _git(["add", *[str(p) for p in touched]], repo)
    _git([*ident, "commit", "-q", "-m", f"Release {artifact_name(ds.name)} v{version}"], repo)
    _git([*ident, "tag", "-a", tag_name(ds.name, version), "-m", f"Registering artifact {artifact_name(ds.name)} version v{version}"], repo)
    return ds.release_notes
