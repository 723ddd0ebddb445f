"""Scenes from labelled meshes: Replica (`mesh_semantic.ply` + `info_semantic.json`) and generic PLY/GLB with a class map."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from generation.geometry import split_by_object
from generation.mesh_io import read_mesh_gltf, read_mesh_ply
from tiermap.formats.base import InputError, SchemaError
from tiermap.formats.classes import read_class_map
from tiermap.formats.scene import (
    OBB,
    SCENE_MESH,
    Appearance,
    Lexicon,
    Room,
    Scene,
    SceneMesh,
    SceneObject,
)
from tiermap.formats.sources import read_replica_info

MESH_SUFFIXES = (".ply", ".glb", ".gltf")


def pca_obb(points: np.ndarray) -> OBB:
    """Oriented box from the principal axes of the points (a proper rotation; flat objects get a zero extent)."""
    c = points.mean(0)
    if len(points) < 3:
        R = np.eye(3)
    else:
        _, vecs = np.linalg.eigh(np.cov((points - c).T))
        R = vecs[:, ::-1]
        if np.linalg.det(R) < 0:
            R[:, 2] *= -1
    local = (points - c) @ R
    lo, hi = local.min(0), local.max(0)
    center = c + R @ ((lo + hi) / 2)
    return OBB(center=[round(float(v), 5) for v in center], extent=[round(float(v), 5) for v in hi - lo],
               R=[[float(v) for v in row] for row in R])


def label_name(class_name: str) -> str:
    """A class name as a label: lowercase words (Replica's `wall-plug` and `table_lamp` become `wall plug`, `table lamp`)."""
    return " ".join(class_name.replace("_", " ").replace("-", " ").lower().split())


def scene_from_mesh(name: str, mesh: SceneMesh, classes: dict[int, str], source: str, seed: int = 0) -> Scene:
    """Scene objects (PCA boxes, mean colour, class name as synonym) and one room spanning the mesh bounds."""
    if len(mesh.triangles) == 0:
        raise InputError(f"scene {name!r}: the mesh has no faces")
    objects = []
    for g in split_by_object(mesh):
        if g.id == 0:
            continue
        cls = label_name(classes[g.id])
        color = np.clip(g.vertex_colors.mean(0), 0, 1)
        objects.append(SceneObject(id=g.id, class_name=cls, obb=pca_obb(g.vertices),
                                   appearance=Appearance(color=[round(float(x), 3) for x in color]), lexicon=Lexicon(synonyms=[cls])))
    if not objects:
        raise InputError(f"scene {name!r}: every face has object id 0 (an unlabelled mesh): give faces or vertices object ids")
    lo, hi = mesh.vertices.min(0), mesh.vertices.max(0)
    room = Room(name="room0", kind="mesh", min=[round(float(x), 4) for x in lo], max=[round(float(x), 4) for x in hi])
    return Scene(name=name, source=source, seed=seed, geometry=SCENE_MESH, rooms=[room], objects=objects)  # type: ignore[arg-type]


def to_z_up(mesh: SceneMesh, up: str) -> SceneMesh:
    """Rotate a y-up mesh into tiermap's z-up world ((x, y, z) → (x, -z, y)); z-up meshes are returned as they are."""
    if up == "z":
        return mesh
    if up != "y":
        raise InputError(f"up axis {up!r}: expected 'z' or 'y'")
    v = mesh.vertices
    return replace(mesh, vertices=np.stack([v[:, 0], -v[:, 2], v[:, 1]], axis=1))


def find_replica_files(path: Path) -> tuple[Path, Path]:
    """mesh_semantic.ply and info_semantic.json from a Replica scene folder (`<scene>/` or `<scene>/habitat/`) or the PLY itself."""
    path = Path(path)
    if path.is_file():
        ply = path
    else:
        ply = next((p for p in (path / "mesh_semantic.ply", path / "habitat" / "mesh_semantic.ply") if p.is_file()), path / "habitat" / "mesh_semantic.ply")
    info = ply.parent / "info_semantic.json"
    for p, what in ((ply, "Replica's mesh_semantic.ply"), (info, "Replica's info_semantic.json beside mesh_semantic.ply")):
        if not p.is_file():
            raise InputError(f"{p}: missing, expected {what} (pass --input <replica>/<scene> or its habitat/ folder)")
    return ply, info


def replica_scene(name: str, path: Path, seed: int = 0) -> tuple[Scene, SceneMesh]:
    """A Replica scene: faces keep their object_id if info_semantic.json lists it (else 0, as OpenLex3D's loader)."""
    ply, info_path = find_replica_files(path)
    mesh = read_mesh_ply(ply)
    info = read_replica_info(info_path)
    class_names = {c.id: c.name for c in info.classes}
    classes: dict[int, str] = {}
    for o in info.objects:
        cls = o.class_name or class_names.get(o.class_id if o.class_id is not None else -1)
        if o.id > 0 and cls:
            classes[o.id] = cls
    mesh.object_ids = np.where(np.isin(mesh.object_ids, list(classes)), mesh.object_ids, 0)
    bad = mesh.object_ids > 65535
    if bad.any():
        raise SchemaError(info_path, "objects[].id", "object ids ≤ 65535 (uint16 instance images)", int(mesh.object_ids[bad][0]))
    return scene_from_mesh(name, mesh, classes, "replica", seed), mesh


def default_class_map(mesh_path: Path) -> Path:
    """Where a mesh's class map is looked for: `<stem>.classes.json`, else `classes.json`, beside the mesh."""
    own = mesh_path.with_name(mesh_path.stem + ".classes.json")
    return own if own.is_file() else mesh_path.with_name("classes.json")


def generic_mesh_scene(name: str, path: Path, seed: int = 0, classes_path: Path | None = None, up: str | None = None) -> tuple[Scene, SceneMesh]:
    """A generic PLY/GLB/glTF mesh with per-face or per-vertex object ids and a class map (every id needs a class)."""
    path = Path(path)
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix.lower() in MESH_SUFFIXES)
        if len(found) != 1:
            raise InputError(f"{path}: expected exactly one mesh file ({', '.join(MESH_SUFFIXES)}) in the folder, found {len(found)}")
        path = found[0]
    suffix = path.suffix.lower()
    if suffix not in MESH_SUFFIXES:
        raise InputError(f"{path}: unsupported mesh format {suffix or '(none)'!r}: expected one of {', '.join(MESH_SUFFIXES)}")
    if suffix == ".ply":
        mesh = to_z_up(read_mesh_ply(path), up or "z")
    else:
        mesh = to_z_up(read_mesh_gltf(path), up or "y")  # glTF is y-up by specification
    classes_path = Path(classes_path) if classes_path else default_class_map(path)
    if not classes_path.is_file():
        raise InputError(f"{classes_path}: missing class map for {path.name}, expected JSON {{\"<object id>\": \"class name\"}} (pass --classes)")
    classes = read_class_map(classes_path)
    used = set(np.unique(mesh.object_ids).tolist()) - {0}
    missing = sorted(used - set(classes))
    if missing:
        raise SchemaError(classes_path, str(missing[0]), f"a class name for every object id of {path.name} (missing: {missing[:10]})")
    if any(i > 65535 or i < 0 for i in used):
        raise SchemaError(path, "object_id", "ids in 0..65535 (uint16 instance images)", max(used))
    return scene_from_mesh(name, mesh, classes, "mesh", seed), mesh
