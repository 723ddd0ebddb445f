"""The great-expectations validation suite: a clean dataset passes, and each defect fails exactly its check."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

from annotation.queries import query_mappings
from tiermap.formats.base import write_model
from tiermap.formats.labels import LABEL_COLUMNS, write_labels
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.records import read_validation_report
from tiermap.formats.openlex3d import (
    CATEGORIES,
    GTCategories,
    write_gt_cloud,
    write_prompt_list,
)
from tiermap.app.validate import (
    Check,
    format_summary,
    gt_checksums,
    validate_dataset,
    validate_labels_file,
)

ANNOTATORS = ["a1", "a2", "a3", "a4"]
CLOUD_IDS = {"room0": [0, 1, 2, 3], "room1": [0, 1, 5]}


def obj(oid: int, name: str, syn: list[str], dep: list[str], vis: list[str], clutter: list[str], flag: str | None = None) -> dict:
    labels: dict[str, Any] = {"image_attributes": {"synonyms": syn, "depictions": dep, "vis_sim": vis, "clutter": clutter}}
    if flag:
        labels["flag"] = flag
    return {"name": name, "object_id": oid, "labels": labels}


def clean_gt() -> dict[str, list[dict]]:
    return {
        "room0": [obj(1, "room0_mug_1", ["mug", "coffee mug"], ["heart"], ["cup"], ["2"]),
                  obj(2, "room0_table_2", ["table"], [], ["desk"], ["1", "3"]),
                  obj(3, "room0_vase_3", ["vase"], ["flowers"], ["bottle"], ["2"])],
        "room1": [obj(1, "room1_sofa_1", ["sofa", "couch"], [], ["bench"], ["5"]),
                  obj(5, "room1_rug_5", ["rug", "carpet"], ["stripes"], ["mat"], ["1"])],
    }


def labels_table(gt: dict[str, list[dict]], annotators: list[str] = ANNOTATORS) -> pd.DataFrame:
    """Every annotator gave every label of the GT (raw as typed: title case)."""
    rows = [{"scene": scene, "object_id": s["object_id"], "annotator": a, "category": cat, "label": lbl, "raw_label": lbl.title()}
            for scene, samples in gt.items() for s in samples for a in annotators
            for cat in CATEGORIES for lbl in s["labels"]["image_attributes"][cat]]
    return pd.DataFrame(rows, columns=list(LABEL_COLUMNS))


def write_dataset(root: Path, gt: dict[str, list[dict]] | None = None, labels: pd.DataFrame | None | bool = True,
                  prompts: list[str] | None = None) -> DatasetPaths:
    """A dataset folder: gt/<scene>/ (categories, query mappings, cloud, objects.json), prompt list, labels table.

    labels=True writes the clean labels table; a DataFrame writes that; None writes none.
    """
    ds = DatasetPaths(root, "demo")
    gt = clean_gt() if gt is None else gt
    union: set[str] = set()
    rng = np.random.default_rng(0)
    for scene, samples in gt.items():
        d = ds.gt / scene
        cats = GTCategories.model_validate({"dataset": {"samples": samples}})
        write_model(cats, d / "gt_categories.json")
        for level, mapping in query_mappings(cats).items():
            write_model(mapping, d / f"gt_categories_query_to_object_mapping_{level}.json")
        ids = np.repeat(CLOUD_IDS[scene], 5)
        write_gt_cloud(d / "gt_cloud.ply", rng.random((len(ids), 3)), ids)
        bb = {"environment": {"name": scene, "variant": 1}, "format": {"name": "object_map_ground_truth"},
              "ground_truth": {"class_list": ["thing"], "objects": [
                  {"class": "thing", "centroid": [0.0, 0.0, 0.0], "extent": [1.0, 1.0, 1.0]} for _ in samples]}}
        (d / "objects.json").write_text(json.dumps(bb))
        for s in samples:
            a = s["labels"]["image_attributes"]
            union.update(a["synonyms"], a["depictions"], a["vis_sim"])
    if prompts is None:
        write_prompt_list(ds.prompt_list, union)
    else:
        ds.prompt_list.write_text("".join(f"{p}\n" for p in prompts))
    if labels is True:
        labels = labels_table(clean_gt())
    if isinstance(labels, pd.DataFrame):
        write_labels(ds.labels / "labels.parquet", labels)
    return ds


def by_name(report: dict) -> dict[str, dict]:
    return {c.name: c for c in report.checks}


def failed(report: dict) -> list[str]:
    return [c.name for c in report.checks if c.success is False]


def test_clean_dataset_passes(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path)
    report = validate_dataset(ds)
    assert report.success is True, format_summary(report)
    assert all(c.success is True and c.failures == [] for c in report.checks)
    names = [c.name for c in report.checks]
    assert names[:3] == ["files_readable", "label_not_null", "label_format"]
    assert {"unique_labels", "synonym_present", "annotator_count", "object_in_cloud", "clutter_ids_exist",
            "labels_in_prompt_list", "prompt_labels_known", "labels_known_objects"} <= set(names)
    assert read_validation_report(ds.validation_report) == report
    assert report.checksums == gt_checksums(ds.gt)  # what tiermap.app.release compares
    assert report.dataset == "demo"
    index = Path(report.data_docs)
    assert index == ds.dir / "validation_docs" / "index.html" and index.is_file()
    pages = {p.relative_to(index.parent).parts[0] for p in index.parent.rglob("*.html")}
    assert pages == {"index.html", "expectations", "validations"}
    assert "tiermap.gt_labels" in index.read_text() and "tiermap.labels" in index.read_text()
    assert (index.parent / ".gitignore").read_text() == "*\n"
    assert not list(ds.dir.glob(".validation_docs*"))  # no temp folder left behind
    lines = format_summary(report)
    assert lines[0] == "validation of dataset demo: clean"
    assert all(ln.startswith("  ok  ") for ln in lines[1:-1]) and lines[-1] == f"Data Docs: {index}"
    # tiermap.app.release refuses GT changed after validation by comparing these checksums.
    cats = ds.gt / "room0" / "gt_categories.json"
    cats.write_text(cats.read_text().replace('"desk"', '"writing desk"'))
    assert gt_checksums(ds.gt) != report.checksums
    assert validate_dataset(ds).checksums == gt_checksums(ds.gt)


def set_attr(scene: str, oid: int, key: str, value: Any) -> Callable[[dict], None]:
    def f(gt: dict) -> None:
        s = next(s for s in gt[scene] if s["object_id"] == oid)
        if key == "flag":
            s["labels"]["flag"] = value
        else:
            s["labels"]["image_attributes"][key] = value
    return f


@pytest.mark.parametrize("mutate, check, needles", [
    (set_attr("room0", 1, "synonyms", ["Mug", "coffee mug"]), "label_format", ["room0 object 1 synonyms: 'Mug'"]),
    (set_attr("room0", 1, "synonyms", ["mug", "coffee_mug"]), "label_format", ["room0 object 1 synonyms: 'coffee_mug'"]),
    (set_attr("room0", 3, "vis_sim", ["glass  bottle"]), "label_format", ["room0 object 3 vis_sim: 'glass  bottle'"]),
    (set_attr("room1", 5, "vis_sim", ["mat", "rug"]), "unique_labels", ["room1 object 5 synonyms: 'rug'", "room1 object 5 vis_sim: 'rug'"]),
    (set_attr("room0", 2, "vis_sim", ["desk", "x" * 65]), "label_length", ["room0 object 2 vis_sim: 'xxx", "(65 characters)"]),
    (set_attr("room0", 3, "synonyms", []), "synonym_present",
     ["room0 object 3 (room0_vase_3; synonyms: -): no synonym and not flagged ambiguous"]),
    (set_attr("room0", 1, "clutter", ["2", "5"]), "clutter_ids_exist",  # 5 is an id of room1's cloud, not room0's
     ["room0 object 1 (room0_mug_1): clutter id '5' is not in the GT cloud"]),
    (set_attr("room1", 5, "clutter", ["1", "5"]), "clutter_not_self", ["room1 object 5 (room1_rug_5): clutter id '5' is the object itself"]),
])
def test_each_gt_defect_fails_exactly_its_check(tmp_path: Path, mutate: Callable[[dict], None], check: str, needles: list[str]) -> None:
    gt = clean_gt()
    mutate(gt)
    report = validate_dataset(write_dataset(tmp_path, gt))
    assert report.success is False
    assert failed(report) == [check], format_summary(report)
    text = "\n".join(by_name(report)[check].failures)
    for n in needles:
        assert n in text, text
    summary = "\n".join(format_summary(report))
    assert f"FAIL  {check}" in summary and needles[0] in summary


def test_no_synonym_passes_when_flagged_ambiguous(tmp_path: Path) -> None:
    gt = clean_gt()
    set_attr("room0", 3, "synonyms", [])(gt)
    set_attr("room0", 3, "flag", "ambiguous")(gt)
    report = validate_dataset(write_dataset(tmp_path, gt))
    assert report.success is True, format_summary(report)


def test_object_missing_from_cloud(tmp_path: Path) -> None:
    gt = clean_gt()
    gt["room1"].append(obj(2, "room1_lamp_2", ["lamp"], [], [], []))  # room1's cloud has ids 0, 1, 5
    report = validate_dataset(write_dataset(tmp_path, gt, labels=labels_table(gt)))
    assert failed(report) == ["object_in_cloud"], format_summary(report)
    assert by_name(report)["object_in_cloud"].failures == ["room1 object 2 (room1_lamp_2; synonyms: lamp): id not in the GT cloud"]


def test_three_annotators_instead_of_four(tmp_path: Path) -> None:
    df = labels_table(clean_gt())
    df = df[~((df["scene"] == "room0") & (df["object_id"] == 3) & (df["annotator"] == "a4"))]
    report = validate_dataset(write_dataset(tmp_path, labels=df))
    assert failed(report) == ["annotator_count"], format_summary(report)
    assert by_name(report)["annotator_count"].failures == [
        "room0 object 3 (room0_vase_3; synonyms: vase): 3 annotator(s), expected 4"]
    # The protocol's count is a parameter.
    assert validate_dataset(write_dataset(tmp_path / "b", labels=labels_table(clean_gt(), ["a1", "a2", "a3"])), annotators=3).success


@pytest.mark.parametrize("edit, check, needle", [
    (lambda p: [x for x in p if x != "desk"], "labels_in_prompt_list", "room0 object 2 vis_sim: 'desk' is missing from prompt_list.txt"),
    (lambda p: sorted([*p, "lampshade"]), "prompt_labels_known", "'lampshade' is no object's label"),
    (lambda p: [p[1], p[0], *p[2:]], "prompt_sorted", "prompt_list.txt line 2: 'bench' after 'bottle'"),
])
def test_prompt_list_defects(tmp_path: Path, edit: Callable[[list[str]], list[str]], check: str, needle: str) -> None:
    union = sorted({lbl for ss in clean_gt().values() for s in ss for c in CATEGORIES for lbl in s["labels"]["image_attributes"][c]})
    report = validate_dataset(write_dataset(tmp_path, prompts=edit(union)))
    assert failed(report) == [check], format_summary(report)
    assert any(needle in f for f in by_name(report)[check].failures), by_name(report)[check].failures


def test_blank_prompt_line_is_an_expectation_failure_not_a_crash(tmp_path: Path) -> None:
    union = sorted({lbl for ss in clean_gt().values() for s in ss for c in CATEGORIES for lbl in s["labels"]["image_attributes"][c]})
    report = validate_dataset(write_dataset(tmp_path, prompts=[*union[:3], "", *union[3:]]))
    assert "prompt_no_blank" in failed(report) and "files_readable" not in failed(report)
    assert by_name(report)["prompt_no_blank"].failures == ["prompt_list.txt line 4: ''"]


def test_labels_table_row_for_unknown_object(tmp_path: Path) -> None:
    df = labels_table(clean_gt())
    extra = pd.DataFrame([{"scene": "room0", "object_id": 7, "annotator": a, "category": "synonyms", "label": "lamp", "raw_label": "Lamp"}
                          for a in ANNOTATORS])
    report = validate_dataset(write_dataset(tmp_path, labels=pd.concat([df, extra], ignore_index=True)))
    assert failed(report) == ["labels_known_objects"], format_summary(report)
    f = by_name(report)["labels_known_objects"].failures
    assert len(f) == 4 and f[0] == (f"labels.parquet row {len(df)}: room0 object 7 annotator 'a1' synonyms: 'lamp' (typed 'Lamp'): "
                                    "object not in gt_categories.json")


def test_labels_table_label_not_normalised(tmp_path: Path) -> None:
    df = labels_table(clean_gt())
    df.loc[0, "label"] = "Mug"
    report = validate_dataset(write_dataset(tmp_path, labels=df))
    assert failed(report) == ["labels_format"], format_summary(report)
    assert "labels.parquet row 0: room0 object 1 annotator 'a1' synonyms: 'Mug'" in by_name(report)["labels_format"].failures[0]


@pytest.mark.parametrize("column, value, check", [("category", "hypernym", "labels_category"), ("annotator", None, "labels_annotator")])
def test_labels_table_rejected_by_reader_is_still_checked_row_by_row(tmp_path: Path, column: str, value: Any, check: str) -> None:
    ds = write_dataset(tmp_path)
    df = labels_table(clean_gt())
    df.loc[[2, 5], column] = value
    df.to_parquet(ds.labels / "labels.parquet", index=False)  # bypasses write_labels
    report = validate_dataset(ds)
    assert failed(report) == ["files_readable", check], format_summary(report)
    assert f"labels.parquet: field '{column}[2]'" in by_name(report)["files_readable"].failures[0]
    f = by_name(report)[check].failures
    assert len(f) == 2 and f[0].startswith("labels.parquet row 2: room0 object 1 annotator") and f[1].startswith("labels.parquet row 5:")


def test_release_sees_label_format_first(tmp_path: Path) -> None:
    """A GT file edited by hand after aggregation (the release test's scenario): label_format is the first failed check."""
    ds = write_dataset(tmp_path)
    cats = ds.gt / "room0" / "gt_categories.json"
    data = json.loads(cats.read_text())
    data["dataset"]["samples"][0]["labels"]["image_attributes"]["synonyms"] = ["Flower_Vase"]
    cats.write_text(json.dumps(data))
    report = validate_dataset(ds)
    assert failed(report)[0] == "label_format" and "labels_in_prompt_list" in failed(report)
    assert "Flower_Vase" in "\n".join(format_summary(report))


def test_without_labels_table_those_checks_are_not_checked(tmp_path: Path) -> None:
    report = validate_dataset(write_dataset(tmp_path, labels=None))
    assert report.success is True, format_summary(report)
    skipped = {c.name: c.skipped for c in report.checks if c.success is None}
    assert skipped == {n: "no labels table" for n in
                       ("annotator_count", "labels_category", "labels_annotator", "labels_format", "labels_known_objects")}
    lines = format_summary(report)
    assert lines[0].endswith("clean, 5 not checked")
    assert any("annotator_count" in ln and "not checked: no labels table" in ln for ln in lines)


def test_unreadable_files_fail_files_readable_without_crashing(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path)
    (ds.gt / "room1" / "gt_categories.json").write_text("{not json")
    (ds.gt / "room0" / "gt_cloud.ply").unlink()
    report = validate_dataset(ds)
    assert report.success is False
    f = by_name(report)["files_readable"].failures
    assert len(f) == 2 and all("\n" not in x for x in f)
    assert any("room0/gt_cloud.ply: field '<file>': expected an existing file" in x for x in f)
    assert any("room1/gt_categories.json: field '<file>': expected valid JSON" in x for x in f)
    # room1's labels-table rows and room0's cloud are not judged on unreadable files.
    assert failed(report) == ["files_readable"], format_summary(report)
    assert by_name(report)["prompt_labels_known"].skipped == "some gt_categories.json unreadable"


def test_no_scenes(tmp_path: Path) -> None:
    ds = DatasetPaths(tmp_path, "empty")
    report = validate_dataset(ds)
    assert report.success is False and report.checksums == {}
    assert by_name(report)["files_readable"].failures[0].endswith("gt: no scene folders")


def test_validate_labels_file(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "good")
    good = ds.gt / "room0" / "gt_categories.json"
    report = validate_labels_file(good)
    assert report.success is True, format_summary(report)
    names = [c.name for c in report.checks]
    assert "label_format" in names and "synonym_present" in names and "clutter_not_self" in names
    assert not {"annotator_count", "object_in_cloud", "clutter_ids_exist", "labels_in_prompt_list"} & set(names)
    assert report.data_docs is None and report.file == str(good)
    assert not ds.validation_report.exists() and not (ds.dir / "validation_docs").exists()

    gt = copy.deepcopy(clean_gt())
    set_attr("room0", 1, "synonyms", ["Flower_Vase"])(gt)
    set_attr("room0", 2, "synonyms", [])(gt)
    set_attr("room0", 2, "clutter", ["2"])(gt)
    bad = write_dataset(tmp_path / "bad", gt).gt / "room0" / "gt_categories.json"
    report = validate_labels_file(bad, docs_dir=tmp_path / "docs")
    assert failed(report) == ["label_format", "synonym_present", "clutter_not_self"], format_summary(report)
    assert by_name(report)["label_format"].failures == ["room0 object 1 synonyms: 'Flower_Vase'"]
    assert (tmp_path / "docs" / "index.html").is_file() and report.data_docs == str(tmp_path / "docs" / "index.html")
    summary = format_summary(report)
    assert summary[0] == f"validation of {bad}: FAILED (3 of {len(report.checks)} checks)"

    broken = tmp_path / "broken" / "gt_categories.json"
    broken.parent.mkdir()
    broken.write_text(json.dumps({"dataset": {"samples": [{"name": "x", "object_id": "one", "labels": {}}]}}))
    report = validate_labels_file(broken)
    assert failed(report) == ["files_readable"]
    assert "gt_categories.json: field 'dataset.samples.0.object_id'" in by_name(report)["files_readable"].failures[0]
    assert all(c.skipped == "gt_categories.json unreadable" for c in report.checks[1:])


def test_failures_are_capped() -> None:
    c = Check("x")
    for i in range(45):
        c.fail(f"object {i}")
    assert c.success is False and c.unexpected_count == 45
    assert c.failures[:20] == [f"object {i}" for i in range(20)] and c.failures[20:] == ["... and 25 more"]


def test_import_is_cheap() -> None:
    code = "import sys, tiermap.app.validate; assert 'great_expectations' not in sys.modules and 'pandas' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cli_validate_dataset_and_labels_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    tiermap = str(Path(sys.executable).parent / "tiermap")
    ds = write_dataset(tmp_path / "good")
    res = subprocess.run([tiermap, "validate", "--root", str(ds.root), "--dataset", ds.name, "--params", str(tmp_path / "none.yaml")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"validation of dataset {ds.name}: clean" in res.stdout and "FAIL" not in res.stdout
    assert read_validation_report(ds.validation_report).success is True
    assert (ds.dir / "validation_docs" / "index.html").is_file()

    gt = copy.deepcopy(clean_gt())
    set_attr("room0", 1, "synonyms", ["Flower_Vase[b]"])(gt)
    bad = write_dataset(tmp_path / "bad", gt).gt / "room0" / "gt_categories.json"
    res = subprocess.run([tiermap, "validate", "--labels", str(bad)], capture_output=True, text=True)
    assert res.returncode == 1
    assert "FAIL" in res.stdout and "label_format" in res.stdout and "room0 object 1 synonyms: 'Flower_Vase[b]'" in res.stdout
