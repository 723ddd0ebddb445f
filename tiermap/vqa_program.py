"""What a question's program means: relations from boxes with stated thresholds, and the executor every answerer shares.

The question generator answers each question by running its program on the GT graph; the `program` answerer runs the
same program on a method's graph. Only the resolver differs: exact class names on the GT graph, text similarity on a
method's graph.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tiermap.formats.scene_graph import (
    STRUCTURAL,
    GraphEdge,
    GraphNode,
    RelationThresholds,
    SceneGraph,
)
from tiermap.formats.vqa import (
    NO,
    YES,
    Afford,
    Attribute,
    CompareCount,
    CompareSize,
    Count,
    CountRelated,
    Exists,
    Logic,
    Program,
    Ref,
    Related,
    Relates,
)

Resolver = Callable[[str], list[int]]
"""A class name → the ids of the graph's nodes of that class."""

AFFORDANCES: dict[str, tuple[str, ...]] = {
    "sit on": ("chair", "office chair", "armchair", "sofa", "stool", "bench", "couch"),
    "sleep on": ("bed",),
    "keep food cold in": ("fridge", "refrigerator"),
    "heat food in": ("microwave", "oven"),
    "watch a show on": ("tv", "television"),
    "throw rubbish into": ("trash bin", "trash can", "bin"),
    "hang clothes in": ("wardrobe", "closet"),
    "write notes on for a meeting": ("whiteboard",),
    "tell the time with": ("clock",),
    "look outside through": ("window",),
}
"""Functional relations: what one does with an object → the classes that afford it."""


def box_relations(nodes: list[GraphNode], th: RelationThresholds) -> list[GraphEdge]:
    """Relations between non-structural nodes from their axis-aligned boxes (same_room is read from rooms, not stored)."""
    keep = [n for n in nodes if n.label.lower() not in STRUCTURAL]
    if len(keep) < 2:
        return []
    ids = np.array([n.id for n in keep])
    c, e = np.array([n.center for n in keep], dtype=np.float64), np.array([n.extent for n in keep], dtype=np.float64)
    lo, hi = c - e / 2, c + e / 2
    inter = np.maximum(0.0, np.minimum(hi[:, None], hi[None]) - np.maximum(lo[:, None], lo[None]))  # N×N×3
    foot = np.maximum(e[:, 0] * e[:, 1], 1e-12)
    vol = np.maximum(e.prod(1), 1e-12)
    over = inter[..., 0] * inter[..., 1] / foot[:, None]          # fraction of the subject's footprint over the object's
    inside_frac = inter.prod(-1) / vol[:, None]
    eye = np.eye(len(keep), dtype=bool)
    on = (np.abs(lo[:, None, 2] - hi[None, :, 2]) <= th.on_gap) & (over >= th.on_overlap) & (c[:, None, 2] > c[None, :, 2]) & ~eye
    inside = (inside_frac >= th.inside_fraction) & (vol[:, None] < vol[None]) & ~eye
    above = (lo[:, None, 2] > hi[None, :, 2] + th.on_gap) & (np.maximum(over, over.T) >= th.above_overlap) & ~eye
    gap = np.maximum(lo[None, :, :2] - hi[:, None, :2], lo[:, None, :2] - hi[None, :, :2]).max(-1)
    z_overlap = inter[..., 2] > 0
    rooms = np.array([n.room or "" for n in keep])
    level = np.abs(lo[:, None, 2] - lo[None, :, 2]) <= th.level
    near = (gap < th.near) & z_overlap & level & (rooms[:, None] == rooms[None]) & ~(on | on.T | inside | inside.T | eye)
    out: list[GraphEdge] = []
    for rel, m in (("on", on), ("inside", inside & ~on), ("above", above), ("below", above.T), ("next_to", near)):
        for i, j in zip(*np.nonzero(m), strict=True):
            out.append(GraphEdge(rel=rel, subject=int(ids[i]), object=int(ids[j])))
    return sorted(out, key=lambda g: (g.subject, g.rel, g.object))


def edges_of(graph: SceneGraph) -> set[tuple[int, str, int]]:
    """The graph's relations: its own edges if it has any, else computed from its boxes with its thresholds."""
    edges = graph.edges or box_relations(graph.nodes, graph.thresholds)
    return {(e.subject, e.rel, e.object) for e in edges}


def exact_resolver(graph: SceneGraph) -> Resolver:
    """Nodes whose label is exactly the class (the GT graph)."""
    by: dict[str, list[int]] = {}
    for n in graph.nodes:
        by.setdefault(n.label, []).append(n.id)
    return lambda cls: by.get(cls, [])


class Executor:
    """Runs programs on one scene graph through a resolver; returns the answer string, or None when it cannot."""

    def __init__(self, graph: SceneGraph, resolve: Resolver | None = None) -> None:
        self.graph, self.resolve = graph, resolve or exact_resolver(graph)
        self.nodes = {n.id: n for n in graph.nodes}
        self.edges = edges_of(graph)
        self.volumes = {n.id: float(np.prod(n.extent)) for n in graph.nodes}

    def _volume(self, i: int) -> float:
        return self.volumes[i]

    def _one(self, ref: Ref) -> GraphNode | None:
        """The node a reference names: the largest of the class's nodes (a method may split one object in parts)."""
        ids = self.resolve(ref.class_)
        return self.nodes[max(ids, key=lambda i: (self._volume(i), -i))] if ids else None

    def _matches(self, n: GraphNode, p: Exists) -> bool:
        ok = p.color is None or p.color in n.colors
        return ok and (p.material is None or n.material == p.material)

    def _bool(self, p: Exists | Relates | CompareCount | Logic) -> bool | None:
        if isinstance(p, Exists):
            return any(self._matches(self.nodes[i], p) for i in self.resolve(p.class_))
        if isinstance(p, Relates):
            subs, objs = self.resolve(p.subject.class_), self.resolve(p.object.class_)
            return any((s, p.rel, o) in self.edges for s in subs for o in objs) if p.rel != "same_room" else \
                any(self.nodes[s].room is not None and self.nodes[s].room == self.nodes[o].room for s in subs for o in objs)
        if isinstance(p, CompareCount):
            a, b = len(self.resolve(p.a)), len(self.resolve(p.b))
            return a > b if p.cmp == "more" else a < b
        vals = [self._bool(a) for a in p.args]
        if any(v is None for v in vals):
            return None
        return all(vals) if p.op == "and" else any(vals)

    def run(self, p: Program) -> str | None:
        """The program's answer on this graph: "Yes"/"No", a whole number, a label, or None."""
        if isinstance(p, Exists | Relates | CompareCount | Logic):
            v = self._bool(p)
            return None if v is None else (YES if v else NO)
        if isinstance(p, Count):
            return str(len(self.resolve(p.class_)))
        if isinstance(p, CountRelated):
            obj = self._one(p.object)
            if obj is None:
                return None
            return str(sum(1 for (s, r, o) in self.edges if r == p.rel and o == obj.id))
        if isinstance(p, Related):
            sub = self._one(p.subject)
            if sub is None:
                return None
            objs = [o for (s, r, o) in self.edges if s == sub.id and r == p.rel]
            return self.nodes[max(objs, key=lambda i: (self._volume(i), -i))].label if objs else None
        if isinstance(p, Attribute):
            sub = self._one(p.subject)
            if sub is None:
                return None
            return (sub.colors[0] if sub.colors else None) if p.attr == "color" else sub.material
        if isinstance(p, CompareSize):
            a, b = self._one(p.a), self._one(p.b)
            if a is None or b is None:
                return None
            size = (lambda n: n.extent[2]) if p.dim == "taller" else (lambda n: float(np.prod(n.extent)))
            return a.label if size(a) >= size(b) else b.label
        if isinstance(p, Afford):
            found = [i for cls in AFFORDANCES.get(p.affordance, ()) for i in self.resolve(cls)]
            return self.nodes[max(found, key=lambda i: (self._volume(i), -i))].label if found else None
        raise TypeError(f"unknown program {p!r}")
