"""Default renderer: pyrender through headless Mesa EGL for RGB; exact depth and ids from ray casting.

Depth and instance ids come from the shared ray caster so they are exact and identical across lighting
conditions; pyrender only shades the RGB image (PBR materials, spot-light shadows).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from generation.geometry import ObjectGeometry, RendererUnavailableError, texture_pieces
from generation.render_raycast import RaycastRenderer
from tiermap.formats.sequence import CameraParams, Light

# pyrender's point/spot intensities are in candela: scale ours (unit radiance at 1 m) to a similar exposure.
CANDELA_PER_UNIT = 6.0
_CV_TO_GL = np.diag([1.0, -1.0, -1.0, 1.0])


def _ordered_scene(pyrender):  # type: ignore[no-untyped-def]
    """A pyrender Scene whose mesh nodes iterate in insertion (name) order, not set order.

    pyrender draws meshes sorted by node distance, and every node here sits at the origin, so ties keep the iteration
    order: with a set that changes between runs and so do a few pixels where faces meet; named order keeps renders
    byte-identical.
    """

    class OrderedScene(pyrender.Scene):
        @property
        def mesh_nodes(self):  # type: ignore[no-untyped-def]
            return sorted(self._mesh_nodes, key=lambda n: n.name or "")

    return OrderedScene


@contextmanager
def _samples(n: int | None) -> Iterator[None]:
    """Render with n samples per pixel instead of pyrender's fixed 4x multisampling (None: pyrender's default).

    pyrender has no option for it: its framebuffer set-up (on the first render) calls this module-level GL function.
    Without multisampling llvmpipe shades a quarter of the fragments (about twice the frame rate; edges alias).
    """
    import pyrender.renderer as R

    if n is None:
        yield
        return
    orig = R.glRenderbufferStorageMultisample
    R.glRenderbufferStorageMultisample = lambda target, samples, *rest: orig(target, n, *rest)
    try:
        yield
    finally:
        R.glRenderbufferStorageMultisample = orig


class PyrenderRenderer(RaycastRenderer):
    """pyrender RGB (Mesa EGL, CPU) with ray-cast depth and instance ids."""

    name = "pyrender-egl"
    shades_with_rays = False  # pyrender shades; rays only give depth and ids

    def __init__(self, geometry: list[ObjectGeometry], camera: CameraParams, antialias: bool = True) -> None:
        super().__init__(geometry, camera)
        self.antialias = antialias
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
        try:
            import pyrender
            import trimesh
        except Exception as err:  # missing EGL libraries surface here
            raise RendererUnavailableError(f"pyrender renderer unavailable ({type(err).__name__}: {err}); install Debian "
                                           "libegl1 libegl-mesa0 libgl1-mesa-dri libgbm1 (make setup) or use --renderer raycast") from None
        self._pr = pyrender
        self.scene = _ordered_scene(pyrender)(bg_color=[0, 0, 0, 0], ambient_light=[0, 0, 0])
        from PIL import Image

        self.mesh_nodes: list[object] = []
        corners: list[np.ndarray] = []  # world bounding-box corners per mesh node, for frustum culling
        shared: dict[int, object] = {}  # one material (and GL texture) per mesh-scene image, shared by every piece using it
        for i, piece, g, mesh_tex in ((i, k, p, o.textures is not None) for i, o in enumerate(geometry) for k, p in enumerate(texture_pieces(o))):
            tm = trimesh.Trimesh(g.vertices, g.triangles, process=False)
            if g.texture is not None:
                img = Image.fromarray(g.texture)
                tm.visual = trimesh.visual.TextureVisuals(uv=g.uv, image=img)
                mat = shared.get(id(g.texture)) if mesh_tex else None
                if mat is None:
                    mat = pyrender.MetallicRoughnessMaterial(baseColorTexture=pyrender.Texture(source=img, source_channels="RGB"),
                                                             metallicFactor=0.0, roughnessFactor=0.9)
                    if mesh_tex:
                        shared[id(g.texture)] = mat
            elif np.ptp(g.vertex_colors, axis=0).max() == 0:
                mat = pyrender.MetallicRoughnessMaterial(baseColorFactor=[*g.vertex_colors[0].tolist(), 1.0], metallicFactor=0.0, roughnessFactor=0.9)
            else:
                tm.visual = trimesh.visual.ColorVisuals(tm, vertex_colors=(np.clip(g.vertex_colors, 0, 1) * 255 + 0.5).astype(np.uint8))
                mat = pyrender.MetallicRoughnessMaterial(baseColorFactor=[1.0, 1.0, 1.0, 1.0], metallicFactor=0.0, roughnessFactor=0.9)
            node = self.scene.add(pyrender.Mesh.from_trimesh(tm, material=mat, smooth=False), name=f"mesh{i:08d}" + (f".{piece}" if piece else ""))
            self.mesh_nodes.append(node)
            lo, hi = g.vertices.min(0), g.vertices.max(0)
            corners.append(np.array([[x, y, z, 1.0] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]))
        self.corners = np.stack(corners) if corners else np.zeros((0, 8, 4))
        # OpenGL puts pixel u's centre at u + 0.5 where OpenCV (camera_params.json) puts it at u.
        self.cam_node = self.scene.add(pyrender.IntrinsicsCamera(camera.fx, camera.fy, camera.cx + 0.5, camera.cy + 0.5, znear=0.05, zfar=50.0))
        self.light_nodes: dict[str, object] = {}
        try:
            self.renderer = pyrender.OffscreenRenderer(camera.w, camera.h)
        except Exception as err:
            raise RendererUnavailableError(f"pyrender could not open a headless EGL context ({type(err).__name__}: {err}); "
                                           "install Debian libegl1 libegl-mesa0 libgl1-mesa-dri libgbm1 or use --renderer raycast") from None

    def _node(self, L: Light):  # type: ignore[no-untyped-def]
        if L.name not in self.light_nodes:
            pr = self._pr
            if L.type == "spot":
                light = pr.SpotLight(color=L.color, intensity=0.0, innerConeAngle=0.35, outerConeAngle=0.6)
            elif L.type == "directional":
                light = pr.DirectionalLight(color=L.color, intensity=0.0)
            else:
                light = pr.PointLight(color=L.color, intensity=0.0)
            self.light_nodes[L.name] = self.scene.add(light)
        return self.light_nodes[L.name]

    def shade(self, g: dict[str, np.ndarray], pose: np.ndarray, lights: list[Light], progress: float) -> np.ndarray:
        """uint8 RGB from pyrender under the lights that are on at this path progress."""
        gl_pose = pose @ _CV_TO_GL
        self.scene.set_pose(self.cam_node, gl_pose)
        ambient = np.zeros(3)
        for L in lights:
            on = L.is_on(progress)
            if L.type == "ambient":
                ambient += np.asarray(L.color) * L.intensity * on
                continue
            node = self._node(L)
            node.light.intensity = float(L.intensity * CANDELA_PER_UNIT * on)
            if L.attached_to_camera or L.position is None:
                self.scene.set_pose(node, gl_pose)
            else:
                T = np.eye(4)
                T[:3, 3] = L.position
                self.scene.set_pose(node, T)
        self.scene.ambient_light = ambient
        F = self._pr.RenderFlags
        # A light at the camera's centre casts every shadow behind what the camera sees, so its shadow pass is skipped.
        spot_on = any(L.type == "spot" and not L.attached_to_camera and L.is_on(progress) for L in lights)
        self._cull(pose, enabled=not spot_on)
        # RGBA skips pyrender's depth read-back (depth comes from the ray caster); shadow maps only for a scene spot.
        with _samples(None if self.antialias else 0):
            out = self.renderer.render(self.scene, flags=F.RGBA | (F.SHADOWS_SPOT if spot_on else F.NONE))
        rgb = out[0] if isinstance(out, tuple) else out
        return np.ascontiguousarray(rgb[..., :3])

    def _cull(self, pose: np.ndarray, enabled: bool) -> None:
        """Hide meshes whose bounding box lies wholly outside the view frustum (they add no pixel without shadows).

        A box is culled when all 8 corners are behind the near plane or beyond one image border (1 px margin), so the
        drawn pixels are the same as drawing everything; llvmpipe then rasterises only what the camera can see.
        """
        if not enabled or not len(self.corners):
            for n in self.mesh_nodes:
                n.mesh.is_visible = True
            return
        c = self.corners @ np.linalg.inv(pose).T  # camera frame (OpenCV axes), N x 8 x 4
        x, y, z = c[..., 0], c[..., 1], c[..., 2]
        cam = self.camera
        cx, cy = cam.cx + 0.5, cam.cy + 0.5  # GL pixel-edge coordinates: the image spans [0, w] x [0, h]
        out = ((z < 0.05).all(1) | (cam.fx * x + (cx + 1) * z < 0).all(1) | (cam.fx * x + (cx - cam.w - 1) * z > 0).all(1)
               | (cam.fy * y + (cy + 1) * z < 0).all(1) | (cam.fy * y + (cy - cam.h - 1) * z > 0).all(1))
        for n, hide in zip(self.mesh_nodes, out.tolist(), strict=True):
            n.mesh.is_visible = not hide

    def close(self) -> None:
        """Release the EGL context."""
        self.renderer.delete()

