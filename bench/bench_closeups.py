"""Close-up views for 1,000 objects (procedural scenes, seeds 0, 1, ...): scoring ray-cast views per second, full-render
frames per second at the default 512 px, and the total time, as `tiermap generate closeups` does it (files not written).

    python bench/bench_closeups.py [n_objects] [renderer]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
import yaml

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

from generation.closeup import CloseupParams, Planner, _png  # noqa: E402
from generation.conditions import load_condition, resolve_lights  # noqa: E402
from generation.geometry import scene_geometry  # noqa: E402
from generation.procedural import generate_scene  # noqa: E402
from generation.sequence import make_renderer  # noqa: E402

ROOMS = ["living room", "office", "bedroom", "kitchen", "meeting room"]


def main(n_objects: int = 1000, renderer_name: str = "pyrender") -> None:
    """Plan and render close-ups until n_objects objects are done; print the figures."""
    params = yaml.safe_load(open("params.yaml"))
    cp = CloseupParams.from_dict(params["annotation"]["closeups"])
    done = views = renders = pixels_min = 0
    t_plan = t_render = t_encode = t_setup = 0.0
    t0 = time.perf_counter()
    seed = 0
    pixels_min = 10**9
    while done < n_objects:
        t = time.perf_counter()
        scene = generate_scene(f"bench{seed}", seed, ROOMS)
        lights = resolve_lights(load_condition(params["reference_condition"], params["lighting"]), scene)
        geometry = scene_geometry(scene, ".")
        planner = Planner(scene, geometry, cp)
        renderer = make_renderer(renderer_name, geometry, cp.camera())
        t_setup += time.perf_counter() - t
        for o in scene.objects[: n_objects - done]:
            t = time.perf_counter()
            plan = planner.plan(o)
            t_plan += time.perf_counter() - t
            views += len(plan.status)
            for i in plan.best(cp.keep):
                t = time.perf_counter()
                g = renderer.geometry(plan.poses[i])
                rgb = renderer.shade(g, plan.poses[i], lights, 0.0)
                t_render += time.perf_counter() - t
                t = time.perf_counter()
                _png(rgb), _png(g["ids"].astype(np.uint16))
                t_encode += time.perf_counter() - t
                renders += 1
                pixels_min = min(pixels_min, int((g["ids"] == o.id).sum()))
            done += 1
        renderer.close()
        seed += 1
    total = time.perf_counter() - t0
    print(f"close-ups of {done} objects in {seed} procedural scenes ({', '.join(ROOMS)}), {cp.size}x{cp.size} px, renderer {renderer_name}")
    print(f"  scoring ray caster: {views} candidate views in {t_plan:.1f} s = {views / t_plan:.0f} views/s "
          f"({cp.score_size}x{cp.score_size} id casts, free-space tests included)")
    print(f"  full renderer: {renders} frames in {t_render:.1f} s = {renders / t_render:.2f} frames/s (shaded RGB + exact ids)")
    print(f"  PNG encoding {t_encode:.1f} s, scene set-up {t_setup:.1f} s; smallest object in a close-up: {pixels_min} px")
    print(f"  total {total:.1f} s ({total / done * 1000:.0f} ms per object)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, sys.argv[2] if len(sys.argv) > 2 else "pyrender")
