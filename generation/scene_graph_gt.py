"""The GT scene graph: every object's class, the annotators' synonyms, colour, material, box, room and visibility, and
the relations its boxes imply under the stated thresholds."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from generation.geometry import box_corners
from tiermap.formats.crops import ObjectVisibility
from tiermap.formats.openlex3d import GTCategories
from tiermap.formats.scene import SCENE_MESH, Scene, read_scene_mesh
from tiermap.formats.scene_graph import GraphNode, RelationThresholds, SceneGraph
from tiermap.vqa_program import box_relations

PALETTE: dict[str, tuple[float, float, float]] = {
    "red": (0.75, 0.15, 0.15), "orange": (0.95, 0.55, 0.15), "yellow": (0.92, 0.85, 0.25), "green": (0.25, 0.55, 0.25),
    "blue": (0.2, 0.3, 0.65), "purple": (0.5, 0.25, 0.6), "pink": (0.95, 0.6, 0.7), "brown": (0.5, 0.34, 0.2),
    "black": (0.1, 0.1, 0.1), "white": (0.95, 0.95, 0.95), "gray": (0.5, 0.5, 0.5), "beige": (0.83, 0.77, 0.64),
}
COLOR_MARGIN = 1.3
"""A colour is named only when the second-nearest palette colour is this many times farther than the nearest."""


def _lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB in [0, 1] → CIE L*a*b* (D65), so palette distances follow perceived colour."""
    c = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = c @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)


_PALETTE_LAB = _lab(np.array(list(PALETTE.values())))


def color_names(rgb: list[float] | np.ndarray) -> list[str]:
    """The palette name of a colour, or [] when two names are about as close (the colour is not clearly one)."""
    d = np.linalg.norm(_PALETTE_LAB - _lab(np.asarray(rgb, dtype=np.float64)), axis=1)
    first, second = np.argsort(d)[:2]
    return [list(PALETTE)[first]] if d[second] >= COLOR_MARGIN * max(d[first], 1e-9) else []


def _object_colors(scene: Scene, scene_dir: Path) -> dict[int, np.ndarray]:
    """Base colour per object: the appearance colour of procedural objects, the mean vertex colour of mesh objects."""
    if scene.source == "procedural" or not (scene_dir / SCENE_MESH).is_file():
        return {o.id: np.asarray(o.appearance.color) for o in scene.objects}
    mesh = read_scene_mesh(scene_dir / SCENE_MESH)
    per_vertex = np.zeros(len(mesh.vertices), dtype=np.int64)
    per_vertex[mesh.triangles.ravel()] = np.repeat(mesh.object_ids, 3)
    out = {}
    for o in scene.objects:
        m = per_vertex == o.id
        out[o.id] = mesh.vertex_colors[m].mean(0) if m.any() else np.asarray(o.appearance.color)
    return out


def gt_scene_graph(scene: Scene, scene_dir: Path, labels: GTCategories, visibility: dict[int, ObjectVisibility],
                   thresholds: RelationThresholds, agreed: dict[int, list[str]] | None = None) -> SceneGraph:
    """The GT graph of one scene from scene.json, the final GT labels and the reference sequence's visibility."""
    samples = {s.object_id: s for s in labels.dataset.samples}
    colors = _object_colors(scene, scene_dir)
    nodes = []
    for o in sorted(scene.objects, key=lambda o: o.id):
        corners = box_corners(o.obb)
        lo, hi = corners.min(0), corners.max(0)
        s = samples.get(o.id)
        syn = sorted(set(s.labels.image_attributes.synonyms)) if s else []
        nodes.append(GraphNode(
            id=o.id, label=o.class_name, synonyms=syn, names=sorted(set((agreed or {}).get(o.id, [])) & set(syn)),
            colors=color_names(colors[o.id]), material=o.appearance.material,
            center=((lo + hi) / 2).round(4).tolist(), extent=(hi - lo).round(4).tolist(), room=o.room,
            visible=o.id in visibility and visibility[o.id].frames > 0,
            ambiguous=bool(s is not None and s.labels.flag == "ambiguous")))
    return SceneGraph(scene=scene.name, source="gt", thresholds=thresholds, nodes=nodes, edges=box_relations(nodes, thresholds),
                      room_kinds={r.name: r.kind for r in scene.rooms})
