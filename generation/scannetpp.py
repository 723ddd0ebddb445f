"""ScanNet++ scenes: `scans/mesh_aligned_0.05.ply` + `segments.json` + `segments_anno.json` → per-vertex object ids.

Ids follow the ScanNet++ toolbox (`semantic/prep/prepare_training_data.py`, `GetLabelsOnVertices` in single-label
mode), whose `vtx_instance_anno_id` is OpenLex3D's ScanNet++ GT id: a vertex takes the `objectId` of the segGroups
containing its segment, in file order, at most three per vertex (later groups are dropped for it); with several, the
group with the fewest vertices wins (ties: the earlier group); a vertex in no group is unannotated (the toolbox's
-100, id 0 here). Every label counts as an instance class (the toolbox's instance-class list is not applied).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from generation.mesh_io import face_ids_from_vertices, read_mesh_ply
from generation.mesh_scene import scene_from_mesh
from tiermap.formats.base import InputError, SchemaError
from tiermap.formats.scannetpp import (
    SCANNETPP_ANNO,
    SCANNETPP_MESH,
    SCANNETPP_SEGMENTS,
    SegmentsAnno,
    read_segments,
    read_segments_anno,
)
from tiermap.formats.scene import Scene, SceneMesh

MAX_LABELS = 3  # the toolbox's multilabel_max: groups a vertex can take before later ones are ignored


def find_scannetpp_files(path: Path) -> tuple[Path, Path, Path]:
    """The mesh, segments.json and segments_anno.json of a ScanNet++ scene folder (`data/<scene id>/`)."""
    folder = path.parent.parent if path.is_file() else path.parent if path.name == "scans" else path
    files = (folder / SCANNETPP_MESH, folder / SCANNETPP_SEGMENTS, folder / SCANNETPP_ANNO)
    what = ("ScanNet++'s mesh with vertex colours", "ScanNet++'s per-vertex segment ids", "ScanNet++'s object annotations")
    for p, w in zip(files, what):
        if not p.is_file():
            raise InputError(f"{p}: missing, expected {w} (pass --input <scannetpp>/data/<scene id>)")
    return files


def vertex_object_ids(seg_indices: np.ndarray, anno: SegmentsAnno, anno_path: Path | str = "segments_anno.json") -> np.ndarray:
    """Per-vertex object ids from per-vertex segment ids and the segGroups, as the ScanNet++ toolbox assigns them."""
    segs, inverse, counts = np.unique(seg_indices, return_inverse=True, return_counts=True)
    used = np.zeros(len(segs), dtype=np.int64)
    cand_id = np.zeros((len(segs), MAX_LABELS), dtype=np.int64)
    cand_size = np.full((len(segs), MAX_LABELS), np.inf)
    for i, g in enumerate(anno.segGroups):
        wanted = np.unique(np.asarray(g.segments, dtype=np.int64))
        s = np.clip(np.searchsorted(segs, wanted), 0, max(len(segs) - 1, 0))
        unknown = wanted[segs[s] != wanted] if len(segs) else wanted
        if len(unknown):
            raise SchemaError(anno_path, f"segGroups[{i}].segments", "segment ids that segments.json's segIndices uses", int(unknown[0]))
        s = s[used[s] < MAX_LABELS]
        n = int(counts[s].sum())
        if n == 0:
            continue
        cand_id[s, used[s]] = g.object_id
        cand_size[s, used[s]] = n
        used[s] += 1
    pick = np.argmin(cand_size, axis=1)  # first position among equal sizes, as np.argmin in the toolbox
    seg_ids = np.where(used > 0, cand_id[np.arange(len(segs)), pick], 0)
    return seg_ids[inverse]


def scannetpp_scene(name: str, path: Path, seed: int = 0) -> tuple[Scene, SceneMesh]:
    """A ScanNet++ scene (z-up metres already): faces take the id at least two of their vertices share."""
    mesh_path, seg_path, anno_path = find_scannetpp_files(Path(path))
    mesh = read_mesh_ply(mesh_path, id_field=None)
    seg = np.asarray(read_segments(seg_path).segIndices, dtype=np.int64)
    if len(seg) != len(mesh.vertices):
        raise SchemaError(seg_path, "segIndices", f"one segment id per vertex of {mesh_path.name} ({len(mesh.vertices)})", len(seg))
    anno = read_segments_anno(anno_path)
    mesh.object_ids = face_ids_from_vertices(mesh.triangles, vertex_object_ids(seg, anno, anno_path))
    classes = {int(g.object_id): g.label for g in anno.segGroups if g.object_id is not None}
    return scene_from_mesh(name, mesh, classes, "scannetpp", seed), mesh
