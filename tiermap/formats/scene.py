"""scene.json and the scene's labelled mesh (mesh.ply): objects, boxes, rooms, units in metres, z up."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from tiermap import atomic
from tiermap.formats.base import Model, SchemaError, Vec3, read_model
from tiermap.formats.sequence import Light

SCENE_FILE = "scene.json"

SCENE_SOURCES = ("procedural", "replica", "habitat", "mesh", "replicacad", "hm3d", "scannetpp")


class OBB(Model):
    """Oriented box: centre, full extent along its axes, rotation whose columns are the axes."""

    center: Vec3
    extent: Annotated[list[Annotated[float, Field(ge=0, allow_inf_nan=False)]], Field(min_length=3, max_length=3)]
    R: Annotated[list[Vec3], Field(min_length=3, max_length=3)]

    @field_validator("R")
    @classmethod
    def _rotation(cls, v: list[list[float]]) -> list[list[float]]:
        r = np.asarray(v, dtype=float)
        if not np.allclose(r @ r.T, np.eye(3), atol=1e-5) or np.linalg.det(r) < 0:
            raise ValueError("a proper rotation matrix (orthonormal, det +1)")
        return v


class Lexicon(Model):
    """Plausible names of an object per category (drives simulated annotators and the demo baseline)."""

    synonyms: list[str] = []
    depictions: list[str] = []
    vis_sim: list[str] = []


class Appearance(Model):
    """Base colour and an optional procedural texture (a pattern, a motif, or `words` with `text`)."""

    color: Annotated[list[Annotated[float, Field(ge=0, le=1)]], Field(min_length=3, max_length=3)] = [0.6, 0.6, 0.6]
    texture: str | None = None
    text: str | None = None
    material: str | None = None


class SceneObject(Model):
    """One object of a scene; `id` is the instance id written to instance images (uint16, 0 = none).

    `parts` are world-space boxes the object is built from (none: the OBB itself is the geometry).
    """

    id: Annotated[int, Field(ge=1, le=65535)]
    class_name: Annotated[str, Field(min_length=1)]
    mesh: str | None = None
    obb: OBB
    parts: list[OBB] = []
    appearance: Appearance = Appearance()
    lexicon: Lexicon = Lexicon()
    room: str | None = None
    parent: int | None = None


class Room(Model):
    """An axis-aligned room footprint in world metres."""

    name: str
    kind: str
    min: Vec3
    max: Vec3


class Scene(Model):
    """scene.json: where a scene comes from and what is in it (metres, z-up world)."""

    name: Annotated[str, Field(min_length=1)]
    source: Literal["procedural", "replica", "habitat", "mesh", "replicacad", "hm3d", "scannetpp"]
    seed: int = 0
    units: Literal["m"] = "m"
    up: Literal["z"] = "z"
    geometry: str | None = None
    habitat_scene: str | None = None
    rooms: list[Room] = []
    objects: list[SceneObject]
    lights: list[Light] | None = None
    """The scene's own lights (world z-up; e.g. a ReplicaCAD scene's default lighting); conditions with `scene_lights` use them."""

    @model_validator(mode="after")
    def _unique_ids(self) -> Scene:
        ids = [o.id for o in self.objects]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"unique object ids (duplicated: {dup})")
        return self

    def object(self, object_id: int) -> SceneObject:
        """The object with this id."""
        for o in self.objects:
            if o.id == object_id:
                return o
        raise KeyError(f"scene {self.name!r} has no object id {object_id}")


def read_scene(path: Path | str) -> Scene:
    """scene.json."""
    return read_model(Scene, path)


SCENE_MESH = "mesh.ply"
"""The normalised geometry of a mesh-sourced scene, beside its scene.json."""


MESH_TEXTURES = "mesh_textures"
"""Folder beside mesh.ply holding its texture images (000.png, 001.png, ...), listed as `comment TextureFile` lines."""


@dataclass
class SceneMesh:
    """A labelled triangle mesh: vertices (V, 3), triangles (F, 3), object id per triangle (0 = unlabelled), colours (V, 3) in [0, 1].

    Optional textures: per-vertex `uv` (V, 2; OpenGL, v up), `textures` (H×W×3 uint8 images) and `texture_index` per
    triangle (-1 = untextured). Vertex colours stay (sampled from the textures) for every consumer that ignores textures.
    """

    vertices: np.ndarray
    triangles: np.ndarray
    object_ids: np.ndarray
    vertex_colors: np.ndarray
    uv: np.ndarray | None = None
    textures: list[np.ndarray] = field(default_factory=list)
    texture_index: np.ndarray | None = None

    @property
    def textured(self) -> bool:
        """Whether any triangle carries a texture."""
        return bool(self.textures) and self.uv is not None and self.texture_index is not None and bool((self.texture_index >= 0).any())


def _png(img: np.ndarray) -> bytes:
    """Deterministic PNG bytes of an H×W×3 uint8 image (no timestamps or metadata)."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(img, dtype=np.uint8)[..., :3], "RGB").save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def write_scene_mesh(path: Path | str, mesh: SceneMesh) -> Path:
    """Binary PLY: float x, y, z and uint8 red, green, blue per vertex; vertex_indices and int object_id per triangle.

    A textured mesh adds float s, t per vertex, int texture_index per triangle and `comment TextureFile mesh_textures/NNN.png`
    lines, the images written as PNG beside it first; an untextured mesh is written byte for byte as before.
    """
    import io

    from plyfile import PlyData, PlyElement

    path = Path(path)
    textured = mesh.textured
    vdt = [("x", "f4"), ("y", "f4"), ("z", "f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")] + ([("s", "f4"), ("t", "f4")] if textured else [])
    va = np.empty(len(mesh.vertices), dtype=vdt)
    va["x"], va["y"], va["z"] = np.asarray(mesh.vertices, dtype=np.float32).T
    rgb = (np.clip(mesh.vertex_colors, 0, 1) * 255 + 0.5).astype(np.uint8)
    va["red"], va["green"], va["blue"] = rgb.T
    fdt = [("vertex_indices", "i4", (3,)), ("object_id", "i4")] + ([("texture_index", "i4")] if textured else [])
    fa = np.empty(len(mesh.triangles), dtype=fdt)
    fa["vertex_indices"] = mesh.triangles.astype(np.int32)
    fa["object_id"] = mesh.object_ids.astype(np.int32)
    comments: list[str] = []
    if textured:
        va["s"], va["t"] = np.asarray(mesh.uv, dtype=np.float32).T
        fa["texture_index"] = np.asarray(mesh.texture_index).astype(np.int32)
        for k, img in enumerate(mesh.textures):
            name = f"{MESH_TEXTURES}/{k:03d}.png"
            atomic.write_bytes(path.parent / name, _png(img))
            comments.append(f"TextureFile {name}")
    buf = io.BytesIO()
    PlyData([PlyElement.describe(va, "vertex"), PlyElement.describe(fa, "face")], comments=comments).write(buf)
    return atomic.write_bytes(path, buf.getvalue())


def _read_textures(path: Path, names: list[str]) -> list[np.ndarray]:
    """The texture images listed in a scene mesh's header, as H×W×3 uint8."""
    from PIL import Image

    out = []
    for k, name in enumerate(names):
        tex = path.parent / name
        if not tex.is_file():
            raise SchemaError(path, f"comment TextureFile[{k}]", f"an existing texture image beside the mesh ({tex} is missing)", name)
        try:
            with Image.open(tex) as im:
                out.append(np.asarray(im.convert("RGB"), dtype=np.uint8))
        except Exception as err:
            raise SchemaError(tex, "<file>", f"a readable PNG image ({type(err).__name__})") from None
    return out


def read_scene_mesh(path: Path | str) -> SceneMesh:
    """The normalised mesh of a mesh-sourced scene (written by `write_scene_mesh`), with its textures if any, checked."""
    from plyfile import PlyData

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing PLY mesh file")
    try:
        ply = PlyData.read(str(path), mmap=False)
        v, f = ply["vertex"], ply["face"]
        vertices = np.stack([v["x"], v["y"], v["z"]], axis=1).astype(np.float64)
        colors = np.stack([v["red"], v["green"], v["blue"]], axis=1).astype(np.float32) / 255.0
        triangles = np.stack(list(f["vertex_indices"])).astype(np.int64).reshape(-1, 3) if f.count else np.zeros((0, 3), np.int64)
        ids = np.asarray(f["object_id"], dtype=np.int64)
    except (KeyError, ValueError) as err:
        raise SchemaError(path, "<file>", f"a tiermap scene mesh (vertex x y z red green blue; face vertex_indices object_id) ({err})") from None
    if not np.isfinite(vertices).all():
        raise SchemaError(path, "vertex.x/y/z", "finite coordinates (found NaN/inf)")
    if len(triangles) and (triangles.min() < 0 or triangles.max() >= len(vertices)):
        raise SchemaError(path, "face.vertex_indices", f"indices in [0, {len(vertices)})", int(triangles.max()))
    names = [c.split(None, 1)[1].strip() for c in ply.comments if c.startswith("TextureFile ") and len(c.split(None, 1)) == 2]
    if not names:
        return SceneMesh(vertices, triangles, ids, colors)
    vprops, fprops = v.data.dtype.names or (), f.data.dtype.names or ()
    if "s" not in vprops or "t" not in vprops:
        raise SchemaError(path, "vertex.s/t", "per-vertex texture coordinates for 'comment TextureFile'", list(vprops))
    if "texture_index" not in fprops:
        raise SchemaError(path, "face.texture_index", "a texture index per face for 'comment TextureFile'", list(fprops))
    uv = np.stack([v["s"], v["t"]], axis=1).astype(np.float64)
    tex_idx = np.asarray(f["texture_index"], dtype=np.int64)
    if not np.isfinite(uv).all():
        raise SchemaError(path, "vertex.s/t", "finite texture coordinates (found NaN/inf)")
    bad = tex_idx[(tex_idx < -1) | (tex_idx >= len(names))]
    if len(bad):
        raise SchemaError(path, "face.texture_index", f"-1 (untextured) or an index in [0, {len(names)})", int(bad[0]))
    return SceneMesh(vertices, triangles, ids, colors, uv, _read_textures(path, names), tex_idx)
