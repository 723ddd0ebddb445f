"""Rendering speed at 640x480 on the procedural demo scene: RGB + depth + instance ids per second.

Renderers measured on the same scene, frames and lights in one run: tiermap's default (pyrender via Mesa
EGL for RGB, Open3D ray casting for exact depth and ids), the pure ray-cast renderer, and Open3D's
Filament offscreen renderer (RGB + depth from Filament, ids from ray casting) as the reference.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import yaml

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

from generation.conditions import load_condition, resolve_lights  # noqa: E402
from generation.geometry import scene_geometry  # noqa: E402
from generation.procedural import generate_scene  # noqa: E402
from generation.sequence import camera_from_params, make_renderer, scene_poses  # noqa: E402

N_FRAMES = 30
FILAMENT_FRAMES = 3
FILAMENT_BUDGET_S = 240.0


def time_renderer(name: str, geometry, camera, poses, lights) -> float:  # type: ignore[no-untyped-def]
    r = make_renderer(name, geometry, camera)
    r.shade(r.geometry(poses[0]), poses[0], lights, 0.0)  # warm-up: BVH build, GL context
    t = time.perf_counter()
    for i, pose in enumerate(poses):
        r.shade(r.geometry(pose), pose, lights, i / len(poses))
    dt = time.perf_counter() - t
    r.close()
    return len(poses) / dt


def time_filament(geometry, camera, poses) -> float:  # type: ignore[no-untyped-def]
    import open3d as o3d

    from generation.render_raycast import RaycastRenderer

    ids = RaycastRenderer(geometry, camera)
    r = o3d.visualization.rendering.OffscreenRenderer(camera.w, camera.h)
    for k, g in enumerate(geometry):
        m = o3d.geometry.TriangleMesh(o3d.utility.Vector3dVector(g.vertices), o3d.utility.Vector3iVector(g.triangles))
        m.compute_triangle_normals()
        mat = o3d.visualization.rendering.MaterialRecord()
        mat.shader = "defaultLit"
        mat.base_color = [*g.vertex_colors[0].tolist(), 1.0]
        r.scene.add_geometry(f"o{k}", m, mat)
    r.scene.scene.add_point_light("a", [1, 1, 1], [1.5, 2.0, 2.4], 1e5, 10.0, False)  # no shadows, as pyrender point lights
    K = camera.K()

    def frame(pose: np.ndarray) -> None:
        r.setup_camera(K, np.linalg.inv(pose), camera.w, camera.h)
        r.render_to_image()
        r.render_to_depth_image(z_in_view_space=True)
        ids.geometry(pose)

    frame(poses[0])
    t, n = time.perf_counter(), 0
    for pose in poses[1:]:
        frame(pose)
        n += 1
        if time.perf_counter() - t > FILAMENT_BUDGET_S:  # llvmpipe takes 4-80 s per frame of this scene
            break
    return n / (time.perf_counter() - t)


def setup(width: int = 640, height: int = 480):  # type: ignore[no-untyped-def]
    """The demo scene, its geometry, camera and first N_FRAMES poses at the given resolution."""
    params = yaml.safe_load(open("params.yaml"))
    params["render"].update(width=width, height=height)
    scene = generate_scene("room0", seed=params["scene"]["room0"]["seed"], rooms=params["scene"]["room0"].get("rooms"))
    camera = camera_from_params(params["render"])
    return params, scene, scene_geometry(scene, "."), camera, scene_poses(scene, params, 1.0)[:N_FRAMES]


def filament_in_subprocess(timeout: float = 900) -> float:
    """Filament fps measured in a fresh process: its Vulkan context and pyrender's EGL context do not share a process."""
    res = subprocess.run([sys.executable, __file__, "--filament-only"], capture_output=True, text=True, timeout=timeout)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("FILAMENT_FPS ")), None)
    if line is None:
        raise RuntimeError(f"exit {res.returncode}: {(res.stderr.strip().splitlines() or ['no output'])[-1]}")
    return float(line.split()[1])


def main() -> None:
    if "--filament-only" in sys.argv:
        _, _, geometry, camera, poses = setup()
        # Filament on llvmpipe takes seconds to tens of seconds per frame of this scene: up to 3 frames within the budget.
        print(f"FILAMENT_FPS {time_filament(geometry, camera, poses[:FILAMENT_FRAMES + 1])}", flush=True)
        return
    params, scene, geometry, camera, poses = setup()
    fps: dict[str, float] = {}
    for cond in params["conditions"]:
        lights = resolve_lights(load_condition(cond, params["lighting"]), scene)
        for name in ("pyrender", "raycast"):
            fps[f"{name}/{cond}"] = v = time_renderer(name, geometry, camera, poses, lights)
            print(f"{name:9s} {cond:15s} 640x480 RGB+depth+instance: {v:6.1f} fps ({1000 / v:5.0f} ms/frame)", flush=True)
    try:
        fps["filament"] = filament_in_subprocess()
    except Exception as err:  # Filament needs Debian libvulkan1 + mesa-vulkan-drivers
        print(f"filament reference unavailable: {type(err).__name__}: {err}")
    slowest = min(v for k, v in fps.items() if k.startswith("pyrender/"))
    if "filament" in fps:
        base = fps["pyrender/baseline"]
        print(f"filament  one point light  640x480 RGB+depth+instance: {fps['filament']:.4f} fps ({1000 / fps['filament']:5.0f} ms/frame)")
        print(f"ratio pyrender/filament (baseline lights): {base / fps['filament']:.2f}x; raycast/filament: "
              f"{fps['raycast/baseline'] / fps['filament']:.2f}x; slowest pyrender condition/filament: {slowest / fps['filament']:.2f}x")
    print(f"target >= 10 fps (default renderer, every condition; slowest {slowest:.1f}): {'met' if slowest >= 10 else 'NOT met'}", flush=True)


if __name__ == "__main__":
    main()
