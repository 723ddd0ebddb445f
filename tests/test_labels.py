"""Aggregation rules, clutter IoU and query mappings on hand-computable cases."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.aggregate import aggregate_dataset_with_report
from annotation.clutter import box_iou, clutter_pairs
from annotation.queries import query_mappings

EYE = np.eye(3)


def rotz(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


@pytest.mark.parametrize("b, expected", [
    ((np.array([0.5, 0, 0]), np.ones(3), EYE), 1 / 3),             # unit cubes shifted 0.5 in x
    ((np.array([0, 0, 0.5]), np.ones(3), EYE), 1 / 3),             # shifted vertically
    ((np.zeros(3), np.ones(3), rotz(np.pi / 2)), 1.0),             # 90° is the same cube
    ((np.array([1.0, 0, 0]), np.ones(3), EYE), 0.0),               # exactly touching faces: 0, no crash
    ((np.array([1.0, 1.0, 0]), np.ones(3), EYE), 0.0),             # touching along an edge
    ((np.array([3.0, 0, 0]), np.ones(3), EYE), 0.0),               # disjoint
])
def test_box_iou_hand_cases(b, expected: float) -> None:
    assert box_iou((np.zeros(3), np.ones(3), EYE), b) == pytest.approx(expected, abs=1e-9)


def test_box_iou_rotated_45() -> None:
    # 2x1x1 box vs the same rotated 45° about z: intersection is a regular-octagon-like prism, IoU 0.5174 (reference).
    a = (np.zeros(3), np.array([2.0, 1, 1]), EYE)
    b = (np.zeros(3), np.array([2.0, 1, 1]), rotz(np.pi / 4))
    assert box_iou(a, b) == pytest.approx(0.5174, abs=1e-4)


def test_clutter_pairs_symmetric_with_broad_phase() -> None:
    boxes = {1: (np.zeros(3), np.ones(3), EYE), 2: (np.array([0.5, 0, 0]), np.ones(3), EYE),
             3: (np.array([1.2, 0, 0]), np.ones(3), EYE), 4: (np.array([9.0, 0, 0]), np.ones(3), EYE),
             5: (np.array([-1.0, 0, 0]), np.ones(3), EYE)}
    # 1-2 and 2-3 overlap; 5 touches 1 (IoU 0, no clutter); 4 is alone.
    assert clutter_pairs(boxes) == {1: [2], 2: [1, 3], 3: [2], 4: [], 5: []}


def labels(rows: list[tuple[int, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame([{"scene": "s", "object_id": o, "annotator": a, "category": c, "label": lbl, "raw_label": lbl}
                         for o, a, c, lbl in rows])


def test_aggregate_union_least_specific_and_ambiguous() -> None:
    df = labels([
        (1, "a1", "synonyms", "Sofa"), (1, "a2", "synonyms", "couch"), (1, "a2", "vis_sim", "sofa"),
        (1, "a3", "synonyms", "sofa"), (1, "a3", "depictions", "flowers"),
        (2, "a1", "synonyms", "box"), (2, "a2", "synonyms", "crate"), (2, "a3", "synonyms", "bin"),
    ])
    gt = aggregate_dataset_with_report(df, {"s": {1: "sofa", 2: "box"}})[0]["s"].by_id()
    a = gt[1].labels.image_attributes
    # 'sofa' given as synonym by a1/a3 and as vis_sim by a2 -> the least specific category (vis_sim) wins.
    assert a.synonyms == ["couch"] and a.vis_sim == ["sofa"] and a.depictions == ["flowers"]
    assert gt[1].labels.flag is None  # 'sofa' as a synonym came from 2 of 3 annotators (> half)
    assert gt[2].labels.flag == "ambiguous"  # three annotators, three different synonyms
    assert sorted(gt[2].labels.image_attributes.synonyms) == ["bin", "box", "crate"]


def test_query_mappings_official_form() -> None:
    df = labels([(1, "a", "synonyms", "pillow"), (1, "a", "synonyms", "cushion"), (1, "a", "depictions", "flower"),
                 (2, "a", "synonyms", "pillow"), (3, "a", "synonyms", "wall"), (3, "a", "depictions", "poster")])
    q = query_mappings(aggregate_dataset_with_report(df, {"s": {}})[0]["s"])
    assert q["l0"].level0 == {"cushion": [1], "pillow": [1, 2]}
    assert q["l1"].level1 == {"flower cushion": [1], "flower pillow": [1], "poster wall": [3]}
    assert q["all"].level0 == q["l0"].level0 and q["all"].level1 == q["l1"].level1
