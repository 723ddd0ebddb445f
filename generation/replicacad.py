"""ReplicaCAD scenes (habitat-sim scene datasets) as one labelled mesh: the stage, rigid objects, articulated URDFs, lights.

The stage (walls, floor, ceiling, fixed fittings) is one render asset without per-part labels, so it gets object id 0
(unlabelled structure: rendered, walked around, not in the GT). Every object instance and every articulated object
gets its own id, from 1 in file order (rigid objects first, then articulated ones). Classes come from the template
name through the shipped class map `generation/data/replicacad_classes.json` (overridable with --classes), else from
the name itself (`frl_apartment_chair_01` → `chair`). habitat is y-up; the mesh and the lights end up in tiermap's z-up.
"""
from __future__ import annotations

import glob
import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from generation.mesh_io import concat_meshes, read_mesh_gltf
from generation.mesh_scene import label_name, scene_from_mesh, to_z_up
from tiermap.formats.base import InputError, SchemaError
from tiermap.formats.replicacad import (
    ObjectInstance,
    SceneDatasetConfig,
    Urdf,
    read_lighting_config,
    read_object_config,
    read_scene_dataset_config,
    read_scene_instance,
    read_stage_config,
    read_template_class_map,
    read_urdf,
)
from tiermap.formats.scene import Scene, SceneMesh
from tiermap.formats.sequence import Light

CLASS_MAP = Path(__file__).with_name("data") / "replicacad_classes.json"
DEFAULT_DIRS = {"stages": ["configs/stages"], "objects": ["configs/objects"], "articulated_objects": ["urdf/*/"],
                "light_setups": ["configs/lighting"]}
SUFFIX = {"stages": ".stage_config.json", "objects": ".object_config.json", "articulated_objects": ".urdf",
          "light_setups": ".lighting_config.json"}


def quat_matrix(q: list[float]) -> np.ndarray:
    """Rotation matrix of a quaternion [w, x, y, z] (normalised first)."""
    w, x, y, z = np.asarray(q, dtype=float) / (np.linalg.norm(q) or 1.0)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def rpy_matrix(rpy: list[float]) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes x, y, z) → rotation matrix Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def transform(R: np.ndarray, t: np.ndarray | list[float]) -> np.ndarray:
    """4×4 rigid transform."""
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    return T


def template_class(template: str, class_map: dict[str, str]) -> str:
    """Class of a template: the class map by full name or base name, else the base name without `frl_apartment_`,
    trailing `_NN` and with camelCase split (`kitchenCupboard_01` → `kitchen cupboard`)."""
    base = template.replace("\\", "/").rsplit("/", 1)[-1]
    for key in (template, base):
        if key in class_map:
            return label_name(class_map[key])
    name = re.sub(r"(_\d+)+$", "", base.removeprefix("frl_apartment_"))
    name = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)
    return label_name(name) or label_name(base)


def load_class_map(override: Path | None) -> dict[str, str]:
    """The shipped template → class map, updated by the user's map."""
    out = read_template_class_map(CLASS_MAP)
    if override is not None:
        if not Path(override).is_file():
            raise InputError(f"{override}: missing, expected a class map JSON {{\"<template name>\": \"class\"}} (--classes)")
        out.update(read_template_class_map(override))
    return out


def dataset_root(scene_path: Path) -> tuple[Path, SceneDatasetConfig | None]:
    """The dataset folder of a scene instance (holding `*.scene_dataset_config.json`, else `configs/scenes/..`) and its config."""
    for d in scene_path.resolve().parents:
        found = sorted(d.glob("*.scene_dataset_config.json"))
        if found:
            return d, read_scene_dataset_config(found[0])
    p = scene_path.resolve().parent
    return (p.parent.parent if p.name == "scenes" and p.parent.name == "configs" else p), None


class Templates:
    """Finds the config file of a template name, as habitat does: by base name in the dataset config's folders."""

    def __init__(self, scene_path: Path) -> None:
        self.scene_path = scene_path
        self.root, cfg = dataset_root(scene_path)
        self.dirs = {k: v for k, v in DEFAULT_DIRS.items()}
        if cfg is not None:
            for kind in DEFAULT_DIRS:
                paths = getattr(cfg, kind).paths
                listed = [d for suffix, ds in paths.items() for d in ds]
                if listed:
                    self.dirs[kind] = listed
        self._meshes: dict[Path, SceneMesh] = {}

    def mesh(self, asset: Path) -> SceneMesh:
        """A render asset's mesh, read once per build (apartments repeat templates)."""
        if asset not in self._meshes:
            self._meshes[asset] = read_mesh_gltf(asset)
        return self._meshes[asset]

    def find(self, kind: str, template: str, field: str) -> Path:
        """The config (or URDF) of a template; InputError naming the scene instance and field when none exists."""
        base = template.replace("\\", "/").rsplit("/", 1)[-1]
        name = base if base.endswith(SUFFIX[kind]) else base + SUFFIX[kind]
        direct = [self.root / template, self.root / (template + SUFFIX[kind])]
        cands = [p for p in direct if p.is_file()]
        for d in self.dirs[kind]:
            for p in map(Path, sorted(glob.glob(str(self.root / d)))):
                cands += [p / name] if (p / name).is_file() else [p] if p.is_file() and p.name == name else []
        if not cands:
            where = ", ".join(self.dirs[kind])
            raise SchemaError(self.scene_path, field, f"a template with a {SUFFIX[kind]} file under {self.root} ({where}); none found",
                              template)
        return cands[0]


def _asset(config_path: Path, asset: str, field: str = "render_asset") -> Path:
    """A render asset path relative to its config, which must exist."""
    p = (config_path.parent / asset).resolve() if not Path(asset).is_absolute() else Path(asset)
    if not p.is_file():
        raise SchemaError(config_path, field, f"an existing render asset ({p} is missing)", asset)
    return p


def _placed(mesh: SceneMesh, T: np.ndarray, oid: int) -> SceneMesh:
    """The mesh moved by T (4×4, may scale) with every face given object id `oid`."""
    v = mesh.vertices @ T[:3, :3].T + T[:3, 3]
    tris = mesh.triangles if np.linalg.det(T[:3, :3]) > 0 else mesh.triangles[:, ::-1]  # a mirroring scale flips winding
    return replace(mesh, vertices=v, triangles=tris, object_ids=np.full(len(tris), oid, np.int64))  # uv and textures carry over


def instance_transform(inst: ObjectInstance, scene_origin: str | None, scale: np.ndarray, com: np.ndarray) -> np.ndarray:
    """Asset frame → world (y-up): scale, then (COM origin) centre the COM, rotate, translate."""
    s = scale * inst.uniform_scale * np.asarray(inst.non_uniform_scale)
    origin = inst.translation_origin or scene_origin or "COM"
    shift = -com if origin == "COM" else np.zeros(3)
    return transform(quat_matrix(inst.rotation), inst.translation) @ transform(np.diag(s), s * shift)


def object_mesh(templates: Templates, inst: ObjectInstance, k: int, scene_origin: str | None, oid: int) -> SceneMesh:
    """A rigid object instance in the world (y-up)."""
    cfg_path = templates.find("objects", inst.template_name, f"object_instances[{k}].template_name")
    cfg = read_object_config(cfg_path)
    mesh = templates.mesh(_asset(cfg_path, cfg.render_asset))
    com = np.asarray(cfg.COM) if cfg.COM is not None else (mesh.vertices.min(0) + mesh.vertices.max(0)) / 2
    return _placed(mesh, instance_transform(inst, scene_origin, np.asarray(cfg.scale), com), oid)


def link_poses(urdf: Urdf) -> dict[str, np.ndarray]:
    """Every link's pose in the URDF's root frame at the default joint state (all joint positions 0)."""
    poses = {urdf.root: np.eye(4)}
    pending = list(urdf.joints)
    while pending:
        ready = [j for j in pending if j.parent in poses]
        if not ready:
            break
        for j in ready:
            poses[j.child] = poses[j.parent] @ transform(rpy_matrix(j.rpy), j.xyz)
            pending.remove(j)
    return poses


def articulated_mesh(templates: Templates, inst: ObjectInstance, k: int, oid: int) -> SceneMesh:
    """An articulated object: the visual meshes of every URDF link, composed along the kinematic chain, placed by its base pose."""
    path = templates.find("articulated_objects", inst.template_name, f"articulated_object_instances[{k}].template_name")
    urdf = read_urdf(path)
    poses = link_poses(urdf)
    s = inst.uniform_scale * np.asarray(inst.non_uniform_scale)
    base = transform(quat_matrix(inst.rotation), inst.translation) @ transform(np.diag(s), np.zeros(3))
    parts = []
    for link, visuals in urdf.links.items():
        for j, v in enumerate(visuals):
            fn = re.sub(r"^package://[^/]*/", "", v.filename)
            asset = _asset(path, fn, f"link[{link}].visual[{j}].geometry.mesh.filename")
            T = base @ poses[link] @ transform(rpy_matrix(v.rpy), v.xyz) @ transform(np.diag(v.scale), np.zeros(3))
            parts.append(_placed(templates.mesh(asset), T, oid))
    if not parts:
        raise SchemaError(path, "link.visual", "at least one link with a visual mesh")
    return concat(parts)


def concat(parts: list[SceneMesh]) -> SceneMesh:
    """One mesh of many."""
    return concat_meshes(parts)


def y_to_z(v: list[float]) -> list[float]:
    """A habitat (y-up) vector in tiermap's z-up world: (x, y, z) → (x, -z, y)."""
    return [round(float(v[0]), 6), round(float(-v[2]), 6), round(float(v[1]), 6)]


def scene_lights(templates: Templates, name: str) -> list[Light] | None:
    """The scene's default lighting as z-up lights; light-subtracting (negative) lights are dropped (pyrender cannot)."""
    if not name or name.lower() in ("no_lights", "default"):
        return None
    cfg = read_lighting_config(templates.find("light_setups", name, "default_lighting"))
    out = []
    for key, L in cfg.lights.items():
        if L.intensity <= 0:
            continue
        directional = L.type == "directional"  # habitat gives a directional light's direction as its position (w = 0)
        pos = None if directional or L.position_model == "camera" or L.position is None else y_to_z(L.position)
        vec = L.direction if L.direction is not None else (L.position if directional else None)
        direction = y_to_z(vec) if vec is not None else ([0.0, 0.0, -1.0] if directional else None)
        out.append(Light(name=f"{name.rsplit('/', 1)[-1]}_{key}", type=L.type, position=pos, direction=direction, color=L.color,
                         intensity=float(L.intensity), attached_to_camera=L.position_model == "camera"))
    return out or None


def replicacad_scene(name: str, path: Path, seed: int = 0, classes: Path | None = None) -> tuple[Scene, SceneMesh]:
    """A ReplicaCAD scene instance → the scene (objects, classes, lights) and its labelled z-up mesh."""
    path = Path(path)
    if path.is_dir() or not path.name.endswith(".json"):
        raise InputError(f"{path}: expected a <replica_cad>/configs/scenes/<name>.scene_instance.json file")
    inst = read_scene_instance(path)
    class_map = load_class_map(classes)
    templates = Templates(path)
    stage_path = templates.find("stages", inst.stage_instance.template_name, "stage_instance.template_name")
    stage = read_stage_config(stage_path)
    parts = [_placed(templates.mesh(_asset(stage_path, stage.render_asset)), transform(np.diag(stage.scale), np.zeros(3)), 0)]
    names: dict[int, str] = {}
    for k, o in enumerate(inst.object_instances):
        oid = len(names) + 1
        parts.append(object_mesh(templates, o, k, inst.translation_origin, oid))
        names[oid] = template_class(o.template_name, class_map)
    for k, a in enumerate(inst.articulated_object_instances):
        oid = len(names) + 1
        parts.append(articulated_mesh(templates, a, k, oid))
        names[oid] = template_class(a.template_name, class_map)
    if len(names) > 65535:
        raise SchemaError(path, "object_instances", "at most 65535 objects (uint16 instance images)", len(names))
    mesh = to_z_up(concat(parts), "y")
    scene = scene_from_mesh(name, mesh, names, "replicacad", seed)
    scene.lights = scene_lights(templates, inst.default_lighting)
    return scene, mesh
