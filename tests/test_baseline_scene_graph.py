"""The caption baseline on a tiny hand-made sequence (fast): it also writes a ConceptGraphs-style scene graph."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from evaluation.baseline import caption_baseline, fuse_objects
from tiermap.formats.base import write_model
from tiermap.formats.method_graphs import read_scene_graph
from tiermap.formats.scene_graph import SCENE_GRAPH_FILE
from tiermap.formats.sequence import (
    CAMERA_FILE,
    TRAJ_FILE,
    CameraParams,
    depth_path,
    instance_path,
    rgb_path,
    write_depth,
    write_instance,
    write_rgb,
    write_traj,
)

H, W = 12, 16


def tiny_sequence(root: Path) -> Path:
    """Two frames, two objects (ids 3 and 7) at different depths, the camera moving 0.5 m along x."""
    seq = root / "seq"
    (seq / "results").mkdir(parents=True)
    (seq / "instance").mkdir()
    cam = CameraParams(w=W, h=H, fx=10, fy=10, cx=(W - 1) / 2, cy=(H - 1) / 2, depth_scale=1000)
    write_model(cam, seq / CAMERA_FILE)
    poses = np.tile(np.eye(4), (2, 1, 1))
    poses[1, 0, 3] = 0.5
    write_traj(seq / TRAJ_FILE, poses)
    rng = np.random.default_rng(0)
    for f in range(2):
        inst = np.zeros((H, W), np.uint16)
        inst[2:6, 1:6] = 3
        inst[6:11, 8:15] = 7
        depth = np.where(inst == 3, 1.0 + 0.05 * f, 2.0 + 0.1 * f).astype(np.float32)
        write_instance(instance_path(seq, f), inst)
        write_depth(depth_path(seq, f), depth, cam)
        write_rgb(rgb_path(seq, f, ".png"), rng.integers(0, 256, (H, W, 3), dtype=np.uint8))
    return seq


def fake_encoder(texts: list[str]) -> np.ndarray:
    """A deterministic text encoder: unit vectors from the texts' lengths (no model download)."""
    v = np.array([[len(t), 1.0, 0.5, 0.25] for t in texts], dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_caption_baseline_writes_a_conceptgraphs_scene_graph(tmp_path: Path) -> None:
    seq = tiny_sequence(tmp_path)
    classes = tmp_path / "classes.json"
    classes.write_text(json.dumps({"3": "mug", "7": "wooden table"}))
    out = tmp_path / "pred" / "room0"
    info = caption_baseline(seq, out, gt_classes=classes, encoder=fake_encoder, stride=1)
    raw = json.loads((out / SCENE_GRAPH_FILE).read_text())
    assert [list(n) for n in raw] == [["id", "bbox_extent", "bbox_center", "possible_tags", "object_tag", "caption"]] * 2
    g = read_scene_graph(out / SCENE_GRAPH_FILE)
    assert g.source == "conceptgraphs" and len(g.nodes) == info["objects"] == 2
    assert [(n.id, n.label, n.synonyms, n.caption) for n in g.nodes] == [(3, "mug", ["mug"], "mug"),
                                                                         (7, "wooden table", ["wooden table"], "wooden table")]
    assert g.node(7).material == "wood"
    points, ids, _, _ = fuse_objects(seq, 1)
    for n in g.nodes:
        pts = points[ids == n.id]
        c, e = np.array(n.center), np.array(n.extent)
        assert len(pts) and np.all(e > 0.01)
        # Boxes are kept to the millimetre: each point lies within 1 mm of its object's box.
        assert np.all(pts >= c - e / 2 - 1e-3) and np.all(pts <= c + e / 2 + 1e-3)
        assert np.allclose(c - e / 2, pts.min(0), atol=1e-3) and np.allclose(c + e / 2, pts.max(0), atol=1e-3)
