"""Textured mesh scenes: per-texel textures kept in mesh.ply + mesh_textures/, and drawn textured by the pyrender renderer."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from generation.geometry import scene_geometry, split_by_object, texture_pieces
from generation.mesh_io import concat_meshes
from tests.conftest import small_params
from tests.mesh_fixtures import write_replica
from tiermap.app.stages import make_scene
from tiermap.formats.base import SchemaError
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.scene import (
    MESH_TEXTURES,
    SCENE_MESH,
    SceneMesh,
    read_scene,
    read_scene_mesh,
    write_scene_mesh,
)
from tiermap.formats.sequence import CameraParams, Light

A, B = (220, 40, 40), (40, 40, 220)  # the two check colours
CHECK, N = 8, 64  # 8×8 px checks on a 64×64 texture: 8×8 checks on a 2-triangle plane
DIST = 2.0  # the plane y = DIST (world, z-up), x and z in [-1, 1], facing the camera at the origin looking along +y
CAM = CameraParams(w=160, h=120, fx=100.0, fy=100.0, cx=79.5, cy=59.5, depth_scale=1000.0)
POSE = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])  # camera-to-world, OpenCV axes: z forward = +y


def checker() -> np.ndarray:
    """64×64 RGB checkerboard: check (row i, column j) is A when i + j is even."""
    i, j = np.indices((N, N)) // CHECK
    return np.where(((i + j) % 2 == 0)[..., None], np.array(A, np.uint8), np.array(B, np.uint8)).astype(np.uint8)


def plane_world() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertices (4, 3) z-up world, triangles wound towards the camera, uv with v up: u along +x, v along +z)."""
    v = np.array([[-1, DIST, -1], [1, DIST, -1], [1, DIST, 1], [-1, DIST, 1]], dtype=float)
    return v, np.array([[0, 1, 2], [0, 2, 3]]), np.stack([(v[:, 0] + 1) / 2, (v[:, 2] + 1) / 2], axis=1)


def write_checker_glb(folder: Path) -> Path:
    """The plane as a y-up GLB (node `wall_1`: object id 1) with the checker texture, and its class map."""
    import trimesh
    from PIL import Image

    v, f, uv = plane_world()
    m = trimesh.Trimesh(np.stack([v[:, 0], v[:, 2], -v[:, 1]], axis=1), f, process=False)  # z-up world → glTF y-up
    m.visual = trimesh.visual.TextureVisuals(uv=uv, image=Image.fromarray(checker()))
    s = trimesh.Scene()
    s.add_geometry(m, node_name="wall_1", geom_name="wall")
    folder.mkdir(parents=True, exist_ok=True)
    s.export(str(folder / "wall.glb"))
    (folder / "classes.json").write_text(json.dumps({"1": "wall"}))
    return folder / "wall.glb"


def check_centres() -> tuple[np.ndarray, np.ndarray]:
    """Pixel (row, col) of every check centre, projected exactly with CAM and POSE; and whether that check is colour A."""
    i, j = (a.ravel() for a in np.indices((N // CHECK, N // CHECK)))
    u, v = (j * CHECK + CHECK / 2) / N, 1 - (i * CHECK + CHECK / 2) / N  # image row 0 is the texture's top (v = 1)
    world = np.stack([2 * u - 1, np.full_like(u, DIST), 2 * v - 1, np.ones_like(u)], axis=1)
    cam = (np.linalg.inv(POSE) @ world.T).T[:, :3]
    col, row = CAM.fx * cam[:, 0] / cam[:, 2] + CAM.cx, CAM.fy * cam[:, 1] / cam[:, 2] + CAM.cy
    return np.rint(np.stack([row, col], axis=1)).astype(int), (i + j) % 2 == 0


@pytest.fixture(scope="module")
def checker_scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checker plane built as a `--source mesh` scene; its scene folder."""
    tmp = tmp_path_factory.mktemp("checker")
    glb = write_checker_glb(tmp / "in")
    return make_scene(DatasetPaths(tmp / "ds", "d"), "wall", small_params(), source="mesh", input_path=glb).parent


def test_mesh_scene_keeps_the_texture_per_texel(checker_scene: Path) -> None:
    header = (checker_scene / SCENE_MESH).read_bytes().split(b"end_header")[0].decode()
    assert f"comment TextureFile {MESH_TEXTURES}/000.png" in header
    assert (checker_scene / MESH_TEXTURES / "000.png").is_file()
    mesh = read_scene_mesh(checker_scene / SCENE_MESH)
    v, _, uv = plane_world()
    order = [int(np.argmin(np.linalg.norm(mesh.vertices - p, axis=1))) for p in v]  # the input's vertices, in the read order
    np.testing.assert_allclose(mesh.vertices[order], v, atol=1e-6)
    np.testing.assert_allclose(mesh.uv[order], uv, atol=1e-6)
    assert len(mesh.textures) == 1 and np.array_equal(mesh.textures[0], checker())
    assert mesh.texture_index.tolist() == [0, 0] and mesh.object_ids.tolist() == [1, 1]
    assert read_scene(checker_scene / "scene.json").object(1).class_name == "wall"


@pytest.mark.parametrize("antialias", [True, False])
def test_pyrender_draws_the_checker_pattern(checker_scene: Path, antialias: bool) -> None:
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    from generation.render_pyrender import PyrenderRenderer

    geometry = scene_geometry(read_scene(checker_scene / "scene.json"), checker_scene)
    r = PyrenderRenderer(geometry, CAM, antialias=antialias)
    try:
        g = r.geometry(POSE)
        rgb = r.shade(g, POSE, [Light(name="amb", type="ambient", color=[1.0, 1.0, 1.0], intensity=1.0)], 0.0).astype(int)
    finally:
        r.close()
    px, is_a = check_centres()
    assert (g["ids"][px[:, 0], px[:, 1]] == 1).all()
    np.testing.assert_allclose(g["depth"][px[:, 0], px[:, 1]], DIST, atol=1e-4)  # depth and ids still come from the ray caster
    got = rgb[px[:, 0], px[:, 1]]
    want = np.where(is_a[:, None], np.array(A), np.array(B))
    assert np.abs(got - want).max() <= 25, f"check colours off by {np.abs(got - want).max()}"
    # Contrast across checks: red minus blue flips sign from check to check (baked vertex colours would blur it away).
    rb = got[:, 0] - got[:, 2]
    assert rb[is_a].min() > 120 and rb[~is_a].max() < -120
    assert rb[is_a].mean() - rb[~is_a].mean() > 0.8 * (A[0] - A[2] - (B[0] - B[2]))


def textured_mesh() -> SceneMesh:
    """Two quads: one per texture; a third untextured quad (texture index -1)."""
    v = np.array([[x + k * 2.0, y, 0.0] for k in range(3) for x, y in ((0, 0), (1, 0), (1, 1), (0, 1))])
    f = np.concatenate([np.array([[0, 1, 2], [0, 2, 3]]) + 4 * k for k in range(3)])
    uv = np.tile([[0, 0], [1, 0], [1, 1], [0, 1]], (3, 1)).astype(float) * 0.5 + 0.25
    rng = np.random.default_rng(0)
    tex = [rng.integers(0, 256, (16, 24, 3), dtype=np.uint8), checker()]
    return SceneMesh(v, f, np.array([1, 1, 2, 2, 0, 0]), np.full((12, 3), 0.5, np.float32), uv, tex, np.array([0, 0, 1, 1, -1, -1]))


def test_scene_mesh_texture_round_trip_and_bytes(tmp_path: Path) -> None:
    m = textured_mesh()
    p = write_scene_mesh(tmp_path / "a" / SCENE_MESH, m)
    back = read_scene_mesh(p)
    np.testing.assert_allclose(back.uv, m.uv, atol=1e-7)
    assert back.texture_index.tolist() == m.texture_index.tolist()
    assert all(np.array_equal(x, y) for x, y in zip(back.textures, m.textures)) and len(back.textures) == 2
    # Deterministic: writing again (elsewhere) gives the same bytes, PLY and PNGs.
    q = write_scene_mesh(tmp_path / "b" / SCENE_MESH, back)
    assert p.read_bytes() == q.read_bytes()
    for k in range(2):
        assert (p.parent / MESH_TEXTURES / f"{k:03d}.png").read_bytes() == (q.parent / MESH_TEXTURES / f"{k:03d}.png").read_bytes()
    # Drawing pieces: the untextured faces keep vertex colours, each texture its own piece with its uv.
    pieces = [pc for g in split_by_object(back) for pc in texture_pieces(g)]
    assert [(pc.id, pc.texture is not None, len(pc.triangles)) for pc in pieces] == [(0, False, 2), (1, True, 2), (2, True, 2)]
    assert np.array_equal(pieces[2].texture, checker())


def test_missing_texture_png_is_one_line_naming_it(tmp_path: Path) -> None:
    p = write_scene_mesh(tmp_path / SCENE_MESH, textured_mesh())
    (tmp_path / MESH_TEXTURES / "001.png").unlink()
    with pytest.raises(SchemaError) as err:
        read_scene_mesh(p)
    msg = str(err.value)
    assert "\n" not in msg and "001.png" in msg and "TextureFile" in msg and str(p) in msg


def test_untextured_mesh_bytes_are_unchanged(tmp_path: Path) -> None:
    """Untextured scene meshes (the Replica fixture) are written exactly as the pre-texture format: no s/t, no texture_index."""
    import io

    from plyfile import PlyData, PlyElement

    from generation.sources import build_scene

    _, mesh = build_scene("rep", "replica", input_path=write_replica(tmp_path / "rep"))
    assert not mesh.textured
    data = write_scene_mesh(tmp_path / "out" / SCENE_MESH, mesh).read_bytes()
    assert not (tmp_path / "out" / MESH_TEXTURES).exists()
    header = data.split(b"end_header")[0].decode()
    assert "TextureFile" not in header and "property float s" not in header and "texture_index" not in header
    va = np.empty(len(mesh.vertices), dtype=[("x", "f4"), ("y", "f4"), ("z", "f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")])
    va["x"], va["y"], va["z"] = mesh.vertices.astype(np.float32).T
    va["red"], va["green"], va["blue"] = (np.clip(mesh.vertex_colors, 0, 1) * 255 + 0.5).astype(np.uint8).T
    fa = np.empty(len(mesh.triangles), dtype=[("vertex_indices", "i4", (3,)), ("object_id", "i4")])
    fa["vertex_indices"], fa["object_id"] = mesh.triangles, mesh.object_ids
    buf = io.BytesIO()
    PlyData([PlyElement.describe(va, "vertex"), PlyElement.describe(fa, "face")]).write(buf)
    assert data == buf.getvalue()


def test_concat_offsets_texture_indices_and_shares_images() -> None:
    """ReplicaCAD composes placed template meshes: textures join once per image and indices shift."""
    m = textured_mesh()
    plain = SceneMesh(m.vertices[:4], m.triangles[:2], np.array([3, 3]), m.vertex_colors[:4])
    other = SceneMesh(m.vertices[:4], m.triangles[:2], np.array([4, 4]), m.vertex_colors[:4], m.uv[:4], [checker()], np.array([0, -1]))
    c = concat_meshes([plain, m, other, m])
    assert len(c.textures) == 3 and c.textures[0] is m.textures[0] and c.textures[1] is m.textures[1]
    assert c.texture_index.tolist() == [-1, -1, 0, 0, 1, 1, -1, -1, 2, -1, 0, 0, 1, 1, -1, -1]
    assert c.uv.shape == (len(c.vertices), 2) and np.array_equal(c.uv[4:16], m.uv)
    assert not concat_meshes([plain, plain]).textured and concat_meshes([plain, plain]).uv is None
