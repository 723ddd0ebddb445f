"""HM3D-Semantics v0.2 scenes: `<id>.glb` (textured), `<id>.semantic.glb` (object colours), `<id>.semantic.txt` (the table).

Semantics follow habitat-sim's HM3D loader (`SemanticScene::buildHM3DHouse`): each row's hex colour names one object;
black (000000) is habitat-sim's built-in object 0 "Unknown", i.e. unannotated surface, which becomes id 0 here. A
colour of the semantic mesh that is neither black nor in the table is an error. Regions become rooms.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from generation.mesh_io import face_ids_from_vertices, read_mesh_gltf
from generation.mesh_scene import scene_from_mesh, to_z_up
from tiermap.formats.base import InputError, SchemaError
from tiermap.formats.hm3d import HM3DObject, read_semantic_txt
from tiermap.formats.scene import Room, Scene, SceneMesh

# Room kinds guessed from the categories of a region's objects (the first kind with a matching category wins).
ROOM_KINDS = (
    ("bathroom", ("toilet", "shower", "bathtub", "bath")),
    ("kitchen", ("stove", "oven", "refrigerator", "fridge", "dishwasher", "kitchen cabinet", "kitchen counter")),
    ("bedroom", ("bed",)),
    ("dining room", ("dining table", "dining chair")),
    ("living room", ("sofa", "couch", "tv", "television", "fireplace", "armchair")),
    ("office", ("desk", "office chair", "computer", "monitor")),
    ("laundry room", ("washing machine", "dryer")),
)


def room_kind(categories: list[str]) -> str:
    """A room kind from its objects' categories (whole-word match, e.g. `bed` but not `bedside table`), else "region"."""
    padded = [f" {c.lower()} " for c in categories]
    for kind, words in ROOM_KINDS:
        if any(f" {w} " in c for w in words for c in padded):
            return kind
    return "region"


def find_hm3d_files(path: Path) -> tuple[Path, Path, Path]:
    """`<id>.glb`, `<id>.semantic.glb`, `<id>.semantic.txt` of an HM3D scene folder such as `00800-TEEsavR23oF/`."""
    folder = path if path.is_dir() else path.parent
    stem = folder.name.split("-", 1)[1] if "-" in folder.name else ""
    if not stem or not (folder / f"{stem}.semantic.txt").exists():
        found = sorted(p.name[: -len(".semantic.txt")] for p in folder.glob("*.semantic.txt"))
        found = found or sorted(p.name[: -len(".semantic.glb")] for p in folder.glob("*.semantic.glb"))
        if len(found) > 1:
            raise InputError(f"{folder}: several HM3D scenes ({', '.join(found)}), expected one <id>.semantic.txt per folder")
        stem = found[0] if found else stem or folder.name
    files = (folder / f"{stem}.glb", folder / f"{stem}.semantic.glb", folder / f"{stem}.semantic.txt")
    what = ("HM3D's textured mesh (hm3d-*-glb-v0.2)", "HM3D's semantic mesh (hm3d-*-semantic-annots-v0.2)",
            "HM3D's object table (hm3d-*-semantic-annots-v0.2)")
    for p, w in zip(files, what):
        if not p.is_file():
            raise InputError(f"{p}: missing, expected {w} in the scene folder (pass --input <hm3d>/<split>/<nnnnn-id>)")
    return files


def _texture_face_colours(g, tris: np.ndarray) -> np.ndarray | None:  # type: ignore[no-untyped-def]
    """Per-face 0xRRGGBB of a textured geometry, sampled at each face's uv centroid (nearest texel); None if untextured."""
    uv = getattr(g.visual, "uv", None)
    mat = getattr(g.visual, "material", None)
    img = getattr(mat, "baseColorTexture", None) or getattr(mat, "image", None)
    if uv is None or img is None:
        return None
    rgb = np.asarray(img.convert("RGB"), dtype=np.int64)
    h, w = rgb.shape[:2]
    c = np.asarray(uv, dtype=np.float64)[tris].mean(1)
    px = np.clip((np.mod(c[:, 0], 1.0) * w).astype(int), 0, w - 1)
    py = np.clip(((1 - np.mod(c[:, 1], 1.0)) * h).astype(int), 0, h - 1)
    t = rgb[py, px]
    return (t[:, 0] << 16) | (t[:, 1] << 8) | t[:, 2]


def read_semantic_glb(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(vertices, triangles, per-face colour or -1, per-vertex colour or -1) of a semantic GLB, in the file's frame.

    HM3D's semantic meshes carry object colours as vertex colours or as a texture (habitat-sim reads both): vertex
    colours are kept per vertex, textures are sampled per face.
    """
    import trimesh

    try:
        scene = trimesh.load(str(path), force="scene", process=False)
    except Exception as err:
        raise SchemaError(path, "<file>", f"a readable GLB ({type(err).__name__}: {str(err)[:60]})") from None
    vs, ts, fc, vc, off = [], [], [], [], 0
    for node in scene.graph.nodes_geometry:
        T, gname = scene.graph[node]
        g = scene.geometry[gname]
        if not isinstance(g, trimesh.Trimesh) or len(g.faces) == 0:
            continue
        tris = np.asarray(g.faces, dtype=np.int64)
        faces = _texture_face_colours(g, tris)
        if faces is None:
            attr = getattr(g, "vertex_attributes", {}).get("color")  # COLOR_0 kept aside by an untextured TextureVisuals
            vis = g.visual
            rgb = np.asarray(attr if attr is not None else vis.vertex_colors if hasattr(vis, "vertex_colors") else vis.to_color().vertex_colors)
            rgb = np.rint(rgb * 255).astype(np.int64)[:, :3] if rgb.dtype.kind == "f" else rgb.astype(np.int64)[:, :3]
            vc.append((rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2])
            fc.append(np.full(len(tris), -1))
        else:
            vc.append(np.full(len(g.vertices), -1))
            fc.append(faces)
        vs.append(trimesh.transform_points(np.asarray(g.vertices, dtype=np.float64), T))
        ts.append(tris + off)
        off += len(g.vertices)
    if not vs:
        raise SchemaError(path, "meshes", "at least one triangle mesh")
    return np.concatenate(vs), np.concatenate(ts), np.concatenate(fc), np.concatenate(vc)


def colour_ids(colours: np.ndarray, rows: list[HM3DObject], txt: Path, glb: Path) -> np.ndarray:
    """Object ids of 0xRRGGBB colours by the table; black is 0 (unannotated); any other colour is a SchemaError."""
    table = np.array(sorted((r.color, r.id) for r in rows), dtype=np.int64).reshape(-1, 2)
    pos = np.clip(np.searchsorted(table[:, 0], colours), 0, len(table) - 1)
    known = table[pos, 0] == colours
    bad = np.unique(colours[~known & (colours != 0)])
    if len(bad):
        raise SchemaError(txt, "hex_colour", f"a row for every colour of {glb.name} (only black 000000 is unannotated; "
                          f"{len(bad)} colour(s) unlisted)", f"{int(bad[0]):06x}")
    return np.where(known, table[pos, 1], 0)


def region_rooms(mesh: SceneMesh, rows: list[HM3DObject], classes: dict[int, str]) -> tuple[list[Room], dict[int, str]]:
    """A room per region (regions ≥ 0 with faces): the bounds of its objects' faces; and each object's room name."""
    region = {r.id: r.region for r in rows if r.region >= 0}
    keep = np.isin(mesh.object_ids, list(region))
    if not keep.any():
        return [], {}
    ids = mesh.object_ids[keep]
    corners = mesh.vertices[mesh.triangles[keep]]
    reg = np.array([region[int(i)] for i in np.unique(ids)])[np.unique(ids, return_inverse=True)[1]]
    order = np.argsort(reg, kind="stable")
    regs, starts = np.unique(reg[order], return_index=True)
    lo = np.minimum.reduceat(corners.min(1)[order], starts)
    hi = np.maximum.reduceat(corners.max(1)[order], starts)
    rooms = []
    for k, a, b in zip(regs, lo, hi):
        cats = sorted({classes[i] for i, r in region.items() if r == k and i in classes})
        rooms.append(Room(name=f"region_{k}", kind=room_kind(cats), min=[round(float(x), 4) for x in a], max=[round(float(x), 4) for x in b]))
    return rooms, {i: f"region_{r}" for i, r in region.items()}


def hm3d_scene(name: str, path: Path, seed: int = 0) -> tuple[Scene, SceneMesh]:
    """An HM3D scene: geometry and per-face ids from the semantic mesh, colours from the textured mesh, regions as rooms.

    HM3D's semantic and textured meshes are separate geometry, so colours are copied to the semantic vertices (nearest
    textured vertex); only when both meshes have the same vertices and faces do the texture's uv and images carry over.
    """
    glb, sem_glb, txt = find_hm3d_files(Path(path))
    rows = read_semantic_txt(txt)
    vertices, tris, face_col, vert_col = read_semantic_glb(sem_glb)
    per_vertex = face_col < 0
    ids = np.zeros(len(tris), dtype=np.int64)
    if (~per_vertex).any():
        ids[~per_vertex] = colour_ids(face_col[~per_vertex], rows, txt, sem_glb)
    if per_vertex.any():
        used = np.unique(tris[per_vertex])
        vid = np.zeros(len(vertices), dtype=np.int64)
        vid[used] = colour_ids(vert_col[used], rows, txt, sem_glb)
        ids[per_vertex] = face_ids_from_vertices(tris[per_vertex], vid)
    textured = read_mesh_gltf(glb)
    shared = len(textured.vertices) == len(vertices) and np.allclose(textured.vertices, vertices, atol=1e-6)
    if shared:
        colours = textured.vertex_colors  # the two meshes share vertices
    else:
        from scipy.spatial import cKDTree

        colours = textured.vertex_colors[cKDTree(textured.vertices).query(vertices)[1]]
    mesh = SceneMesh(vertices, tris, ids, colours.astype(np.float32))
    if shared and textured.textured and np.array_equal(textured.triangles, tris):
        # Same vertices and faces: the texture's uv and per-face image carry over, so renders keep per-texel detail.
        mesh.uv, mesh.textures, mesh.texture_index = textured.uv, textured.textures, textured.texture_index
    mesh = to_z_up(mesh, "y")  # glTF is y-up
    classes = {r.id: r.category for r in rows}
    scene = scene_from_mesh(name, mesh, classes, "hm3d", seed)
    rooms, room_of = region_rooms(mesh, rows, classes)
    if rooms:
        scene.rooms = rooms
        for o in scene.objects:
            o.room = room_of.get(o.id)
    return scene, mesh
