"""Seeded procedural indoor scenes: a furnished room of box-built objects with per-object lexicons."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiermap.schema import OBB, Lexicon, Room, Scene, SceneObject


@dataclass(frozen=True)
class Kind:
    """A library entry: size range (x, y, z metres), colour choices, lexicon, where it stands."""

    name: str
    size: tuple[tuple[float, float], tuple[float, float], tuple[float, float]]
    lexicon: Lexicon
    support: str = "floor"  # floor | wall | on:<kind>


def _lex(syn: list[str], dep: list[str] | None = None, vis: list[str] | None = None) -> Lexicon:
    return Lexicon(synonyms=syn, depictions=dep or [], vis_sim=vis or [])


LIBRARY: dict[str, Kind] = {k.name: k for k in [
    Kind("table", ((1.0, 1.6), (0.7, 0.9), (0.72, 0.78)), _lex(["table", "dining table"], [], ["desk"])),
    Kind("chair", ((0.45, 0.5), (0.45, 0.5), (0.85, 0.95)), _lex(["chair"], [], ["stool"])),
    Kind("sofa", ((1.8, 2.2), (0.85, 0.95), (0.8, 0.9)), _lex(["sofa", "couch"], [], ["bench"])),
    Kind("bookshelf", ((0.8, 1.0), (0.3, 0.35), (1.6, 1.9)), _lex(["bookshelf", "shelf"], [], ["cabinet"]), "wall"),
    Kind("plant", ((0.3, 0.4), (0.3, 0.4), (0.6, 1.0)), _lex(["plant", "potted plant"], [], ["tree"])),
    Kind("trash bin", ((0.25, 0.3), (0.25, 0.3), (0.35, 0.45)), _lex(["trash bin", "bin", "trash can"], [], ["basket"])),
    Kind("mug", ((0.08, 0.1), (0.08, 0.1), (0.09, 0.11)), _lex(["mug", "cup"], ["heart"], ["glass"]), "on:table"),
    Kind("laptop", ((0.32, 0.36), (0.22, 0.25), (0.02, 0.03)), _lex(["laptop", "computer"], [], ["tablet"]), "on:table"),
    Kind("pillow", ((0.4, 0.5), (0.15, 0.2), (0.35, 0.45)), _lex(["pillow", "cushion"], ["flower", "stripes"], ["bag"]), "on:sofa"),
    Kind("book", ((0.15, 0.2), (0.22, 0.26), (0.03, 0.05)), _lex(["book"], ["star"], ["notebook"]), "on:bookshelf"),
    Kind("painting", ((0.6, 0.9), (0.03, 0.04), (0.4, 0.6)), _lex(["painting", "picture"], ["house", "sun"], ["poster"]), "wall"),
]}
DEMO_ROOM = ["table", "chair", "chair", "sofa", "bookshelf", "plant", "trash bin", "mug", "laptop", "pillow", "book",
             "book", "painting"]
STRUCTURE = {"floor": _lex(["floor"]), "wall": _lex(["wall"]), "ceiling": _lex(["ceiling"])}


def _obb(center: np.ndarray, extent: np.ndarray, yaw: float = 0.0) -> OBB:
    c, s = np.cos(yaw), np.sin(yaw)
    R = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    return OBB(center=[round(float(v), 4) for v in center], extent=[round(float(v), 4) for v in extent],
               R=[[round(v, 9) for v in row] for row in R])


def _aabb_xy(o: OBB) -> np.ndarray:
    R, e, c = np.asarray(o.R), np.asarray(o.extent) / 2, np.asarray(o.center)
    half = np.abs(R) @ e
    return np.array([c[0] - half[0], c[1] - half[1], c[0] + half[0], c[1] + half[1]])


def generate_scene(name: str, seed: int, kinds: list[str] | None = None, room_size: tuple[float, float, float] = (5.0, 4.0, 2.6)) -> Scene:
    """A furnished room; same (name, seed, kinds, room_size) → the same scene."""
    rng = np.random.default_rng(seed)
    W, D, H = room_size
    objects: list[SceneObject] = []
    t = 0.05
    for cls, (c, e) in {
        "floor": ((W / 2, D / 2, -t / 2), (W, D, t)), "ceiling": ((W / 2, D / 2, H + t / 2), (W, D, t)),
    }.items():
        objects.append(SceneObject(id=len(objects) + 1, class_name=cls, obb=_obb(np.array(c), np.array(e)), lexicon=STRUCTURE[cls]))
    for c, e in [((W / 2, -t / 2, H / 2), (W, t, H)), ((W / 2, D + t / 2, H / 2), (W, t, H)),
                 ((-t / 2, D / 2, H / 2), (t, D, H)), ((W + t / 2, D / 2, H / 2), (t, D, H))]:
        objects.append(SceneObject(id=len(objects) + 1, class_name="wall", obb=_obb(np.array(c), np.array(e)), lexicon=STRUCTURE["wall"]))
    placed: dict[str, list[SceneObject]] = {}
    footprints: list[np.ndarray] = []
    for kind_name in kinds or DEMO_ROOM:
        kind = LIBRARY[kind_name]
        for _attempt in range(200):
            ext = np.array([rng.uniform(*r) for r in kind.size])
            if kind.support.startswith("on:"):
                hosts = placed.get(kind.support[3:], [])
                if not hosts:
                    break
                host = hosts[int(rng.integers(len(hosts)))].obb
                hc, he = np.asarray(host.center), np.asarray(host.extent)
                xy = hc[:2] + rng.uniform(-1, 1, 2) * np.maximum(he[:2] / 2 - ext[:2] / 2, 0)
                z = hc[2] + he[2] / 2 + ext[2] / 2 if kind_name != "book" else hc[2] - he[2] / 2 + rng.choice([0.4, 0.8, 1.2]) + ext[2] / 2
                obb = _obb(np.array([*xy, z]), ext)
                parent = next(o.id for o in objects if o.obb is host)
            elif kind.support == "wall":
                wall = int(rng.integers(2))  # back wall (y = D) or left wall (x = 0): the camera looks at both
                if wall == 0:
                    x = rng.uniform(ext[0] / 2 + 0.1, W - ext[0] / 2 - 0.1)
                    y = D - ext[1] / 2 - 0.01
                    obb, yaw = None, 0.0
                else:
                    x = ext[1] / 2 + 0.01
                    y = rng.uniform(ext[0] / 2 + 0.1, D - ext[0] / 2 - 0.1)
                    yaw = np.pi / 2
                z = ext[2] / 2 if kind_name != "painting" else rng.uniform(1.3, 1.7)
                obb = _obb(np.array([x, y, z]), ext, yaw)
                parent = None
            else:
                yaw = float(rng.choice([0.0, np.pi / 2]))
                xy = rng.uniform([0.4, 0.4], [W - 0.4, D - 0.4])
                obb = _obb(np.array([*xy, ext[2] / 2]), ext, yaw)
                parent = None
            fp = _aabb_xy(obb)
            if parent is None and kind_name != "painting":
                if fp[0] < 0 or fp[1] < 0 or fp[2] > W or fp[3] > D:
                    continue
                if any(fp[0] < g[2] + 0.05 and g[0] < fp[2] + 0.05 and fp[1] < g[3] + 0.05 and g[1] < fp[3] + 0.05 for g in footprints):
                    continue
                footprints.append(fp)
            obj = SceneObject(id=len(objects) + 1, class_name=kind_name, obb=obb, lexicon=kind.lexicon, room="room0", parent=parent)
            objects.append(obj)
            placed.setdefault(kind_name, []).append(obj)
            break
    rooms = [Room(name="room0", kind="living room", min=[0.0, 0.0, 0.0], max=[W, D, H])]
    return Scene(name=name, source="procedural", seed=seed, rooms=rooms, objects=objects)


def object_color(scene_seed: int, object_id: int) -> np.ndarray:
    """A stable albedo (RGB in 0..1) per object."""
    rng = np.random.default_rng([scene_seed, object_id])
    return rng.uniform(0.25, 0.95, 3)
