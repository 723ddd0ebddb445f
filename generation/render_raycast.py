"""CPU ray-casting renderer (Open3D RaycastingScene): exact depth and instance ids, Lambert shading with shadows.

Depth and instance ids depend only on geometry and pose, so they are identical across lighting
conditions of the same frame; only the RGB shading changes.
"""
from __future__ import annotations

import numpy as np
import open3d as o3d

from generation.geometry import ObjectGeometry, pixel_rays, ray_scene
from tiermap.formats.sequence import CameraParams, Light


class RaycastRenderer:
    """Renders RGB, metric depth and uint16 instance ids for camera-to-world poses (OpenCV axes)."""

    name = "open3d-raycast"
    shades_with_rays = True

    def __init__(self, geometry: list[ObjectGeometry], camera: CameraParams) -> None:
        self.camera = camera
        self.rc, geom_to_obj = ray_scene(geometry)
        self.geom_to_obj = geom_to_obj.astype(np.uint16)  # last slot: misses
        tri_colors: list[np.ndarray] = []
        tri_uvs: list[np.ndarray] = []
        images: list[np.ndarray] = []
        tex_of_geom = []  # texture index per geometry, -1 = vertex colours only
        for g in geometry:
            tri_colors.append(g.vertex_colors[g.triangles].astype(np.float32))
            uv = g.uv if g.uv is not None else np.zeros((len(g.vertices), 2))
            tri_uvs.append(uv[g.triangles].astype(np.float32))
            if g.texture is not None:
                tex_of_geom.append(len(images))
                images.append(g.texture.astype(np.float32) / 255)
            else:
                tex_of_geom.append(-1)
        # All textures share one size (procedural textures), so one stacked lookup serves every textured pixel of a frame.
        self.tex_of_geom = np.asarray(tex_of_geom + [-1], dtype=np.int64)
        self.images = np.stack(images) if images else np.zeros((0, 1, 1, 3), np.float32)
        self.tri_offset = np.concatenate([[0], np.cumsum([len(t) for t in tri_uvs])])
        self.tri_uvs = np.concatenate(tri_uvs) if tri_uvs else np.zeros((0, 3, 2), np.float32)
        self.tri_colors = np.concatenate(tri_colors) if tri_colors else np.zeros((0, 3, 3), np.float32)
        self.dirs_cam = pixel_rays(camera)

    def geometry(self, pose: np.ndarray) -> dict[str, np.ndarray]:
        """Cast primary rays: z-depth (metres, 0 = miss), instance ids, hit points, normals, geometry index."""
        R, t = pose[:3, :3].astype(np.float32), pose[:3, 3].astype(np.float32)
        d = self.dirs_cam @ R.T
        rays = np.concatenate([np.broadcast_to(t, d.shape), d], -1)
        ans = self.rc.cast_rays(o3d.core.Tensor(rays))
        t_hit = ans["t_hit"].numpy()
        hit = np.isfinite(t_hit)
        gid = ans["geometry_ids"].numpy().astype(np.int64)
        gid[~hit] = len(self.geom_to_obj) - 1
        out = {"depth": np.where(hit, t_hit, 0.0), "ids": self.geom_to_obj[gid], "gid": gid, "hit": hit}
        if not self.shades_with_rays:
            return out
        normals = ans["primitive_normals"].numpy()
        # Face the normal towards the camera (box winding is outward, but be safe for any mesh).
        flip = np.sum(normals * d, -1) > 0
        normals[flip] *= -1
        return {**out, "points": t[None, None] + d * np.where(hit, t_hit, 0)[..., None], "normals": normals,
                "prim": ans["primitive_ids"].numpy().astype(np.int64), "bary": ans["primitive_uvs"].numpy()}

    def albedo_image(self, g: dict[str, np.ndarray]) -> np.ndarray:
        """Per-pixel base colour: vertex colours interpolated at the hit, or the texture sampled at the hit's UV."""
        alb = np.zeros((*g["gid"].shape, 3), np.float32)
        hit = g["hit"]
        tri = self.tri_offset[g["gid"][hit]] + g["prim"][hit]
        b = g["bary"][hit]
        w = np.concatenate([1 - b[:, :1] - b[:, 1:], b], axis=1)[..., None]
        alb[hit] = np.sum(self.tri_colors[tri] * w, axis=1)
        tex = self.tex_of_geom[g["gid"]]
        m = tex >= 0
        if m.any():
            uv = self.tri_uvs[self.tri_offset[g["gid"][m]] + g["prim"][m]]
            bm = g["bary"][m]
            p = (1 - bm[:, :1] - bm[:, 1:]) * uv[:, 0] + bm[:, :1] * uv[:, 1] + bm[:, 1:] * uv[:, 2]
            h, w_ = self.images.shape[1:3]
            px = np.clip((p[:, 0] * w_).astype(int), 0, w_ - 1)
            py = np.clip(((1 - p[:, 1]) * h).astype(int), 0, h - 1)
            alb[m] = self.images[tex[m], py, px]
        return alb

    def shade(self, g: dict[str, np.ndarray], pose: np.ndarray, lights: list[Light], progress: float) -> np.ndarray:
        """uint8 RGB image of the cast geometry under the lights that are on at this path progress."""
        hit, pts, nrm = g["hit"], g["points"], g["normals"]
        light = np.zeros(pts.shape, dtype=np.float32)
        for L in lights:
            if not L.is_on(progress):
                continue
            col = np.asarray(L.color, dtype=np.float32) * L.intensity
            if L.type == "ambient":
                light += col
                continue
            pos = pose[:3, 3] if L.attached_to_camera or L.position is None else np.asarray(L.position)
            to_l = pos[None, None].astype(np.float32) - pts
            dist = np.linalg.norm(to_l, axis=-1) + 1e-6
            ldir = to_l / dist[..., None]
            lambert = np.clip(np.sum(nrm * ldir, -1), 0, None) / np.maximum(dist, 0.5) ** 2
            if L.type == "spot":
                axis = pose[:3, 2] if L.attached_to_camera else np.array([0, 0, -1.0])
                lambert *= np.clip((np.sum(-ldir * axis, -1) - 0.8) / 0.15, 0, 1)
            if not L.attached_to_camera:
                origin = pts + nrm * 1e-3
                rays = np.concatenate([origin, ldir], -1)[hit]
                t = self.rc.cast_rays(o3d.core.Tensor(rays.astype(np.float32)))["t_hit"].numpy()
                shadow = np.ones(hit.shape, dtype=np.float32)
                shadow[hit] = (t >= dist[hit] - 2e-3).astype(np.float32)
                lambert *= shadow
            light += lambert[..., None] * col
        rgb = self.albedo_image(g) * light
        rgb[~hit] = 0
        return (np.clip(rgb, 0, 1) ** (1 / 2.2) * 255 + 0.5).astype(np.uint8)

    def close(self) -> None:
        """Nothing to release."""
