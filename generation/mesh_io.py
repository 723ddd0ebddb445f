"""Reading labelled meshes of scene sources: PLY with per-vertex or per-face ids, glTF/GLB scene graphs."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tiermap.formats.base import SchemaError, read_json
from tiermap.formats.scene import SceneMesh

_PLY_UV = (("s", "t"), ("texture_u", "texture_v"), ("u", "v"))


def triangulate(polygons: Any, path: Path | str, field: str = "face.vertex_indices") -> tuple[np.ndarray, np.ndarray]:
    """Fan-triangulate polygons (a list of index arrays, or an (F, k) array) → (triangles (T, 3), source polygon per triangle)."""
    if isinstance(polygons, np.ndarray) and polygons.dtype != object:
        polys = [polygons.reshape(len(polygons), -1)]
        rows = [np.arange(len(polygons))]
    else:
        sizes = np.fromiter((len(p) for p in polygons), dtype=np.int64, count=len(polygons))
        polys, rows = [], []
        for k in np.unique(sizes):
            idx = np.flatnonzero(sizes == k)
            polys.append(np.stack([np.asarray(polygons[i]) for i in idx]) if k else np.zeros((len(idx), 0), np.int64))
            rows.append(idx)
    tris, src = [], []
    for p, r in zip(polys, rows):
        k = p.shape[1]
        if k < 3:
            raise SchemaError(path, field, "polygons with at least 3 vertices", int(k))
        for j in range(1, k - 1):
            tris.append(p[:, [0, j, j + 1]])
            src.append(r)
    if not tris:
        return np.zeros((0, 3), np.int64), np.zeros(0, np.int64)
    order = np.argsort(np.concatenate(src), kind="stable")
    return np.concatenate(tris).astype(np.int64)[order], np.concatenate(src)[order]


def face_ids_from_vertices(triangles: np.ndarray, vertex_ids: np.ndarray) -> np.ndarray:
    """Per-vertex object ids → per-triangle ids: the id at least two corners share, else the first corner's."""
    a, b, c = (vertex_ids[triangles[:, k]] for k in range(3))
    return np.where((a != b) & (a != c) & (b == c), b, a)


def concat_meshes(parts: list[SceneMesh]) -> SceneMesh:
    """One mesh of many: vertex indices offset; textures joined (the same image object once) and texture indices remapped."""
    offsets = np.cumsum([0] + [len(p.vertices) for p in parts[:-1]])
    out = SceneMesh(np.concatenate([p.vertices for p in parts]), np.concatenate([p.triangles + o for p, o in zip(parts, offsets)]),
                    np.concatenate([p.object_ids for p in parts]), np.concatenate([p.vertex_colors for p in parts]))
    if not any(p.textured for p in parts):
        return out
    slot: dict[int, int] = {}
    uvs, idx = [], []
    for p in parts:
        if not p.textured:
            uvs.append(np.zeros((len(p.vertices), 2)))
            idx.append(np.full(len(p.triangles), -1, np.int64))
            continue
        remap = np.array([slot.setdefault(id(img), len(slot)) for img in p.textures] + [-1], dtype=np.int64)
        for img in p.textures:
            if slot[id(img)] == len(out.textures):
                out.textures.append(img)
        uvs.append(np.asarray(p.uv, dtype=np.float64))
        idx.append(remap[np.asarray(p.texture_index)])  # -1 picks the trailing -1
    out.uv, out.texture_index = np.concatenate(uvs), np.concatenate(idx)
    return out


def _texture_array(g: Any, cache: dict[int, np.ndarray]) -> np.ndarray | None:
    """A textured trimesh geometry's base-colour image as H×W×3 uint8 (the same image object once); None if untextured.

    The base colour factor is ignored, as by the vertex colours sampled from the image, so both agree.
    """
    uv = getattr(g.visual, "uv", None)
    mat = getattr(g.visual, "material", None)
    img = getattr(mat, "baseColorTexture", None) or getattr(mat, "image", None)
    if uv is None or img is None or len(uv) != len(g.vertices):
        return None
    if id(img) not in cache:
        cache[id(img)] = np.asarray(img.convert("RGB"), dtype=np.uint8)
    return cache[id(img)]


def _sample_texture(path: Path, image_name: str, uv: np.ndarray, field: str) -> np.ndarray:
    """Colours (V, 3) in [0, 1] of a texture image at per-vertex uv (OpenGL: v up)."""
    from PIL import Image

    tex_path = path.parent / image_name
    if not tex_path.is_file():
        raise SchemaError(path, field, f"an existing texture image beside the mesh ({tex_path} is missing)", image_name)
    try:
        img = np.asarray(Image.open(tex_path).convert("RGB"), dtype=np.float32) / 255
    except Exception as err:
        raise SchemaError(tex_path, "<file>", f"a readable image ({type(err).__name__})") from None
    h, w = img.shape[:2]
    px = np.clip((np.mod(uv[:, 0], 1.0) * w).astype(int), 0, w - 1)
    py = np.clip(((1 - np.mod(uv[:, 1], 1.0)) * h).astype(int), 0, h - 1)
    return img[py, px]


def read_mesh_ply(path: Path | str, id_field: str | None = "object_id") -> SceneMesh:
    """A PLY mesh with a per-face (Replica `mesh_semantic.ply`) or per-vertex `object_id` → triangles, ids and colours.

    With `id_field=None` the ids come from elsewhere (ScanNet++ segments) and every face gets 0 here.

    Polygons are fan-triangulated; colours come from vertex red/green/blue, else from a `comment TextureFile` image
    sampled at per-vertex texture coordinates (the image and coordinates are kept as the mesh's texture), else grey.
    """
    from plyfile import PlyData

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing PLY mesh file")
    try:
        ply = PlyData.read(str(path), mmap=False)
        names = [e.name for e in ply.elements]
        if "vertex" not in names or "face" not in names:
            raise SchemaError(path, "element", "a mesh with 'vertex' and 'face' elements", names)
        v, f = ply["vertex"], ply["face"]
        vprops, fprops = v.data.dtype.names, f.data.dtype.names
        vertices = np.stack([v["x"], v["y"], v["z"]], axis=1).astype(np.float64)
        faces = f["vertex_indices"] if "vertex_indices" in fprops else f["vertex_index"] if "vertex_index" in fprops else None
    except SchemaError:
        raise
    except Exception as err:
        raise SchemaError(path, "<file>", f"a readable PLY mesh ({type(err).__name__}: {str(err)[:60]})") from None
    if faces is None:
        raise SchemaError(path, "face.vertex_indices", "a list property of vertex indices per face", list(fprops))
    if not np.isfinite(vertices).all():
        raise SchemaError(path, "vertex.x/y/z", "finite coordinates (found NaN/inf)")
    triangles, src = triangulate(faces, path)
    if len(triangles) and (triangles.min() < 0 or triangles.max() >= len(vertices)):
        raise SchemaError(path, "face.vertex_indices", f"indices in [0, {len(vertices)})", int(triangles.max()))
    if id_field is None:
        ids = np.zeros(len(triangles), dtype=np.int64)
    elif id_field in fprops:
        ids = np.asarray(f[id_field], dtype=np.int64)[src]
    elif id_field in vprops:
        ids = face_ids_from_vertices(triangles, np.asarray(v[id_field], dtype=np.int64))
    else:
        raise SchemaError(path, f"face.{id_field}", f"a per-face or per-vertex '{id_field}' property (an unlabelled mesh has none)",
                          f"face: {list(fprops)}, vertex: {list(vprops)}")
    if all(c in vprops for c in ("red", "green", "blue")):
        colors = np.stack([v["red"], v["green"], v["blue"]], axis=1).astype(np.float32)
        colors /= 255.0 if np.asarray(v["red"]).dtype.kind in "ui" else 1.0
    else:
        colors = np.full((len(vertices), 3), 0.6, dtype=np.float32)
        tex = [c.split(None, 1)[1].strip() for c in ply.comments if c.startswith("TextureFile") and len(c.split(None, 1)) == 2]
        if tex:
            uv_names = next((p for p in _PLY_UV if all(n in vprops for n in p)), None)
            if uv_names is None:
                raise SchemaError(path, "vertex.s/t", "per-vertex texture coordinates for 'comment TextureFile'", list(vprops))
            uv = np.stack([v[uv_names[0]], v[uv_names[1]]], axis=1).astype(np.float64)
            colors = _sample_texture(path, tex[0], uv, "comment TextureFile")
            from PIL import Image

            with Image.open(path.parent / tex[0]) as im:  # checked readable by _sample_texture
                image = np.asarray(im.convert("RGB"), dtype=np.uint8)
            return SceneMesh(vertices, triangles, ids, np.clip(colors, 0, 1).astype(np.float32), uv, [image],
                             np.zeros(len(triangles), np.int64))
    return SceneMesh(vertices, triangles, ids, np.clip(colors, 0, 1).astype(np.float32))


def read_mesh_gltf(path: Path | str) -> SceneMesh:
    """A GLB/glTF scene with object ids as a per-vertex `_OBJECT_ID` attribute or a trailing integer in node names.

    Vertices stay in the file's frame (glTF is y-up by specification). Textured primitives keep their uv and base-colour image
    (one texture index each; the same image once) and get vertex colours sampled from it.
    """
    import re

    import trimesh

    path = Path(path)
    if not path.is_file():
        raise SchemaError(path, "<file>", "an existing GLB/glTF file")
    if path.suffix.lower() == ".gltf":
        doc = read_json(path)
        for key in ("images", "buffers"):
            for i, item in enumerate(doc.get(key, []) if isinstance(doc, dict) else []):
                uri = item.get("uri", "") if isinstance(item, dict) else ""
                if uri and not uri.startswith("data:") and not (path.parent / uri).is_file():
                    what = "an existing texture image" if key == "images" else "an existing binary buffer"
                    raise SchemaError(path, f"{key}[{i}].uri", f"{what} beside the file ({path.parent / uri} is missing)", uri)
    try:
        scene = trimesh.load(str(path), force="scene", process=False)
    except Exception as err:
        raise SchemaError(path, "<file>", f"a readable GLB/glTF mesh ({type(err).__name__}: {str(err)[:60]})") from None
    parts: list[SceneMesh] = []
    cache: dict[int, np.ndarray] = {}
    for node in scene.graph.nodes_geometry:
        T, gname = scene.graph[node]
        g = scene.geometry[gname]
        if not isinstance(g, trimesh.Trimesh) or len(g.faces) == 0:
            continue
        verts = trimesh.transform_points(np.asarray(g.vertices, dtype=np.float64), T)
        tris = np.asarray(g.faces, dtype=np.int64)
        attr = getattr(g, "vertex_attributes", {}).get("_OBJECT_ID")
        if attr is not None:
            ids = face_ids_from_vertices(tris, np.rint(np.asarray(attr).reshape(-1)).astype(np.int64))
        else:
            m = re.search(r"(\d+)$", str(node))
            ids = np.full(len(tris), int(m.group(1)) if m else 0, dtype=np.int64)
        visual = g.visual.to_color() if hasattr(g.visual, "to_color") else g.visual  # textures sampled at the vertices
        colors = np.asarray(visual.vertex_colors, dtype=np.float32)[:, :3] / 255
        image = _texture_array(g, cache)
        if image is None:
            parts.append(SceneMesh(verts, tris, ids, colors))
        else:
            parts.append(SceneMesh(verts, tris, ids, colors, np.asarray(g.visual.uv, dtype=np.float64), [image], np.zeros(len(tris), np.int64)))
    if not parts:
        raise SchemaError(path, "meshes", "at least one triangle mesh")
    return concat_meshes(parts)
