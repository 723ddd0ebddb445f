"""Furniture and object library: parametric parts, size ranges, colours, textures and lexicons per class."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Box = tuple[tuple[float, float, float], tuple[float, float, float]]
"""A part in object-local coordinates: (centre, extent), object frame centred on its bounding box."""


def solid(e: np.ndarray) -> list[Box]:
    """One box filling the bounds."""
    return [((0.0, 0.0, 0.0), tuple(e))]


def table(e: np.ndarray) -> list[Box]:
    """Top slab and four legs."""
    x, y, z = e / 2
    t, leg = 0.04, 0.05
    parts: list[Box] = [((0.0, 0.0, z - t / 2), (e[0], e[1], t))]
    for sx in (-1, 1):
        for sy in (-1, 1):
            parts.append(((sx * (x - leg), sy * (y - leg), -t / 2), (leg, leg, e[2] - t)))
    return parts


def chair(e: np.ndarray) -> list[Box]:
    """Seat at 45 %, back rest, four legs."""
    x, y, z = e / 2
    seat_z = -z + 0.45 * e[2]
    leg = 0.04
    parts: list[Box] = [((0.0, 0.0, seat_z), (e[0], e[1], 0.05)),
                        ((0.0, y - 0.03, (seat_z + z) / 2), (e[0], 0.05, z - seat_z))]
    for sx in (-1, 1):
        for sy in (-1, 1):
            parts.append(((sx * (x - leg), sy * (y - leg), (-z + seat_z) / 2), (leg, leg, seat_z + z)))
    return parts


def shelf(e: np.ndarray, n: int = 4) -> list[Box]:
    """Two sides, a back panel and n shelves (books stand on them)."""
    x, y, z = e / 2
    t = 0.03
    parts: list[Box] = [((-x + t / 2, 0.0, 0.0), (t, e[1], e[2])), ((x - t / 2, 0.0, 0.0), (t, e[1], e[2])),
                        ((0.0, y - t / 2, 0.0), (e[0], t, e[2]))]
    for k in range(n):
        parts.append(((0.0, 0.0, -z + t / 2 + k * (e[2] - t) / (n - 1)), (e[0], e[1], t)))
    return parts


def sofa(e: np.ndarray) -> list[Box]:
    """Base, back and two arms."""
    x, y, z = e / 2
    return [((0.0, -0.05, -z + 0.22), (e[0], e[1] - 0.1, 0.44)), ((0.0, y - 0.1, 0.0), (e[0], 0.2, e[2])),
            ((-x + 0.1, -0.05, -z + 0.3), (0.2, e[1] - 0.1, 0.6)), ((x - 0.1, -0.05, -z + 0.3), (0.2, e[1] - 0.1, 0.6))]


def bed(e: np.ndarray) -> list[Box]:
    """Frame, mattress and headboard."""
    x, y, z = e / 2
    return [((0.0, 0.0, -z + 0.15), (e[0], e[1], 0.3)), ((0.0, -0.03, -z + 0.4), (e[0] - 0.06, e[1] - 0.1, 0.2)),
            ((0.0, y - 0.04, 0.0), (e[0], 0.08, e[2]))]


def lamp(e: np.ndarray) -> list[Box]:
    """Base, pole and shade."""
    z = e[2] / 2
    return [((0.0, 0.0, -z + 0.02), (e[0] * 0.6, e[1] * 0.6, 0.04)), ((0.0, 0.0, -0.1), (0.03, 0.03, e[2] - 0.25)),
            ((0.0, 0.0, z - 0.12), (e[0], e[1], 0.24))]


def screen(e: np.ndarray) -> list[Box]:
    """Screen panel on a stand."""
    z = e[2] / 2
    return [((0.0, 0.0, -z + 0.01), (e[0] * 0.4, e[1], 0.02)), ((0.0, 0.0, -z + 0.08), (0.04, 0.03, 0.14)),
            ((0.0, 0.0, 0.07), (e[0], 0.03, e[2] - 0.14))]


@dataclass(frozen=True)
class Kind:
    """A library class: size range (x, y, z metres), parts builder, lexicon, where it stands, textures."""

    name: str
    size: tuple[tuple[float, float], tuple[float, float], tuple[float, float]]
    synonyms: tuple[str, ...]
    vis_sim: tuple[str, ...] = ()
    support: tuple[str, ...] = ("floor",)  # floor | wall | names of host classes
    parts: Callable[[np.ndarray], list[Box]] = solid
    textures: tuple[str, ...] = ()  # patterns / motifs / "words" this class may carry
    colors: tuple[tuple[float, float, float], ...] = field(default=())


def K(name: str, size, syn, vis=(), support=("floor",), parts=solid, textures=(), colors=()) -> Kind:  # type: ignore[no-untyped-def]
    return Kind(name, size, tuple(syn), tuple(vis), tuple(support), parts, tuple(textures), tuple(colors))


TOPS = ("table", "desk", "kitchen counter", "meeting table", "nightstand")
WOOD = ((0.55, 0.38, 0.22), (0.72, 0.56, 0.38), (0.35, 0.24, 0.15), (0.85, 0.8, 0.72))
FABRIC = ((0.3, 0.35, 0.55), (0.6, 0.25, 0.25), (0.45, 0.5, 0.4), (0.75, 0.72, 0.65), (0.2, 0.2, 0.22))
MATERIALS: dict[str, str] = {
    "fridge": "metal", "microwave": "metal", "monitor": "plastic", "tv": "plastic", "keyboard": "plastic", "laptop": "plastic",
    "mug": "ceramic", "bowl": "ceramic", "vase": "ceramic", "bottle": "plastic", "rug": "fabric", "pillow": "fabric",
    "book": "paper", "box": "cardboard", "painting": "canvas", "poster": "paper", "window": "glass", "trash bin": "plastic",
    "whiteboard": "plastic", "bed": "fabric", "sofa": "fabric", "armchair": "fabric", "office chair": "fabric",
}
"""Material of a class whose colour does not say it (wooden and fabric colours say wood and fabric)."""


def material_of(name: str, color: tuple[float, ...]) -> str | None:
    """The material a library object of this class and colour is made of (None: not stated)."""
    if tuple(color) in WOOD:
        return "wood"
    if tuple(color) in FABRIC:
        return "fabric"
    return MATERIALS.get(name)


LIBRARY: dict[str, Kind] = {k.name: k for k in [
    K("table", ((1.0, 1.6), (0.7, 0.9), (0.72, 0.78)), ["table", "dining table"], ["desk"], parts=table, colors=WOOD),
    K("desk", ((1.2, 1.6), (0.6, 0.75), (0.72, 0.76)), ["desk", "writing desk"], ["table"], parts=table, colors=WOOD),
    K("meeting table", ((2.0, 2.6), (1.0, 1.2), (0.72, 0.76)), ["meeting table", "conference table", "table"], ["desk"], parts=table, colors=WOOD),
    K("chair", ((0.45, 0.5), (0.45, 0.5), (0.85, 0.95)), ["chair"], ["stool"], parts=chair, colors=WOOD + FABRIC),
    K("office chair", ((0.55, 0.65), (0.55, 0.65), (0.95, 1.1)), ["office chair", "chair", "swivel chair"], ["armchair"], parts=chair, colors=FABRIC),
    K("armchair", ((0.8, 0.9), (0.8, 0.9), (0.8, 0.95)), ["armchair", "chair"], ["sofa"], parts=sofa, textures=("checks", "flowers"), colors=FABRIC),
    K("sofa", ((1.8, 2.2), (0.85, 0.95), (0.8, 0.9)), ["sofa", "couch"], ["bench"], parts=sofa, textures=("stripes", "checks"), colors=FABRIC),
    K("bed", ((1.4, 1.8), (1.9, 2.1), (0.9, 1.1)), ["bed", "double bed"], ["couch"], parts=bed, textures=("polka dots", "flowers", "stripes"), colors=FABRIC),
    K("nightstand", ((0.4, 0.5), (0.35, 0.45), (0.5, 0.6)), ["nightstand", "bedside table"], ["cabinet", "drawer"], colors=WOOD),
    K("wardrobe", ((1.0, 1.4), (0.55, 0.65), (1.9, 2.1)), ["wardrobe", "closet"], ["cabinet"], ("wall",), colors=WOOD),
    K("bookshelf", ((0.8, 1.0), (0.3, 0.35), (1.6, 1.9)), ["bookshelf", "shelf", "bookcase"], ["cabinet"], ("wall",), parts=shelf, colors=WOOD),
    K("cabinet", ((0.8, 1.2), (0.4, 0.5), (0.8, 1.0)), ["cabinet", "cupboard"], ["drawer", "dresser"], ("wall",), colors=WOOD),
    K("kitchen counter", ((1.8, 2.4), (0.6, 0.65), (0.88, 0.92)), ["kitchen counter", "counter", "countertop"], ["cabinet"], ("wall",), colors=WOOD),
    K("fridge", ((0.6, 0.75), (0.6, 0.7), (1.7, 1.9)), ["fridge", "refrigerator"], ["wardrobe", "cabinet"], ("wall",), colors=((0.92, 0.92, 0.92), (0.7, 0.72, 0.75))),
    K("floor lamp", ((0.35, 0.45), (0.35, 0.45), (1.5, 1.7)), ["lamp", "floor lamp"], ["light"], parts=lamp),
    K("desk lamp", ((0.15, 0.2), (0.15, 0.2), (0.35, 0.45)), ["lamp", "desk lamp"], ["light"], TOPS, parts=lamp),
    K("monitor", ((0.5, 0.6), (0.18, 0.22), (0.4, 0.5)), ["monitor", "computer screen", "screen"], ["tv", "television"], ("desk", "table"), parts=screen,
      colors=((0.1, 0.1, 0.12),)),
    K("tv", ((1.0, 1.3), (0.25, 0.3), (0.65, 0.8)), ["tv", "television"], ["monitor", "screen"], ("cabinet", "wall"), parts=screen, colors=((0.08, 0.08, 0.1),)),
    K("keyboard", ((0.42, 0.46), (0.13, 0.16), (0.02, 0.03)), ["keyboard", "computer keyboard"], ["piano"], ("desk", "table", "meeting table")),
    K("laptop", ((0.32, 0.36), (0.22, 0.25), (0.02, 0.03)), ["laptop", "computer", "notebook computer"], ["tablet"], TOPS, textures=("words",)),
    K("mug", ((0.08, 0.1), (0.08, 0.1), (0.09, 0.11)), ["mug", "cup", "coffee mug"], ["glass"], TOPS, textures=("heart", "star", "words")),
    K("bottle", ((0.07, 0.09), (0.07, 0.09), (0.22, 0.3)), ["bottle", "water bottle"], ["vase"], TOPS, textures=("words",)),
    K("bowl", ((0.15, 0.2), (0.15, 0.2), (0.06, 0.08)), ["bowl"], ["plate", "pot"], TOPS, textures=("polka dots",)),
    K("vase", ((0.12, 0.18), (0.12, 0.18), (0.25, 0.4)), ["vase"], ["bottle", "jar"], TOPS + ("floor",), textures=("flowers", "stripes")),
    K("plant", ((0.3, 0.4), (0.3, 0.4), (0.6, 1.0)), ["plant", "potted plant", "houseplant"], ["tree", "flowers"], colors=((0.2, 0.5, 0.2), (0.3, 0.6, 0.25))),
    K("rug", ((1.4, 2.0), (1.0, 1.4), (0.01, 0.02)), ["rug", "carpet"], ["mat", "towel"], textures=("stripes", "checks", "polka dots")),
    K("pillow", ((0.4, 0.5), (0.15, 0.2), (0.35, 0.45)), ["pillow", "cushion"], ["bag"], ("sofa", "bed", "armchair"), textures=("flowers", "stripes", "heart", "polka dots")),
    K("book", ((0.15, 0.2), (0.22, 0.26), (0.03, 0.05)), ["book"], ["notebook", "box"], ("bookshelf", "nightstand", "table", "desk"), textures=("words", "star", "tree")),
    K("box", ((0.25, 0.45), (0.2, 0.35), (0.15, 0.3)), ["box", "cardboard box"], ["crate", "package"], ("floor", "bookshelf"), textures=("words",),
      colors=((0.7, 0.55, 0.35),)),
    K("painting", ((0.6, 0.9), (0.03, 0.04), (0.4, 0.6)), ["painting", "picture"], ["poster", "window"], ("wall",), textures=("house", "sun", "tree", "cat")),
    K("poster", ((0.45, 0.6), (0.01, 0.01), (0.6, 0.8)), ["poster"], ["painting", "picture"], ("wall",), textures=("words", "star", "sun", "dog")),
    K("clock", ((0.3, 0.35), (0.04, 0.05), (0.3, 0.35)), ["clock", "wall clock"], ["plate"], ("wall",), colors=((0.95, 0.95, 0.9),)),
    K("whiteboard", ((1.2, 1.8), (0.03, 0.04), (0.9, 1.1)), ["whiteboard", "board"], ["screen", "window"], ("wall",), textures=("words",),
      colors=((0.97, 0.97, 0.97),)),
    K("trash bin", ((0.25, 0.3), (0.25, 0.3), (0.35, 0.45)), ["trash bin", "bin", "trash can"], ["basket", "bucket"]),
    K("microwave", ((0.45, 0.5), (0.35, 0.4), (0.27, 0.3)), ["microwave", "microwave oven"], ["oven", "box"], ("kitchen counter",)),
    K("window", ((0.9, 1.3), (0.05, 0.05), (1.0, 1.3)), ["window"], ["mirror", "picture"], ("wall",), colors=((0.6, 0.75, 0.9),)),
    K("door", ((0.85, 0.9), (0.05, 0.05), (2.0, 2.05)), ["door"], ["wardrobe"], ("wall",), colors=WOOD),
]}

ROOM_KINDS: dict[str, list[str]] = {
    "living room": ["sofa", "armchair", "table", "rug", "tv", "cabinet", "bookshelf", "plant", "floor lamp", "painting",
                    "pillow", "pillow", "vase", "book", "book", "clock", "window"],
    "bedroom": ["bed", "nightstand", "wardrobe", "desk lamp", "pillow", "pillow", "rug", "poster", "clock", "book", "box", "window"],
    "office": ["desk", "office chair", "monitor", "keyboard", "laptop", "bookshelf", "book", "book", "trash bin", "plant",
               "mug", "whiteboard", "box", "window"],
    "kitchen": ["kitchen counter", "fridge", "microwave", "table", "chair", "chair", "bottle", "bowl", "mug", "trash bin",
                "clock", "vase", "window"],
    "meeting room": ["meeting table", "chair", "chair", "chair", "chair", "whiteboard", "tv", "cabinet", "laptop", "bottle",
                     "mug", "plant", "trash bin", "window"],
}
PATTERNS = ("stripes", "checks", "polka dots", "flowers")
MOTIFS = ("sun", "house", "tree", "star", "heart", "cat", "dog")
WORDS = ("hello", "paris", "coffee", "welcome", "science", "home", "jazz", "ocean")
