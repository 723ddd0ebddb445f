"""Triangle geometry of a scene in world coordinates: box meshes of procedural objects, or the scene's mesh file."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tiermap.formats.base import InputError
from tiermap.formats.scene import OBB, Scene, SceneMesh, SceneObject, read_scene_mesh
from tiermap.formats.sequence import CameraParams

_UNIT_CORNERS = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
# Each face as a quad of 4 corners (for per-face texture coordinates): -x, +x, -y, +y, -z, +z.
_QUADS = np.array([[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]])


def box_corners(obb: OBB) -> np.ndarray:
    """The 8 world corners of an oriented box."""
    return np.asarray(obb.center) + (_UNIT_CORNERS * np.asarray(obb.extent)) @ np.asarray(obb.R).T


def scene_bounds(scene: Scene, margin: float = 0.1) -> list[list[float]]:
    """World bounds [[x0, x1], [y0, y1], [z0, z1]] of every object box and room, widened by `margin` and rounded out to 0.1 m."""
    pts = [box_corners(o.obb) for o in scene.objects] + [np.array([r.min, r.max], dtype=float) for r in scene.rooms]
    p = np.concatenate(pts)
    lo, hi = np.floor((p.min(0) - margin) * 10), np.ceil((p.max(0) + margin) * 10)
    return [[float(a) / 10, float(b) / 10] for a, b in zip(lo, hi)]


def face_uv(quads: np.ndarray, center: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Texture coordinates (OpenGL: v up) of box faces (F, 4, 3) so the texture reads upright and unmirrored from outside."""
    face_c = quads.mean(1)
    n = face_c - center
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    # Texture "up": world up on side faces; on top/bottom faces, the box's own y axis (flipped for the bottom).
    up = np.array([0.0, 0.0, 1.0]) - n[:, 2:3] * n
    flat = np.linalg.norm(up, axis=1) < 1e-6
    up[flat] = np.asarray(R)[:, 1] * np.sign(n[flat, 2:3])
    # Snap "up" to the face edge closest to it, so the texture's axes follow the face's edges.
    e = np.stack([quads[:, 1] - quads[:, 0], quads[:, 3] - quads[:, 0]], axis=1)
    e /= np.linalg.norm(e, axis=2, keepdims=True)
    along = np.einsum("fkd,fd->fk", e, up)
    best = np.abs(along).argmax(1)
    up = e[np.arange(len(e)), best] * np.sign(along[np.arange(len(e)), best])[:, None]
    right = np.cross(up, n)  # a viewer looking at the face along -n has `right` on their right
    rel = quads - face_c[:, None]
    u = (np.sign(np.einsum("fkd,fd->fk", rel, right)) + 1) / 2
    v = (np.sign(np.einsum("fkd,fd->fk", rel, up)) + 1) / 2
    return np.stack([u, v], axis=-1)


def textured_box(obb: OBB) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertices (24, 3), triangles (12, 3), uv (24, 2)): each face carries the full texture, upright and unmirrored."""
    corners = box_corners(obb)
    v = corners[_QUADS.reshape(-1)]
    f = np.concatenate([np.array([[0, 1, 2], [0, 2, 3]]) + 4 * k for k in range(6)])
    # Winding: make every triangle face away from the box centre.
    tri = v[f]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    flip = np.sum(n * (tri.mean(1) - np.asarray(obb.center)), axis=1) < 0
    f[flip] = f[flip][:, ::-1]
    return v, f, face_uv(v.reshape(6, 4, 3), np.asarray(obb.center), np.asarray(obb.R)).reshape(-1, 2)


def object_parts(o: SceneObject) -> list[OBB]:
    """The boxes an object is built from."""
    return o.parts or [o.obb]


def object_mesh(o: SceneObject) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One mesh (vertices, triangles, uv) joining all parts of an object."""
    vs, fs, uvs = [], [], []
    for part in object_parts(o):
        v, f, uv = textured_box(part)
        fs.append(f + sum(len(x) for x in vs))
        vs.append(v)
        uvs.append(uv)
    return np.concatenate(vs), np.concatenate(fs), np.concatenate(uvs)


@dataclass
class ObjectGeometry:
    """Triangles of one object (id 0: unlabelled geometry that renders but is no object), colour per vertex, optional texture.

    A procedural object has one `texture` over all faces; a mesh object may have `textures` with a `texture_index` per
    triangle (-1: vertex colours), which `texture_pieces` splits into single-texture pieces for drawing.
    """

    id: int
    vertices: np.ndarray
    triangles: np.ndarray
    vertex_colors: np.ndarray
    uv: np.ndarray | None = None
    texture: np.ndarray | None = None
    textures: list[np.ndarray] | None = None
    texture_index: np.ndarray | None = None


def texture_pieces(g: ObjectGeometry) -> list[ObjectGeometry]:
    """One object as pieces to draw: its untextured faces (vertex colours) first, then one piece per texture; itself if it has none."""
    if g.textures is None or g.texture_index is None or g.uv is None or not (g.texture_index >= 0).any():
        return [g]
    out = []
    for k in np.unique(g.texture_index).tolist():
        tris = g.triangles[g.texture_index == k]
        vidx, inv = np.unique(tris, return_inverse=True)
        tex = g.textures[k] if k >= 0 else None
        out.append(ObjectGeometry(g.id, g.vertices[vidx], inv.reshape(-1, 3), g.vertex_colors[vidx],
                                  g.uv[vidx] if tex is not None else None, tex))
    return out


def procedural_geometry(o: SceneObject) -> ObjectGeometry:
    """Box mesh of a procedural object with its colour and procedural texture."""
    from generation.textures import texture_image

    v, f, uv = object_mesh(o)
    colors = np.tile(np.asarray(o.appearance.color, dtype=np.float32), (len(v), 1))
    if not o.appearance.texture:
        return ObjectGeometry(o.id, v, f, colors)
    return ObjectGeometry(o.id, v, f, colors, uv, texture_image(o.appearance.texture, tuple(o.appearance.color), o.appearance.text))


class RendererUnavailableError(RuntimeError):
    """A renderer's libraries are not installed or cannot start on this machine (the message says how to get them)."""


def scene_geometry(scene: Scene, scene_dir: Path | str) -> list[ObjectGeometry]:
    """Everything a renderer draws: procedural boxes, or the scene's mesh file (beside scene.json) split by object id."""
    if scene.source == "habitat":
        raise InputError(f"scene {scene.name!r} lives in habitat's files ({scene.habitat_scene}): render it with --renderer habitat")
    if scene.geometry is None:
        return [procedural_geometry(o) for o in scene.objects]
    return split_by_object(read_scene_mesh(Path(scene_dir) / scene.geometry))


def split_by_object(mesh: SceneMesh) -> list[ObjectGeometry]:
    """Per-object geometry (compact vertex arrays; uv, textures and texture index carried along) of a labelled mesh, id 0 included."""
    textured = mesh.textured
    order = np.argsort(mesh.object_ids, kind="stable")
    ids, starts = np.unique(mesh.object_ids[order], return_index=True)
    out = []
    for oid, a, b in zip(ids.tolist(), starts, [*starts[1:], len(order)]):
        tris = mesh.triangles[order[a:b]]
        vidx, inv = np.unique(tris, return_inverse=True)
        g = ObjectGeometry(int(oid), mesh.vertices[vidx], inv.reshape(-1, 3), mesh.vertex_colors[vidx])
        if textured:
            g.uv, g.textures, g.texture_index = mesh.uv[vidx], mesh.textures, mesh.texture_index[order[a:b]]  # type: ignore[index]
        out.append(g)
    return out


def sample_triangles(area: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n area-weighted uniform samples on triangles: (triangle index, barycentric r1, r2) with r1 + r2 <= 1."""
    which = rng.choice(len(area), size=n, p=area / area.sum())
    r1, r2 = rng.random(n), rng.random(n)
    flip = r1 + r2 > 1
    r1[flip], r2[flip] = 1 - r1[flip], 1 - r2[flip]
    return which, r1, r2


def at_samples(corners: np.ndarray, which: np.ndarray, r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    """Per-corner values (T, 3, D) interpolated at triangle samples (n, D)."""
    t = corners[which]
    return t[:, 0] + r1[:, None] * (t[:, 1] - t[:, 0]) + r2[:, None] * (t[:, 2] - t[:, 0])


def sample_surface(geometry: list[ObjectGeometry], density: float, seed: int, labelled_only: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points sampled uniformly on object surfaces at `density` points per m²: (points, object ids, uint8 colours)."""
    rng = np.random.default_rng(seed)
    pts, ids, cols = [], [], []
    for g in geometry:
        if g.id == 0 and labelled_only:
            continue
        tri = g.vertices[g.triangles]
        area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
        if area.sum() <= 0:
            continue
        which, r1, r2 = sample_triangles(area, max(int(round(area.sum() * density)), 8), rng)
        n = len(which)
        pts.append(at_samples(tri, which, r1, r2))
        cols.append(at_samples(g.vertex_colors[g.triangles], which, r1, r2))
        ids.append(np.full(n, g.id, dtype=np.int64))
    if not pts:
        return np.zeros((0, 3)), np.zeros(0, np.int64), np.zeros((0, 3), np.uint8)
    colors = (np.clip(np.concatenate(cols), 0, 1) * 255 + 0.5).astype(np.uint8)
    return np.concatenate(pts), np.concatenate(ids), colors


def ray_scene(geometry: list[ObjectGeometry]):  # type: ignore[no-untyped-def]
    """(Open3D RaycastingScene with one geometry id per entry, in order; object id per geometry id, last slot 0 = miss)."""
    import open3d as o3d

    rc = o3d.t.geometry.RaycastingScene()
    for g in geometry:
        mesh = o3d.t.geometry.TriangleMesh()
        mesh.vertex.positions = o3d.core.Tensor(g.vertices.astype(np.float32))
        mesh.triangle.indices = o3d.core.Tensor(g.triangles.astype(np.int32))
        rc.add_triangles(mesh)
    return rc, np.asarray([g.id for g in geometry] + [0], dtype=np.int64)


def pixel_rays(camera: CameraParams) -> np.ndarray:
    """Camera-axis ray directions (h, w, 3) through pixel centres (integer coordinates, OpenCV), as the renderers cast them."""
    K = camera.K()
    u, v = np.meshgrid(np.arange(camera.w, dtype=float), np.arange(camera.h, dtype=float))
    return np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones_like(u)], -1).astype(np.float32)
