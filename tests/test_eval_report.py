"""evaluation.report / tables / plots / compare: results.json/csv/md, plots, side-by-side comparison."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from evaluation import plots, report, tables
from evaluation.compare import compare
from evaluation.labels import CATEGORIES
from tiermap.formats.base import SchemaError

SET_KEYS = ("overall", "synonyms", "secondary", "synonym_undershooting", "secondary_overshooting",
            "secondary_undershooting", "synonym_inlier_rate", "secondary_inlier_rate")
GREEN, RED = (44, 160, 44), (214, 39, 40)


def cats(s: float, d: float, vs: float, c: float, m: float, i: float) -> dict[str, float]:
    """A Top-N category dict."""
    return {"synonyms": s, "depictions": d, "vis_sim": vs, "clutter": c, "missing": m, "incorrect": i}


def seg_result(method: str = "demo", syn: float = 0.4567, incorrect: float = 0.1, mr: float = 0.7) -> dict:
    """A segmentation result with 40 numbers (one NaN, one None)."""
    return {
        "kind": "segmentation", "method": method, "definition": "official", "note": "oracle captions",
        "frequency": {
            "top1": cats(syn, 0.1, 0.05, 0.1, 0.1934, incorrect),
            "top5": cats(0.6, 0.1, 0.05, 0.1, math.nan, 0.05),
        },
        "set_ranking": dict(zip(SET_KEYS, [mr, 0.8, 0.6, 0.25, 0.5, None, 0.9, 0.75])),
        "per_scene": {
            "room0": {"frequency": {"top1": cats(0.5, 0.0, 0.0, 0.2, 0.1, 0.2)},
                      "set_ranking": dict(zip(SET_KEYS, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]))},
            "room1": {"frequency": {"top1": cats(0.3, 0.2, 0.1, 0.1, 0.1, 0.2)}},
        },
    }


def osma_result() -> dict:
    """An OSMa result: two conditions, one scene each, relative change of one condition."""
    return {
        "kind": "osma", "method": "clip-demo", "aggregate": "pooled", "baseline": "baseline",
        "conditions": {
            "baseline": {"overall": {"macc": 0.5, "fmiou": 0.4, "miou": 0.3},
                         "per_scene": {"s0": {"macc": 0.5, "fmiou": 0.4, "miou": 0.3}}},
            "velocity": {"overall": {"macc": 0.45, "fmiou": 0.42, "miou": None},
                         "per_scene": {"s0": {"macc": 0.45, "fmiou": 0.42, "miou": math.nan}}},
        },
        "relative_change": {"velocity": {"macc": -0.1, "fmiou": 0.05, "miou": None}},
    }


def md_row(md: str, *first: str) -> list[str]:
    """Cells of the markdown table row whose leading cells are `first`."""
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[: len(first)] == list(first):
            return cells
    raise AssertionError(f"no row {first} in:\n{md}")


def has_colour(path: Path, rgb: tuple[int, int, int]) -> bool:
    """Whether the PNG has a pixel of exactly this colour."""
    a = np.asarray(Image.open(path).convert("RGB"))
    return bool((a == np.array(rgb, dtype=np.uint8)).all(axis=-1).any())


# ---------------------------------------------------------------- files
def test_json_round_trip_nan_as_null(tmp_path: Path) -> None:
    res = seg_result()
    paths = report.write_report(tmp_path, res)
    text = paths["results.json"].read_text()
    assert text.startswith('{\n  "kind": "segmentation",\n  "method": "demo"')
    assert "NaN" not in text
    back = json.loads(text)
    assert back["frequency"]["top5"]["missing"] is None
    assert back["set_ranking"]["secondary_undershooting"] is None
    back["frequency"]["top5"]["missing"] = res["frequency"]["top5"]["missing"]
    assert math.isnan(back["frequency"]["top5"]["missing"])
    back["frequency"]["top5"]["missing"] = 0.0
    res["frequency"]["top5"]["missing"] = 0.0
    assert back == res


def test_json_numpy_values(tmp_path: Path) -> None:
    res = {"kind": "retrieval", "method": "m", "overall": {"all_ap": np.float32(0.5), "n": np.int64(3)},
           "per_scene": {"a": {"all_ap": np.float64("nan")}}}
    back = json.loads(report.write_report(tmp_path, res)["results.json"].read_text())
    assert back["overall"] == {"all_ap": 0.5, "n": 3}
    assert back["per_scene"] == {"a": {"all_ap": None}}


def test_csv_one_row_per_number(tmp_path: Path) -> None:
    report.write_report(tmp_path, seg_result())
    df = pd.read_csv(tmp_path / "results.csv", keep_default_na=False)
    assert list(df.columns) == ["scope", "group", "metric", "value"]
    # overall: 2 top-N x 6 + 8 set ranking; room0: 6 + 8; room1: 6
    assert len(df) == 40
    assert sorted(set(df["scope"])) == ["overall", "room0", "room1"]
    row = df[(df.scope == "room0") & (df.group == "frequency/top1") & (df.metric == "clutter")]
    assert row["value"].tolist() == ["0.2"]
    nan_rows = df[df["value"] == "nan"][["scope", "group", "metric"]].values.tolist()
    assert nan_rows == [["overall", "frequency/top5", "missing"], ["overall", "set_ranking", "secondary_undershooting"]]


def test_csv_osma_scopes(tmp_path: Path) -> None:
    report.write_report(tmp_path, osma_result())
    df = pd.read_csv(tmp_path / "results.csv")
    # 2 conditions x 3 overall + 3 relative change + 2 scenes x 3
    assert len(df) == 15
    assert set(df["scope"]) == {"overall", "baseline/s0", "velocity/s0"}
    rel = df[df.group == "relative_change/velocity"].set_index("metric")["value"]
    assert rel["macc"] == pytest.approx(-0.1) and math.isnan(rel["miou"])


def test_flatten_groups() -> None:
    omq = {"kind": "omq", "method": "m",
           "scores": {"OMQ": 0.5, "avg_pairwise": 0.6, "avg_label": 0.7, "avg_spatial": 0.8, "avg_fp_quality": 0.9},
           "per_file": [{"file": "a.json", "scores": {"OMQ": 0.4}, "n_objects": 3}]}
    assert tables.flatten(omq)[0] == ("overall", "scores", "OMQ", 0.5)
    assert tables.flatten(omq)[5:] == [("a.json", "scores", "OMQ", 0.4), ("a.json", "file", "n_objects", 3.0)]
    ret = {"kind": "retrieval", "method": "m", "overall": {"avg_inverse_rank": 0.25},
           "per_scene": {"x": {"avg_inverse_rank": math.nan}}}
    assert tables.flatten(ret) == [("overall", "overall", "avg_inverse_rank", 0.25),
                                   ("x", "overall", "avg_inverse_rank", None)]
    assert tables.flatten(osma_result())[:3] == [("overall", "baseline", "macc", 0.5),
                                                ("overall", "baseline", "fmiou", 0.4),
                                                ("overall", "baseline", "miou", 0.3)]


def test_markdown_segmentation(tmp_path: Path) -> None:
    md = report.write_report(tmp_path, seg_result())["results.md"].read_text()
    assert "**method:** demo · **definition:** official · **note:** oracle captions" in md
    assert md_row(md, "scope", "top-N") == ["scope", "top-N", "S", "D", "VS", "C", "M", "I"]
    assert md_row(md, "overall", "top1") == ["overall", "top1", "45.67", "10.00", "5.00", "10.00", "19.34", "10.00"]
    assert md_row(md, "overall", "top5")[6] == "–"
    assert md_row(md, "room1", "top1")[2:4] == ["30.00", "20.00"]
    assert md_row(md, "scope", "mR") == ["scope", "mR", "R_S", "R_DVS", "P_S←", "P_DVS→", "P_DVS←",
                                         "inlier S", "inlier DVS"]
    assert md_row(md, "overall", "0.700") == ["overall", "0.700", "0.800", "0.600", "0.250", "0.500", "–",
                                              "0.900", "0.750"]


def test_markdown_retrieval_omq_osma(tmp_path: Path) -> None:
    ap = {"kind": "retrieval", "method": "m", "overall": {"all_ap": 0.1234, "all_ap_50%": 0.25, "all_ap_25%": 0.5},
          "per_scene": {"s0": {"all_ap": 0.2, "all_ap_50%": None, "all_ap_25%": 0.6}}}
    md = report.write_report(tmp_path / "ap", ap)["results.md"].read_text()
    assert md_row(md, "scope") == ["scope", "mAP (%)", "AP50 (%)", "AP25 (%)"]
    assert md_row(md, "overall") == ["overall", "12.34", "25.00", "50.00"]
    assert md_row(md, "s0") == ["s0", "20.00", "–", "60.00"]
    rank = {"kind": "retrieval", "method": "m", "overall": {"avg_inverse_rank": 0.3333}}
    md = report.write_report(tmp_path / "rank", rank)["results.md"].read_text()
    assert md_row(md, "overall") == ["overall", "0.333"]
    omq = {"kind": "omq", "method": "m", "scores": {"OMQ": 0.5, "avg_pairwise": 0.6, "avg_label": 0.7,
                                                     "avg_spatial": 0.8, "avg_fp_quality": 0.9}}
    md = report.write_report(tmp_path / "omq", omq)["results.md"].read_text()
    assert md_row(md, "scope") == ["scope", "OMQ", "pairwise", "label", "spatial", "FP quality"]
    assert md_row(md, "overall") == ["overall", "0.500", "0.600", "0.700", "0.800", "0.900"]
    md = report.write_report(tmp_path / "osma", osma_result())["results.md"].read_text()
    assert "## Condition: velocity (%)" in md and "**aggregate:** pooled · **baseline:** baseline" in md
    assert md_row(md, "overall", "45.00") == ["overall", "45.00", "42.00", "–"]
    assert md_row(md, "velocity") == ["velocity", "-10.00", "+5.00", "–"]


def test_write_report_rejects_bad_result(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="field 'kind'"):
        report.write_report(tmp_path, {"method": "m"})
    with pytest.raises(SchemaError, match="field 'kind': expected one of .*got 'detection'"):
        report.write_report(tmp_path, {"kind": "detection"})
    with pytest.raises(SchemaError, match="field 'frequency': expected an object"):
        report.write_report(tmp_path, {"kind": "segmentation", "method": "m"})
    assert not (tmp_path / "results.json").exists()


# ---------------------------------------------------------------- plots
def test_default_plots(tmp_path: Path) -> None:
    seg = report.write_report(tmp_path / "seg", seg_result())
    assert set(seg) == {"results.json", "results.csv", "results.md", "frequency.png"}
    with Image.open(seg["frequency.png"]) as im:
        assert im.format == "PNG" and im.width > 300 and im.height > 200
    assert has_colour(seg["frequency.png"], GREEN) and has_colour(seg["frequency.png"], RED)
    osma = report.write_report(tmp_path / "osma", osma_result())
    assert set(osma) == {"results.json", "results.csv", "results.md", "relative_change.png"}
    with Image.open(osma["relative_change.png"]) as im:
        assert im.format == "PNG" and im.width > 300
    assert not list(tmp_path.rglob("*.tmp"))


def test_extra_plots(tmp_path: Path) -> None:
    calls: list[Path] = []

    def topdown(path: Path) -> Path:
        calls.append(path)
        path.write_bytes(b"x")
        return path

    out = report.write_report(tmp_path, {"kind": "retrieval", "method": "m", "overall": {"all_ap": 0.1}},
                              extra_plots={"topdown_room0.png": topdown})
    assert [c.name for c in calls] == ["topdown_room0.png"]  # drawn into the staging folder beside, then moved in
    assert out["topdown_room0.png"] == tmp_path / "topdown_room0.png"
    assert (tmp_path / "topdown_room0.png").read_bytes() == b"x" and not calls[0].exists()
    assert "frequency.png" not in out


def test_topdown_subsamples_deterministically(tmp_path: Path) -> None:
    idx = plots._subsample(300_000)
    assert len(idx) == 200_000 and len(np.unique(idx)) == 200_000 and idx.max() < 300_000
    assert np.array_equal(idx, plots._subsample(300_000))
    assert np.array_equal(plots._subsample(5), np.arange(5))
    rng = np.random.default_rng(3)
    pts = rng.random((300_000, 3)) * [6.0, 4.0, 2.5]
    names = np.array([*CATEGORIES, "none"])
    cat = names[(pts[:, 0] // 1).astype(int)]
    first = plots.plot_topdown_categories(pts, cat, tmp_path / "a.png", title="room0")  # its speed: bench/bench_eval.py
    second = plots.plot_topdown_categories(pts, cat, tmp_path / "b.png", title="room0")
    assert first.read_bytes() == second.read_bytes()
    assert has_colour(first, GREEN) and has_colour(first, RED)


def test_topdown_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="field 'categories': expected values among .*got \\['chair'\\]"):
        plots.plot_topdown_categories(np.zeros((2, 3)), np.array(["none", "chair"]), tmp_path / "t.png")
    with pytest.raises(SchemaError, match="field 'points': expected an \\(N, 3\\) array"):
        plots.plot_topdown_categories(np.zeros((2, 2)), np.array(["none", "none"]), tmp_path / "t.png")


# ---------------------------------------------------------------- compare
def test_compare_best(tmp_path: Path) -> None:
    # a: more synonyms but more incorrect; b: fewer incorrect (lower is better) and a higher mR
    pa = report.write_report(tmp_path / "a", seg_result("alpha", syn=0.5, incorrect=0.3, mr=0.6))["results.json"]
    pb = report.write_report(tmp_path / "b", seg_result("beta", syn=0.4, incorrect=0.1, mr=0.9))["results.json"]
    md = compare([pa, pb])
    assert md_row(md, "metric") == ["metric", "alpha", "beta", "best"]
    assert md_row(md, "frequency/top1/synonyms") == ["frequency/top1/synonyms", "0.5000", "0.4000", "alpha"]
    assert md_row(md, "frequency/top1/incorrect") == ["frequency/top1/incorrect", "0.3000", "0.1000", "beta"]
    assert md_row(md, "set_ranking/overall") == ["set_ranking/overall", "0.6000", "0.9000", "beta"]
    assert md_row(md, "frequency/top5/missing") == ["frequency/top5/missing", "–", "–", "–"]
    assert md_row(md, "frequency/top1/depictions")[-1] == "alpha, beta"
    assert not any(line.startswith("| room0") or "room0" in line for line in md.splitlines())


def test_compare_names_from_folders(tmp_path: Path) -> None:
    res = {"kind": "retrieval", "overall": {"all_ap": 0.2}}
    p1 = report.write_report(tmp_path / "run1", res)["results.json"]
    p2 = report.write_report(tmp_path / "run2", {**res, "overall": {"all_ap": 0.3}})["results.json"]
    p3 = report.write_report(tmp_path / "x" / "run1", {**res, "method": "same"})["results.json"]
    p4 = report.write_report(tmp_path / "y" / "run1", {**res, "method": "same"})["results.json"]
    md = compare([p1, p2])
    assert md_row(md, "overall/all_ap") == ["overall/all_ap", "0.2000", "0.3000", "run2"]
    names = md_row(compare([p1, p3, p4]), "metric")
    assert names == ["metric", "run1", "same (x/run1)", "same (y/run1)", "best"]
    assert md_row(compare([p2, p2]), "metric") == ["metric", "run2 [1]", "run2 [2]", "best"]


def test_compare_mixed_kinds(tmp_path: Path) -> None:
    pa = report.write_report(tmp_path / "a", seg_result("a"))["results.json"]
    pr = report.write_report(tmp_path / "r", {"kind": "retrieval", "overall": {"all_ap": 0.1}})["results.json"]
    pb = report.write_report(tmp_path / "b", seg_result("b"))["results.json"]
    with pytest.raises(SchemaError) as err:
        compare([pa, pr, pb])
    assert err.value.path == str(pr) and err.value.field == "kind"
    assert "expected 'segmentation'" in str(err.value) and "got 'retrieval'" in str(err.value)


def test_compare_bad_files(tmp_path: Path) -> None:
    good = report.write_report(tmp_path / "g", seg_result())["results.json"]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    nokind = tmp_path / "nokind.json"
    nokind.write_text(json.dumps({"method": "m", "frequency": {}}))
    for path in (bad, nokind):
        with pytest.raises(SchemaError) as err:
            compare([good, path])
        assert err.value.path == str(path) and err.value.field == "kind"
        assert "\n" not in str(err.value)
