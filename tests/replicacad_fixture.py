"""A tiny ReplicaCAD-style dataset made by the tests: a room stage, two rigid objects, a two-link URDF, two lights.

Everything is authored in habitat's y-up frame, as ReplicaCAD is; `expected_*` give the world z-up geometry computed
independently of tiermap (scipy rotations, explicit corner lists).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

# z-up room 4 × 3 × 2.5 m; habitat y-up: x right, y up, z = -(tiermap y)
ROOM_PARTS = [  # (centre, extent) in z-up
    ((2.0, 1.5, -0.01), (4.0, 3.0, 0.02)), ((2.0, 1.5, 2.51), (4.0, 3.0, 0.02)),
    ((2.0, -0.025, 1.25), (4.0, 0.05, 2.5)), ((2.0, 3.025, 1.25), (4.0, 0.05, 2.5)),
    ((-0.025, 1.5, 1.25), (0.05, 3.0, 2.5)), ((4.025, 1.5, 1.25), (0.05, 3.0, 2.5)),
]
CHAIR = {"extent": (0.4, 0.8, 0.5), "offset": (0.1, 0.4, 0.05), "COM": [0.12, 0.35, 0.0], "scale": [1.2, 1.2, 1.2],
         "t": [3.2, 0.42, -2.2], "q": [np.cos(0.3), 0.0, np.sin(0.3), 0.0]}  # COM origin (the scene's), 34° about up
TABLE = {"extent": (0.8, 0.6, 0.5), "offset": (0.0, 0.3, 0.0), "scale": [1.0, 1.5, 1.0],
         "t": [0.9, 0.0, -0.8], "q": list(np.array([0.95, 0.05, -0.3, 0.02]) / np.linalg.norm([0.95, 0.05, -0.3, 0.02]))}  # asset_local
CABINET = {"body": (0.6, 0.8, 0.4), "door": (0.56, 0.7, 0.03), "joint_xyz": (0.0, 0.4, 0.215), "joint_rpy": (0.0, 0.4, 0.0),
           "door_xyz": (0.0, 0.0, 0.0), "t": [2.2, 0.4, -0.5], "q": [np.cos(-0.6), 0.0, np.sin(-0.6), 0.0]}
LIGHTS = {"0": {"type": "point", "position": [1.0, 2.3, -1.0], "intensity": 1.5, "color": [1.0, 0.9, 0.8], "position_model": "global"},
          "1": {"type": "point", "position": [3.0, 2.3, -2.0], "intensity": 2.0, "color": [1, 1, 1]},
          "2": {"type": "point", "position": [2.0, 2.0, -1.5], "intensity": -0.5, "color": [1, 1, 1]}}  # subtracts light: dropped
TABLE_RGB = (200, 30, 30)
CLASSES = {1: "chair", 2: "table", 3: "chest of shelves"}


def corners(extent: tuple[float, ...], offset: tuple[float, ...] = (0, 0, 0)) -> np.ndarray:
    """The 8 corners of an axis-aligned box of this extent centred at offset."""
    e = np.asarray(extent) / 2
    return np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * e + np.asarray(offset)


def zup(p: np.ndarray) -> np.ndarray:
    """habitat y-up → tiermap z-up."""
    return np.stack([p[:, 0], -p[:, 2], p[:, 1]], axis=1)


def yup(p: np.ndarray) -> np.ndarray:
    """tiermap z-up → habitat y-up."""
    return np.stack([p[:, 0], p[:, 2], -p[:, 1]], axis=1)


def rot(q: list[float]) -> np.ndarray:
    """[w, x, y, z] → matrix, via scipy (scalar-last)."""
    return Rotation.from_quat([q[1], q[2], q[3], q[0]]).as_matrix()


def expected_chair() -> np.ndarray:
    """The chair's world z-up corners: the COM goes to the translation (COM origin)."""
    c = CHAIR
    local = (corners(c["extent"], c["offset"]) - np.asarray(c["COM"])) * np.asarray(c["scale"])
    return zup(local @ rot(c["q"]).T + np.asarray(c["t"]))


def expected_table() -> np.ndarray:
    """The table's world z-up corners: the asset origin goes to the translation (asset_local)."""
    c = TABLE
    return zup((corners(c["extent"], c["offset"]) * np.asarray(c["scale"])) @ rot(c["q"]).T + np.asarray(c["t"]))


def expected_cabinet() -> tuple[np.ndarray, np.ndarray]:
    """Body and door corners (world z-up) at joint state 0: door = base ∘ joint origin ∘ visual origin."""
    c = CABINET
    base_R, base_t = rot(c["q"]), np.asarray(c["t"])
    body = corners(c["body"]) @ base_R.T + base_t
    jR = Rotation.from_euler("xyz", c["joint_rpy"]).as_matrix()  # URDF rpy: fixed axes x, y, z
    door_local = corners(c["door"], c["door_xyz"]) @ jR.T + np.asarray(c["joint_xyz"])
    return zup(body), zup(door_local @ base_R.T + base_t)


def _box(extent: tuple[float, ...], offset: tuple[float, ...] = (0, 0, 0), rgb: tuple[int, ...] = (150, 150, 150), texture: bool = False):  # type: ignore[no-untyped-def]
    import trimesh
    from PIL import Image

    v = corners(extent, offset)
    quads = np.array([[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]])
    m = trimesh.Trimesh(v, np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]), process=False)
    if texture:
        m.visual = trimesh.visual.TextureVisuals(uv=np.tile([[0.5, 0.5]], (8, 1)), image=Image.new("RGB", (8, 8), TABLE_RGB))
    else:
        m.visual = trimesh.visual.ColorVisuals(m, vertex_colors=np.tile([*rgb, 255], (8, 1)).astype(np.uint8))
    return m


def write_glb(path: Path, meshes: list) -> Path:  # type: ignore[type-arg]
    """A GLB of these meshes, one node each."""
    import trimesh

    s = trimesh.Scene()
    for i, m in enumerate(meshes):
        s.add_geometry(m, node_name=f"part{i}")
    path.parent.mkdir(parents=True, exist_ok=True)
    s.export(str(path))
    return path


def write_dataset(root: Path) -> Path:
    """The dataset under root; returns configs/scenes/tiny.scene_instance.json."""
    room = []
    for c, e in ROOM_PARTS:
        ext_y = (e[0], e[2], e[1])
        room.append(_box(ext_y, tuple(yup(np.asarray([c]))[0]), rgb=(210, 200, 190)))
    write_glb(root / "stages/tiny_stage.glb", room)
    write_glb(root / "objects/chair.glb", [_box(CHAIR["extent"], CHAIR["offset"], rgb=(40, 80, 180))])
    write_glb(root / "objects/table.glb", [_box(TABLE["extent"], TABLE["offset"], texture=True)])
    write_glb(root / "urdf/chestOfShelves_01/body.glb", [_box(CABINET["body"], rgb=(120, 90, 60))])
    (root / "urdf/chestOfShelves_01").mkdir(parents=True, exist_ok=True)
    door = _box(CABINET["door"], CABINET["door_xyz"], rgb=(90, 60, 40))
    door.export(str(root / "urdf/chestOfShelves_01/door.obj"))
    jx, jr = " ".join(map(str, CABINET["joint_xyz"])), " ".join(map(str, CABINET["joint_rpy"]))
    (root / "urdf/chestOfShelves_01/chestOfShelves_01.urdf").write_text(f"""<?xml version="1.0"?>
<robot name="chestOfShelves_01">
  <link name="body"><visual><origin xyz="0 0 0" rpy="0 0 0"/><geometry><mesh filename="body.glb"/></geometry></visual></link>
  <link name="door"><visual><geometry><mesh filename="door.obj" scale="1 1 1"/></geometry></visual></link>
  <joint name="hinge" type="revolute"><parent link="body"/><child link="door"/><origin xyz="{jx}" rpy="{jr}"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="1.5" effort="1" velocity="1"/></joint>
</robot>
""")
    cfg = root / "configs"
    for sub in ("stages", "objects", "lighting", "scenes"):
        (cfg / sub).mkdir(parents=True, exist_ok=True)
    (cfg / "stages/tiny_stage.stage_config.json").write_text(json.dumps({"render_asset": "../../stages/tiny_stage.glb",
                                                                         "collision_asset": "x.glb", "up": [0, 1, 0]}))
    (cfg / "objects/frl_apartment_chair_01.object_config.json").write_text(json.dumps(
        {"render_asset": "../../objects/chair.glb", "COM": CHAIR["COM"], "scale": CHAIR["scale"], "mass": 3.0, "semantic_id": 7}))
    (cfg / "objects/frl_apartment_table_99.object_config.json").write_text(json.dumps(
        {"render_asset": "../../objects/table.glb", "scale": TABLE["scale"], "friction_coefficient": 0.5}))
    (cfg / "lighting/tiny_lights.lighting_config.json").write_text(json.dumps({"lights": LIGHTS, "positional_lighting_model": "global"}))
    (root / "tiny.scene_dataset_config.json").write_text(json.dumps({
        "stages": {"paths": {".json": ["configs/stages"]}}, "objects": {"paths": {".json": ["configs/objects"]}},
        "articulated_objects": {"paths": {".urdf": ["urdf/*/"]}},
        "light_setups": {"default_attributes": {"positive_intensity_scale": 2.5}, "paths": {".json": ["configs/lighting"]}}}))
    scene = {
        "stage_instance": {"template_name": "stages/tiny_stage"},
        "default_lighting": "lighting/tiny_lights",
        "translation_origin": "COM",
        "object_instances": [
            {"template_name": "objects/frl_apartment_chair_01", "translation": CHAIR["t"], "rotation": CHAIR["q"], "motion_type": "DYNAMIC"},
            {"template_name": "objects/frl_apartment_table_99", "translation": TABLE["t"], "rotation": TABLE["q"],
             "translation_origin": "asset_local", "motion_type": "STATIC"},
        ],
        "articulated_object_instances": [
            {"template_name": "chestOfShelves_01", "translation": CABINET["t"], "rotation": CABINET["q"], "fixed_base": True,
             "motion_type": "DYNAMIC", "auto_clamp_joint_limits": True},
        ],
        "navmesh_instance": "empty_stage_navmesh",
    }
    path = cfg / "scenes/tiny.scene_instance.json"
    path.write_text(json.dumps(scene, indent=1))
    return path
