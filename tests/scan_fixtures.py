"""Tiny HM3D-Semantics v0.2 and ScanNet++ scenes in their exact on-disk formats, made by tests."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from plyfile import PlyData, PlyElement

from tests.mesh_fixtures import box_quads

HM3D_ID = "TEEsavR23oF"
# HM3D rows (z-up world): (object id, category, region, centre, extent, semantic colour, texture colour).
# A 5 x 3 m flat in two regions; its walls are unannotated (black in the semantic mesh).
HM3D_OBJECTS = [
    (1, "floor", 0, (1.25, 1.5, -0.01), (2.5, 3.0, 0.02), 0x1F77B4, (150, 120, 90)),
    (2, "ceiling", 0, (1.25, 1.5, 2.51), (2.5, 3.0, 0.02), 0xAEC7E8, (240, 240, 240)),
    (3, "dining table", 0, (1.0, 1.0, 0.375), (0.8, 0.6, 0.75), 0x2CA02C, (160, 90, 40)),
    (4, "chair", 0, (1.9, 2.2, 0.25), (0.45, 0.45, 0.5), 0xD62728, (40, 70, 190)),
    (7, "floor", 1, (3.75, 1.5, -0.01), (2.5, 3.0, 0.02), 0xFF7F0E, (150, 120, 90)),
    (8, "ceiling", 1, (3.75, 1.5, 2.51), (2.5, 3.0, 0.02), 0xFFBB78, (240, 240, 240)),
    (9, "bed", 1, (4.0, 1.2, 0.25), (1.4, 1.9, 0.5), 0x9467BD, (220, 60, 160)),
]
HM3D_WALLS = [((-0.025, 1.5, 1.25), (0.05, 3.0, 2.5)), ((5.025, 1.5, 1.25), (0.05, 3.0, 2.5)),
              ((2.5, -0.025, 1.25), (5.0, 0.05, 2.5)), ((2.5, 3.025, 1.25), (5.0, 0.05, 2.5))]
WALL_TEXTURE = (200, 200, 190)


def triangles(quads: np.ndarray) -> np.ndarray:
    """Two outward triangles per quad."""
    return np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])


def to_y_up(v: np.ndarray) -> np.ndarray:
    """z-up (x, y, z) → glTF's y-up (x, z, -y)."""
    return np.stack([v[:, 0], v[:, 2], -v[:, 1]], axis=1)


def hm3d_boxes() -> list[tuple[np.ndarray, np.ndarray, int, tuple[int, int, int]]]:
    """(z-up corners, triangles, semantic colour, texture colour) of every box: the objects, then the walls."""
    out = []
    for _, _, _, c, e, sem, tex in HM3D_OBJECTS:
        v, q = box_quads(c, e)
        out.append((v, triangles(q), sem, tex))
    for c, e in HM3D_WALLS:
        v, q = box_quads(c, e)
        out.append((v, triangles(q), 0x000000, WALL_TEXTURE))
    return out


def write_hm3d(folder: Path, rows: list[str] | None = None, reorder_textured: bool = False, extra_colour: int | None = None,
               semantic_texture: bool = False) -> Path:
    """`<folder>/<id>.glb` (one texture image), `<id>.semantic.glb` (vertex colours, or a texture) and `<id>.semantic.txt`."""
    import trimesh
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    boxes = hm3d_boxes()
    texels = sorted({tex for *_, tex in boxes})
    img = Image.new("RGB", (len(texels), 1))
    img.putdata(texels)
    textured, semantic = trimesh.Scene(), trimesh.Scene()
    order = list(range(len(boxes)))[::-1] if reorder_textured else list(range(len(boxes)))
    for k in order:
        v, t, _, tex = boxes[k]
        m = trimesh.Trimesh(to_y_up(v), t, process=False)
        u = (texels.index(tex) + 0.5) / len(texels)
        m.visual = trimesh.visual.TextureVisuals(uv=np.tile([u, 0.5], (len(v), 1)), image=img)
        textured.add_geometry(m, node_name=f"mesh_{k}", geom_name=f"mesh_{k}")
    sems = [extra_colour if extra_colour is not None and k == 3 else sem for k, (_, _, sem, _) in enumerate(boxes)]
    sem_img = Image.new("RGB", (4 * len(sems), 4))  # a 4 x 4 texel block per box, sampled at its centre
    for k, sem in enumerate(sems):
        sem_img.paste(((sem >> 16) & 255, (sem >> 8) & 255, sem & 255), (4 * k, 0, 4 * k + 4, 4))
    for k, (v, t, _, _) in enumerate(boxes):
        sem = sems[k]
        m = trimesh.Trimesh(to_y_up(v), t, process=False)
        if semantic_texture:
            m.visual = trimesh.visual.TextureVisuals(uv=np.tile([(4 * k + 2) / sem_img.width, 0.5], (len(v), 1)), image=sem_img)
        else:
            rgba = [(sem >> 16) & 255, (sem >> 8) & 255, sem & 255, 255]
            m.visual = trimesh.visual.ColorVisuals(m, vertex_colors=np.tile(rgba, (len(v), 1)).astype(np.uint8))
        semantic.add_geometry(m, node_name=f"sem_{k}", geom_name=f"sem_{k}")
    textured.export(str(folder / f"{HM3D_ID}.glb"))
    semantic.export(str(folder / f"{HM3D_ID}.semantic.glb"))
    if rows is None:
        rows = [f'{oid},{sem:06X},"{cat}",{reg}' for oid, cat, reg, _, _, sem, _ in HM3D_OBJECTS]
    (folder / f"{HM3D_ID}.semantic.txt").write_text("HM3D Semantic Annotations\n" + "\n".join(rows) + "\n")
    return folder


# ScanNet++ (z-up metres): (objectId, label, centre, extent, colour, segment ids of its vertices: bottom face, top face).
SCANNETPP_OBJECTS = [
    (1, "floor", (2.0, 1.5, -0.01), (4.0, 3.0, 0.02), (140, 115, 90), (40, 41)),
    (2, "table", (1.0, 1.0, 0.375), (0.8, 0.6, 0.75), (150, 80, 40), (57, 57)),
    (5, "office chair", (3.0, 2.0, 0.3), (0.5, 0.5, 0.6), (30, 60, 200), (63, 64)),
]
SCANNETPP_WALLS = [((-0.025, 1.5, 1.25), (0.05, 3.0, 2.5)), ((4.025, 1.5, 1.25), (0.05, 3.0, 2.5)),
                   ((2.0, -0.025, 1.25), (4.0, 0.05, 2.5)), ((2.0, 3.025, 1.25), (4.0, 0.05, 2.5)),
                   ((2.0, 1.5, 2.51), (4.0, 3.0, 0.02))]  # four walls and the ceiling: no segGroup holds them


def scannetpp_mesh() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(vertices, triangles, uint8 colours, segment id per vertex) of the ScanNet++ fixture."""
    vs, ts, cols, segs = [], [], [], []
    items = [(c, e, col, s) for _, _, c, e, col, s in SCANNETPP_OBJECTS]
    items += [(c, e, (200, 200, 200), (900 + k, 900 + k)) for k, (c, e) in enumerate(SCANNETPP_WALLS)]
    for c, e, col, (s_lo, s_hi) in items:
        v, q = box_quads(c, e)
        ts.append(triangles(q) + 8 * len(vs))
        vs.append(v)
        cols.append(np.tile(col, (8, 1)))
        segs.append(np.where(v[:, 2] < np.asarray(c)[2], s_lo, s_hi))  # box_quads: bottom and top corners
    return np.concatenate(vs), np.concatenate(ts), np.concatenate(cols).astype(np.uint8), np.concatenate(segs)


def write_scannetpp(folder: Path, groups: list[dict] | None = None, seg_indices: list[int] | None = None) -> Path:
    """`<folder>/scans/mesh_aligned_0.05.ply` (vertex colours), `segments.json`, `segments_anno.json`."""
    scans = folder / "scans"
    scans.mkdir(parents=True, exist_ok=True)
    v, t, col, seg = scannetpp_mesh()
    va = np.empty(len(v), dtype=[("x", "f4"), ("y", "f4"), ("z", "f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")])
    va["x"], va["y"], va["z"] = v.T
    va["red"], va["green"], va["blue"] = col.T
    fa = np.empty(len(t), dtype=[("vertex_indices", "i4", (3,))])
    fa["vertex_indices"] = t
    PlyData([PlyElement.describe(va, "vertex"), PlyElement.describe(fa, "face")]).write(str(scans / "mesh_aligned_0.05.ply"))
    (scans / "segments.json").write_text(json.dumps({"params": {"kThresh": 0.005, "segMinVerts": 20}, "sceneId": folder.name,
                                                     "segIndices": seg.tolist() if seg_indices is None else seg_indices}))
    if groups is None:
        groups = [{"id": oid, "objectId": oid, "label": lab, "segments": sorted(set(s)), "obb": {"centroid": list(c), "axesLengths": list(e)}}
                  for oid, lab, c, e, _, s in SCANNETPP_OBJECTS]
    (scans / "segments_anno.json").write_text(json.dumps({"sceneId": folder.name, "segGroups": groups}))
    return folder
