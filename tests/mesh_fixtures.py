"""Tiny labelled meshes in the scene-source formats (Replica PLY + info_semantic.json, generic PLY, GLB), made by tests."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from plyfile import PlyData, PlyElement

# (object id, class as the source names it, centre, extent, colour): a 4 × 3 m room with a table, a chair and a lamp.
ROOM = [
    (1, "floor", (2.0, 1.5, -0.01), (4.0, 3.0, 0.02), (0.55, 0.45, 0.35)),
    (2, "wall", (2.0, -0.025, 1.25), (4.0, 0.05, 2.5), (0.85, 0.85, 0.8)),
    (3, "wall", (2.0, 3.025, 1.25), (4.0, 0.05, 2.5), (0.85, 0.85, 0.8)),
    (4, "wall", (-0.025, 1.5, 1.25), (0.05, 3.0, 2.5), (0.8, 0.85, 0.85)),
    (5, "wall", (4.025, 1.5, 1.25), (0.05, 3.0, 2.5), (0.8, 0.85, 0.85)),
    (6, "ceiling", (2.0, 1.5, 2.51), (4.0, 3.0, 0.02), (0.95, 0.95, 0.95)),
    (7, "table", (1.0, 1.0, 0.375), (0.8, 0.6, 0.75), (0.6, 0.35, 0.2)),
    (8, "chair", (3.2, 2.2, 0.25), (0.45, 0.45, 0.5), (0.2, 0.3, 0.7)),
    (9, "table_lamp", (1.0, 1.0, 0.9), (0.15, 0.15, 0.3), (0.9, 0.8, 0.2)),
]
UNLISTED_ID = 99  # a face id that info_semantic.json does not list (OpenLex3D's loader maps it to 0)


def box_quads(center: tuple[float, ...], extent: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The 8 corners and 6 outward quads of an axis-aligned box."""
    c, e = np.asarray(center), np.asarray(extent) / 2
    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * e + c
    quads = np.array([[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]])
    return v, quads


def room_mesh(extra_unlisted: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(vertices, quads, per-quad object id, per-vertex colour) of the room, plus a small unlisted box on the floor."""
    items = list(ROOM) + ([(UNLISTED_ID, "?", (3.5, 0.5, 0.05), (0.1, 0.1, 0.1), (0.5, 0.5, 0.5))] if extra_unlisted else [])
    vs, qs, ids, cols = [], [], [], []
    for oid, _, c, e, col in items:
        v, q = box_quads(c, e)
        qs.append(q + 8 * len(vs))
        vs.append(v)
        ids.append(np.full(6, oid))
        cols.append(np.tile(col, (8, 1)))
    return np.concatenate(vs), np.concatenate(qs), np.concatenate(ids), np.concatenate(cols)


def write_replica(folder: Path) -> Path:
    """`<folder>/habitat/mesh_semantic.ply` (quads, per-face object_id, vertex colours) + info_semantic.json."""
    hab = folder / "habitat"
    hab.mkdir(parents=True, exist_ok=True)
    v, q, ids, col = room_mesh()
    va = np.empty(len(v), dtype=[("x", "f4"), ("y", "f4"), ("z", "f4"), ("nx", "f4"), ("ny", "f4"), ("nz", "f4"),
                                  ("red", "u1"), ("green", "u1"), ("blue", "u1")])
    va["x"], va["y"], va["z"] = v.T
    va["nx"], va["ny"], va["nz"] = 0, 0, 1
    va["red"], va["green"], va["blue"] = (col * 255).round().astype(np.uint8).T
    fa = np.empty(len(q), dtype=[("vertex_indices", "i4", (4,)), ("object_id", "i4")])
    fa["vertex_indices"], fa["object_id"] = q, ids
    PlyData([PlyElement.describe(va, "vertex"), PlyElement.describe(fa, "face")]).write(str(hab / "mesh_semantic.ply"))
    names = sorted({cls for _, cls, *_ in ROOM})
    cid = {n: i + 1 for i, n in enumerate(names)}
    info = {"classes": [{"id": cid[n], "name": n} for n in names],
            "objects": [{"id": oid, "class_id": cid[cls], "class_name": cls,
                         "oriented_bbox": {"abb": {"center": list(c), "sizes": list(e)}}} for oid, cls, c, e, _ in ROOM],
            "id_to_label": [0] + [cid[cls] for _, cls, *_ in ROOM]}
    (hab / "info_semantic.json").write_text(json.dumps(info))
    return folder


def write_vertex_id_ply(path: Path) -> Path:
    """A generic triangle PLY with per-vertex object_id (no unlisted box) and its class map beside it."""
    v, q, ids, col = room_mesh(extra_unlisted=False)
    tris = np.concatenate([q[:, [0, 1, 2]], q[:, [0, 2, 3]]])
    vid = np.repeat(ids[::6], 8)
    va = np.empty(len(v), dtype=[("x", "f4"), ("y", "f4"), ("z", "f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1"), ("object_id", "i4")])
    va["x"], va["y"], va["z"] = v.T
    va["red"], va["green"], va["blue"] = (col * 255).round().astype(np.uint8).T
    va["object_id"] = vid
    fa = np.empty(len(tris), dtype=[("vertex_indices", "i4", (3,))])
    fa["vertex_indices"] = tris
    PlyData([PlyElement.describe(va, "vertex"), PlyElement.describe(fa, "face")]).write(str(path))
    path.with_name(path.stem + ".classes.json").write_text(json.dumps({str(oid): cls for oid, cls, *_ in ROOM}))
    return path


def write_glb(path: Path, texture: bool = False) -> Path:
    """A y-up GLB, one node per object named `object_<id>` (texture: the table carries an image) + classes.json."""
    import trimesh
    from PIL import Image

    scene = trimesh.Scene()
    for oid, cls, c, e, col in ROOM:
        v, q = box_quads(c, e)
        tris = np.concatenate([q[:, [0, 1, 2]], q[:, [0, 2, 3]]])
        v_yup = np.stack([v[:, 0], v[:, 2], -v[:, 1]], axis=1)  # glTF is y-up
        m = trimesh.Trimesh(v_yup, tris, process=False)
        if texture and cls == "table":
            img = Image.new("RGB", (8, 8), (200, 30, 30))
            m.visual = trimesh.visual.TextureVisuals(uv=np.tile([[0.5, 0.5]], (len(v), 1)), image=img)
        else:
            m.visual = trimesh.visual.ColorVisuals(m, vertex_colors=np.tile([*(np.asarray(col) * 255).round(), 255], (len(v), 1)).astype(np.uint8))
        scene.add_geometry(m, node_name=f"object_{oid}", geom_name=f"mesh_{oid}")
    path.parent.mkdir(parents=True, exist_ok=True)
    scene.export(str(path))
    path.with_name("classes.json").write_text(json.dumps({str(oid): cls for oid, cls, *_ in ROOM}))
    return path
