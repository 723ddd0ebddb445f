"""Rendering speed of a textured mesh scene of ReplicaCAD's size at 640x480: pyrender with per-texel textures vs vertex colours.

A synthetic scene built here: 196 boxes, each face subdivided 20×20, plus a subdivided floor (~0.96 M triangles), with
eight 512×512 textures. Each of params.yaml's conditions is rendered by the default renderer (pyrender RGB + ray-cast
depth and ids) twice: textured (the mesh scene path: SceneMesh → split_by_object → texture pieces) and with the
textures dropped (vertex colours sampled from them) as the reference. Target: ≥ 5 fps on 2 cores (printed, not asserted).
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

from generation.conditions import load_condition, resolve_lights  # noqa: E402
from generation.geometry import ObjectGeometry, split_by_object  # noqa: E402
from generation.mesh_scene import scene_from_mesh  # noqa: E402
from generation.sequence import camera_from_params, make_renderer  # noqa: E402
from tiermap.formats.scene import SceneMesh, read_scene_mesh, write_scene_mesh  # noqa: E402

N_FRAMES = 10
GRID, SUB, TEX, N_TEX = 14, 20, 512, 8
# Box faces: origin corner, u and v axes of the unit box (u × v points outward).
_FACES = np.array([
    [[0.5, -0.5, -0.5], [0, 1, 0], [0, 0, 1]], [[-0.5, 0.5, -0.5], [0, -1, 0], [0, 0, 1]],
    [[0.5, 0.5, -0.5], [-1, 0, 0], [0, 0, 1]], [[-0.5, -0.5, -0.5], [1, 0, 0], [0, 0, 1]],
    [[-0.5, -0.5, 0.5], [1, 0, 0], [0, 1, 0]], [[-0.5, 0.5, -0.5], [1, 0, 0], [0, -1, 0]]], dtype=float)


def grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(st (n+1)², 2) in [0, 1]² and triangles (2n², 3) of an n×n subdivided square, counter-clockwise in (s, t)."""
    t, s = np.meshgrid(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1), indexing="ij")
    i, j = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n), indexing="ij"))
    a, b, c, d = i * (n + 1) + j, i * (n + 1) + j + 1, (i + 1) * (n + 1) + j + 1, (i + 1) * (n + 1) + j
    return np.stack([s.ravel(), t.ravel()], 1), np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])


def unit_box(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A unit box with every face subdivided n×n: vertices, triangles, uv (each face carries the whole texture)."""
    st, f = grid(n)
    v = _FACES[:, None, 0] + st[None, :, :1] * _FACES[:, None, 1] + st[None, :, 1:] * _FACES[:, None, 2]
    tris = f[None] + (np.arange(6) * len(st))[:, None, None]
    return v.reshape(-1, 3), tris.reshape(-1, 3), np.tile(st, (6, 1))


def textures(rng: np.random.Generator) -> list[np.ndarray]:
    """N_TEX 512×512 images: checks of different sizes and colours with per-texel noise (detail finer than the mesh)."""
    i, j = np.indices((TEX, TEX))
    out = []
    for k in range(N_TEX):
        c0, c1 = rng.integers(30, 225, 3), rng.integers(30, 225, 3)
        checks = ((i // (8 << (k % 4))) + (j // (8 << (k % 4)))) % 2 == 0
        img = np.where(checks[..., None], c0, c1) + rng.integers(-20, 21, (TEX, TEX, 3))
        out.append(np.clip(img, 0, 255).astype(np.uint8))
    return out


def sample(img: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Colours (V, 3) in [0, 1] at uv (OpenGL, v up; wrapped), as the mesh sources sample vertex colours."""
    h, w = img.shape[:2]
    px = np.clip((np.mod(uv[:, 0], 1.0) * w).astype(int), 0, w - 1)
    py = np.clip(((1 - np.mod(uv[:, 1], 1.0)) * h).astype(int), 0, h - 1)
    return img[py, px].astype(np.float32) / 255


def synthetic_mesh(seed: int = 0) -> SceneMesh:
    """196 textured subdivided boxes on a textured subdivided floor, one object id per box (floor: 0), z-up metres."""
    rng = np.random.default_rng(seed)
    texs = textures(rng)
    bv, bf, buv = unit_box(SUB)
    n = GRID * GRID
    gx, gy = np.meshgrid(np.arange(GRID) - (GRID - 1) / 2, np.arange(GRID) - (GRID - 1) / 2)
    ext = rng.uniform(0.3, 0.6, (n, 3))
    yaw = rng.uniform(0, np.pi, n)
    c, s = np.cos(yaw), np.sin(yaw)
    R = np.stack([np.stack([c, -s, 0 * c], 1), np.stack([s, c, 0 * c], 1), np.tile([0.0, 0.0, 1.0], (n, 1))], 1)
    centre = np.stack([gx.ravel(), gy.ravel(), ext[:, 2] / 2], 1)
    verts = np.einsum("nij,nvj->nvi", R, bv[None] * ext[:, None]) + centre[:, None]
    tris = bf[None] + (np.arange(n) * len(bv))[:, None, None]
    tex_of_box = np.arange(n) % N_TEX
    fst, ff = grid(100)
    floor_v = np.concatenate([(fst - 0.5) * (GRID + 1), np.zeros((len(fst), 1))], 1)
    V = np.concatenate([verts.reshape(-1, 3), floor_v])
    F = np.concatenate([tris.reshape(-1, 3), ff + n * len(bv)])
    uv = np.concatenate([np.tile(buv, (n, 1)), fst * 10])  # the floor repeats its texture 10×
    tex_v = np.concatenate([np.repeat(tex_of_box, len(bv)), np.zeros(len(fst), np.int64)])
    colors = np.zeros((len(V), 3), np.float32)
    for k in range(N_TEX):
        sel = tex_v == k
        colors[sel] = sample(texs[k], uv[sel])
    ids = np.concatenate([np.repeat(np.arange(1, n + 1), len(bf)), np.zeros(len(ff), np.int64)])
    tex_f = np.concatenate([np.repeat(tex_of_box, len(bf)), np.zeros(len(ff), np.int64)])
    return SceneMesh(V, F.astype(np.int64), ids, colors, uv, texs, tex_f)


def ring_poses(n: int, radius: float = 3.0, height: float = 1.6) -> np.ndarray:
    """Camera-to-world poses (OpenCV axes) on a circle, looking outward and 20° down across the boxes."""
    poses = []
    for a in np.linspace(0, 2 * np.pi, n, endpoint=False):
        fwd = np.array([np.cos(a) * np.cos(0.35), np.sin(a) * np.cos(0.35), -np.sin(0.35)])
        right = np.cross(fwd, [0.0, 0.0, 1.0])
        right /= np.linalg.norm(right)
        T = np.eye(4)
        T[:3, :3] = np.stack([right, np.cross(fwd, right), fwd], 1)
        T[:3, 3] = [radius * np.cos(a) * 0.3, radius * np.sin(a) * 0.3, height]
        poses.append(T)
    return np.array(poses)


def fps(geometry: list[ObjectGeometry], camera, poses: np.ndarray, lights, antialias: bool = True) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(frames per second of RGB + depth + ids, set-up seconds) with a fresh renderer."""
    t0 = time.perf_counter()
    r = make_renderer("pyrender", geometry, camera, antialias=antialias)
    r.shade(r.geometry(poses[0]), poses[0], lights, 0.0)  # warm-up: BVH, GL upload
    setup = time.perf_counter() - t0
    t = time.perf_counter()
    for i, pose in enumerate(poses):
        r.shade(r.geometry(pose), pose, lights, i / len(poses))
    dt = time.perf_counter() - t
    r.close()
    return len(poses) / dt, setup


def main() -> None:
    with open("params.yaml") as fh:
        params = yaml.safe_load(fh)
    params["render"].update(width=640, height=480)
    camera = camera_from_params(params["render"])
    t = time.perf_counter()
    mesh = synthetic_mesh()
    with tempfile.TemporaryDirectory() as tmp:
        t1 = time.perf_counter()
        write_scene_mesh(Path(tmp) / "mesh.ply", mesh)
        t2 = time.perf_counter()
        mesh = read_scene_mesh(Path(tmp) / "mesh.ply")
        t3 = time.perf_counter()
    scene = scene_from_mesh("bench", mesh, {i: "box" for i in range(1, GRID * GRID + 1)}, "mesh")
    textured = split_by_object(mesh)
    plain = [ObjectGeometry(g.id, g.vertices, g.triangles, g.vertex_colors) for g in textured]
    print(f"scene: {len(mesh.triangles):,} triangles, {len(mesh.vertices):,} vertices, {len(mesh.textures)} textures "
          f"{TEX}x{TEX}; build {t1 - t:.1f} s, write_scene_mesh {t2 - t1:.1f} s, read_scene_mesh {t3 - t2:.1f} s", flush=True)
    poses = ring_poses(N_FRAMES)
    worst = worst_fast = np.inf
    for cond in params["conditions"]:
        lights = resolve_lights(load_condition(cond, params["lighting"]), scene)
        f_tex, s_tex = fps(textured, camera, poses, lights)
        f_col, s_col = fps(plain, camera, poses, lights)
        f_fast, _ = fps(textured, camera, poses, lights, antialias=False)
        worst, worst_fast = min(worst, f_tex), min(worst_fast, f_fast)
        print(f"pyrender {cond:15s} 640x480 RGB+depth+ids: textured {f_tex:5.2f} fps ({1000 / f_tex:4.0f} ms/frame, set-up {s_tex:4.1f} s)"
              f" | vertex colours {f_col:5.2f} fps ({1000 / f_col:4.0f} ms/frame) | textured, antialias off {f_fast:5.2f} fps"
              f" ({1000 / f_fast:4.0f} ms/frame)", flush=True)
    for what, w in (("default (4x multisampling)", worst), ("render.antialias: false", worst_fast)):
        print(f"target >= 5 fps textured, every condition, {what} (slowest {w:.2f}): {'met' if w >= 5 else 'NOT met'}", flush=True)


if __name__ == "__main__":
    main()
