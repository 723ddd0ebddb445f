"""Seeded procedural indoor scenes: rooms side by side joined by doors, furnished from the library."""
from __future__ import annotations

import numpy as np

from generation.library import LIBRARY, MOTIFS, PATTERNS, ROOM_KINDS, WORDS, Kind, material_of
from tiermap.formats.base import InputError
from tiermap.formats.scene import OBB, Appearance, Lexicon, Room, Scene, SceneObject

ROOM_SIZES = {"living room": (5.0, 4.0), "bedroom": (4.0, 3.6), "office": (4.0, 3.6), "kitchen": (4.0, 3.2), "meeting room": (5.0, 4.0)}
HEIGHT, WALL_T, DOOR_W = 2.6, 0.05, 1.0
STRUCTURE = {"floor": Lexicon(synonyms=["floor"]), "wall": Lexicon(synonyms=["wall"]), "ceiling": Lexicon(synonyms=["ceiling"])}


def _rot(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _obb(center: np.ndarray, extent: np.ndarray, yaw: float = 0.0) -> OBB:
    R = _rot(yaw)
    return OBB(center=[round(float(v), 4) for v in center], extent=[round(float(v), 4) for v in extent],
               R=[[round(float(v), 9) for v in row] for row in R])


def _footprint(center: np.ndarray, extent: np.ndarray, yaw: float) -> np.ndarray:
    half = np.abs(_rot(yaw)) @ (extent / 2)
    return np.array([center[0] - half[0], center[1] - half[1], center[0] + half[0], center[1] + half[1]])


def _overlaps(fp: np.ndarray, others: list[np.ndarray], gap: float = 0.05) -> bool:
    return any(fp[0] < g[2] + gap and g[0] < fp[2] + gap and fp[1] < g[3] + gap and g[1] < fp[3] + gap for g in others)


def _appearance(kind: Kind, rng: np.random.Generator) -> tuple[Appearance, list[str]]:
    """Colour and texture; the texture's pattern, motif or words become the object's depictions."""
    colors = kind.colors or ((rng.uniform(0.25, 0.95), rng.uniform(0.25, 0.95), rng.uniform(0.25, 0.95)),)
    color = [round(float(c), 3) for c in colors[int(rng.integers(len(colors)))]]
    material = material_of(kind.name, tuple(color))
    if not kind.textures or rng.random() < 0.25:
        return Appearance(color=color, material=material), []
    tex = str(kind.textures[int(rng.integers(len(kind.textures)))])
    if tex == "words":
        word = str(WORDS[int(rng.integers(len(WORDS)))])
        return Appearance(color=color, texture="words", text=word, material=material), [word, "text", "words"]
    assert tex in PATTERNS or tex in MOTIFS, tex
    return Appearance(color=color, texture=tex, material=material), [tex]


class _Builder:
    """Accumulates objects with consecutive ids."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.objects: list[SceneObject] = []

    def add(self, cls: str, center: np.ndarray, extent: np.ndarray, yaw: float = 0.0, room: str | None = None, parent: int | None = None,
            kind: Kind | None = None) -> SceneObject:
        oid = len(self.objects) + 1
        parts: list[OBB] = []
        lex = STRUCTURE.get(cls, Lexicon())
        app = Appearance(color=[0.8, 0.78, 0.74] if cls != "floor" else [0.6, 0.45, 0.35])
        if kind is not None:
            R = _rot(yaw)
            built = kind.parts(extent)
            if len(built) > 1:
                parts = [_obb(center + R @ np.asarray(c), np.asarray(e), yaw) for c, e in built]
            app, depictions = _appearance(kind, self.rng)
            lex = Lexicon(synonyms=list(kind.synonyms), depictions=depictions, vis_sim=list(kind.vis_sim))
        obj = SceneObject(id=oid, class_name=cls, obb=_obb(center, extent, yaw), parts=parts, appearance=app, lexicon=lex,
                          room=room, parent=parent)
        self.objects.append(obj)
        return obj


def generate_scene(name: str, seed: int, rooms: list[str] | None = None) -> Scene:
    """Rooms side by side along x, doors in the shared walls, furnished from ROOM_KINDS; same inputs → same scene."""
    rng = np.random.default_rng(seed)
    rooms = rooms or ["living room"]
    unknown = [r for r in rooms if r not in ROOM_KINDS]
    if unknown:
        raise InputError(f"unknown room kind {unknown[0]!r}: expected one of {sorted(ROOM_KINDS)}")
    b = _Builder(rng)
    x0, room_list = 0.0, []
    for k, kind_name in enumerate(rooms):
        W, D = ROOM_SIZES[kind_name]
        room_list.append(Room(name=f"room{k}", kind=kind_name, min=[x0, 0.0, 0.0], max=[x0 + W, D, HEIGHT]))
        x0 += W
    total_w, max_d = x0, max(r.max[1] for r in room_list)
    b.add("floor", np.array([total_w / 2, max_d / 2, -WALL_T / 2]), np.array([total_w, max_d, WALL_T]))
    b.add("ceiling", np.array([total_w / 2, max_d / 2, HEIGHT + WALL_T / 2]), np.array([total_w, max_d, WALL_T]))
    footprints: dict[str, list[np.ndarray]] = {}
    for k, room in enumerate(room_list):
        lo, hi = np.asarray(room.min), np.asarray(room.max)
        W, D = hi[0] - lo[0], hi[1] - lo[1]
        fps: list[np.ndarray] = []
        for c, e in [((lo[0] + W / 2, -WALL_T / 2, HEIGHT / 2), (W, WALL_T, HEIGHT)), ((lo[0] + W / 2, D + WALL_T / 2, HEIGHT / 2), (W, WALL_T, HEIGHT))]:
            b.add("wall", np.array(c), np.array(e), room=room.name)
        if k == 0:
            b.add("wall", np.array([lo[0] - WALL_T / 2, D / 2, HEIGHT / 2]), np.array([WALL_T, D, HEIGHT]), room=room.name)
        xr = hi[0]
        if k == len(room_list) - 1:
            b.add("wall", np.array([xr + WALL_T / 2, D / 2, HEIGHT / 2]), np.array([WALL_T, D, HEIGHT]), room=room.name)
        else:
            # Shared wall with a door gap; the open door stands against the wall beside the gap.
            d_next = room_list[k + 1].max[1]
            dmax = min(D, d_next)
            gy = rng.uniform(0.4 + DOOR_W / 2, dmax - 0.4 - DOOR_W / 2)
            for y0, y1 in ((0.0, gy - DOOR_W / 2), (gy + DOOR_W / 2, max(D, d_next))):
                b.add("wall", np.array([xr, (y0 + y1) / 2, HEIGHT / 2]), np.array([WALL_T, y1 - y0, HEIGHT]), room=room.name)
            door = LIBRARY["door"]
            de = np.array([rng.uniform(*r) for r in door.size])
            b.add("door", np.array([xr - de[0] / 2 - 0.03, gy + DOOR_W / 2 + de[1] / 2 + 0.01, de[2] / 2]), de, room=room.name, kind=door)
            fps.append(np.array([xr - de[0] - 0.1, gy - DOOR_W / 2 - 0.3, xr, gy + DOOR_W / 2 + 0.3]))  # keep the doorway free
        footprints[room.name] = fps
        _furnish(b, room, fps, rng)
    return Scene(name=name, source="procedural", seed=seed, rooms=room_list, objects=b.objects)


def _furnish(b: _Builder, room: Room, fps: list[np.ndarray], rng: np.random.Generator) -> None:
    """Place the room kind's objects: floor items by rejection sampling, wall items flush, small items on hosts."""
    lo, hi = np.asarray(room.min), np.asarray(room.max)
    placed: dict[str, list[SceneObject]] = {}
    wall_spans: list[np.ndarray] = []
    for cls in ROOM_KINDS[room.kind]:
        kind = LIBRARY[cls]
        for _attempt in range(100):
            ext = np.array([rng.uniform(*r) for r in kind.size])
            where = kind.support[int(rng.integers(len(kind.support)))]
            parent = None
            if where == "floor":
                yaw = float(rng.choice([0.0, np.pi / 2, np.pi]))
                xy = rng.uniform(lo[:2] + 0.35, hi[:2] - 0.35)
                center = np.array([*xy, ext[2] / 2])
                fp = _footprint(center, ext, yaw)
                if fp[0] < lo[0] + 0.05 or fp[1] < lo[1] + 0.05 or fp[2] > hi[0] - 0.05 or fp[3] > hi[1] - 0.05:
                    continue
                if cls != "rug" and _overlaps(fp, fps):
                    continue
                if cls == "rug":
                    center[2] = ext[2] / 2
            elif where == "wall":
                side = int(rng.integers(2))  # back wall (y = max) or front wall (y = min), facing into the room
                yaw = 0.0 if side == 0 else np.pi
                x = rng.uniform(lo[0] + ext[0] / 2 + 0.1, hi[0] - ext[0] / 2 - 0.1)
                y = hi[1] - ext[1] / 2 - 0.005 if side == 0 else lo[1] + ext[1] / 2 + 0.005
                z = ext[2] / 2 if cls in ("wardrobe", "bookshelf", "cabinet", "kitchen counter", "fridge") else rng.uniform(1.1, 1.9 - ext[2] / 2 + 0.5)
                if cls == "window":
                    z = 1.5
                center = np.array([x, y, z])
                fp = _footprint(center, ext, yaw)
                span = np.array([fp[0], fp[1], fp[2], fp[3], z - ext[2] / 2, z + ext[2] / 2])
                if any(_overlaps(span[:4], [s[:4]], 0.02) and span[4] < s[5] and s[4] < span[5] for s in wall_spans):
                    continue
                if z - ext[2] / 2 < 0.05 and _overlaps(fp, fps):
                    continue
            else:
                hosts = placed.get(where, [])
                if not hosts:
                    continue
                host = hosts[int(rng.integers(len(hosts)))]
                hc, he = np.asarray(host.obb.center), np.asarray(host.obb.extent)
                yaw = float(np.arctan2(host.obb.R[1][0], host.obb.R[0][0]))
                off = rng.uniform(-1, 1, 2) * np.maximum(he[:2] / 2 - np.maximum(ext[:2], ext[1::-1]) / 2 - 0.02, 0)
                if where == "bookshelf":
                    n_shelves = 4
                    level = int(rng.integers(n_shelves - 1))
                    z = hc[2] - he[2] / 2 + 0.03 + level * (he[2] - 0.03) / (n_shelves - 1) + ext[2] / 2
                    off[1] = 0.0
                elif where in ("sofa", "armchair", "bed"):
                    z = hc[2] - he[2] / 2 + (0.44 if where != "bed" else 0.5) + ext[2] / 2
                    off[1] = he[1] / 2 - 0.25 - ext[1] / 2 if where != "bed" else he[1] / 2 - 0.2 - ext[1] / 2
                else:
                    z = hc[2] + he[2] / 2 + ext[2] / 2
                center = np.array([*(hc[:2] + _rot(yaw)[:2, :2] @ off), z])
                fp = _footprint(center, ext, yaw)
                mine = [_footprint(np.asarray(o.obb.center), np.asarray(o.obb.extent), 0.0) for o in b.objects if o.parent == host.id
                        and abs(o.obb.center[2] - z) < 0.2]
                if _overlaps(fp, mine, 0.01):
                    continue
                parent = host.id
            obj = b.add(cls, center, ext, yaw, room=room.name, parent=parent, kind=kind)
            placed.setdefault(cls, []).append(obj)
            if where == "wall":
                wall_spans.append(span)
                if z - ext[2] / 2 < 0.05:
                    fps.append(fp)
            elif where == "floor" and cls != "rug":
                fps.append(fp)
            break

