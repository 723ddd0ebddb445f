"""Coverage-driven camera paths: candidate viewpoints, ray-cast object visibility, greedy set cover, in-place turns."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import open3d as o3d
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from generation.geometry import (
    ObjectGeometry,
    at_samples,
    procedural_geometry,
    ray_scene,
    sample_triangles,
)
from generation.trajectory import (
    STRUCTURE_CLASSES,
    cells_to_xy,
    floor_z,
    join,
    walk_graph,
)
from tiermap.formats.scene import Scene
from tiermap.formats.sequence import Coverage


@dataclass(frozen=True)
class View:
    """What the camera can take in from one spot: field of view, pitch, range and the smallest object worth counting."""

    hfov: float = np.pi / 2
    vfov: float = 2 * np.arctan(0.75)
    pitch: float = -0.25
    view_range: float = 4.0
    min_visible_samples: int = 3
    min_solid_angle: float = 0.003
    margin: float = np.radians(8)


@dataclass
class CoveragePlan:
    """A coverage path: xy waypoints, the waypoint index of each goal, and the yaws the camera turns through there."""

    path: np.ndarray
    goal_index: list[int]
    turns: dict[int, np.ndarray]
    candidates: int = 0
    coverable_objects: int = 0


def object_samples(geometry: list[ObjectGeometry], ids: set[int], n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """n area-weighted surface samples per object in `ids`: (points, unit normals, object ids, area each sample stands for)."""
    rng = np.random.default_rng(seed)
    pts, nrm, own, area = [], [], [], []
    for g in geometry:
        if g.id not in ids or len(g.triangles) == 0:
            continue
        tri = g.vertices[g.triangles]
        cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        a = 0.5 * np.linalg.norm(cross, axis=1)
        if a.sum() <= 0:
            continue
        which, r1, r2 = sample_triangles(a, n, rng)
        pts.append(at_samples(tri, which, r1, r2))
        nrm.append(cross[which] / np.maximum(2 * a[which], 1e-12)[:, None])
        own.append(np.full(n, g.id, dtype=np.int64))
        area.append(np.full(n, a.sum() / n))
    if not pts:
        return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(pts), np.concatenate(nrm), np.concatenate(own), np.concatenate(area)


def visibility_matrix(geometry: list[ObjectGeometry], cameras: np.ndarray, object_ids: list[int], view: View, seed: int = 0,
                      n_samples: int = 32, chunk: int = 1 << 21) -> np.ndarray:
    """(C, K) bool: candidate camera positions (C, 3) that see object k (enough unobstructed samples in range and in view)."""
    pts, nrm, own, area = object_samples(geometry, set(object_ids), n_samples, seed)
    col = np.searchsorted(object_ids, own)
    rc, gid_to_obj = ray_scene(geometry)
    lo, hi = view.pitch - view.vfov / 2 + view.margin, view.pitch + view.vfov / 2 - view.margin
    n_vis = np.zeros(len(cameras) * len(object_ids))
    solid = np.zeros(len(cameras) * len(object_ids))
    step = max(chunk // max(len(pts), 1), 1)
    for c0 in range(0, len(cameras), step):
        cam = cameras[c0: c0 + step]
        d = pts[None] - cam[:, None]  # (c, P, 3)
        dist = np.linalg.norm(d, axis=2)
        elev = np.arctan2(d[..., 2], np.linalg.norm(d[..., :2], axis=2))
        ci, pi = np.nonzero((dist < view.view_range) & (dist > 1e-6) & (elev > lo) & (elev < hi))
        if not len(ci):
            continue
        dd = dist[ci, pi]
        u = d[ci, pi] / dd[:, None]
        rays = np.concatenate([cam[ci], u], axis=1).astype(np.float32)
        hit = rc.cast_rays(o3d.core.Tensor(rays))
        gid = hit["geometry_ids"].numpy().astype(np.int64)
        gid[~np.isfinite(hit["t_hit"].numpy())] = len(gid_to_obj) - 1
        ok = gid_to_obj[gid] == own[pi]
        ci, pi, u, dd = ci[ok], pi[ok], u[ok], dd[ok]
        flat = (c0 + ci) * len(object_ids) + col[pi]
        np.add.at(n_vis, flat, 1)
        # Monte Carlo solid angle of the visible surface: area · |cos| / d² per visible sample.
        np.add.at(solid, flat, area[pi] * np.abs(np.sum(u * nrm[pi], axis=1)) / dd**2)
    n_vis, solid = n_vis.reshape(len(cameras), -1), solid.reshape(len(cameras), -1)
    return (n_vis >= view.min_visible_samples) & (solid >= view.min_solid_angle)


def room_of(scene: Scene, xy: np.ndarray) -> np.ndarray:
    """Index of the room footprint each xy lies in (-1: none; the first room wins on shared walls)."""
    out = np.full(len(xy), -1)
    for k in range(len(scene.rooms) - 1, -1, -1):
        r = scene.rooms[k]
        inside = (xy[:, 0] >= r.min[0]) & (xy[:, 0] <= r.max[0]) & (xy[:, 1] >= r.min[1]) & (xy[:, 1] <= r.max[1])
        out[inside] = k
    return out


def greedy_cover(sets: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Greedy set cover of the (C, U) bool matrix: picked rows in order with the elements each newly covers."""
    left = sets.any(0)
    picks = []
    while left.any():
        gain = sets[:, left].sum(1)
        best = int(np.argmax(gain))
        if gain[best] == 0:
            break
        new = sets[best] & left
        picks.append((best, np.flatnonzero(new)))
        left &= ~new
    return picks


def sweep(azimuths: np.ndarray, half: float, arrive: float) -> np.ndarray:
    """Yaws that bring every azimuth within ±half of the view: the shortest arc, entered from the end nearest `arrive`."""
    a = np.sort(np.mod(azimuths, 2 * np.pi))
    gaps = np.diff(np.concatenate([a, a[:1] + 2 * np.pi]))
    k = int(np.argmax(gaps))
    start, length = a[(k + 1) % len(a)], 2 * np.pi - gaps[k]
    if length <= 2 * half:
        return np.array([start + length / 2])
    ends = np.array([start + half, start + length - half])
    near = np.abs(np.angle(np.exp(1j * (ends - arrive))))
    if near[1] < near[0]:
        ends = ends[::-1]
    n = int(np.ceil(abs(ends[1] - ends[0]) / (np.pi / 2)))
    return np.linspace(ends[0], ends[1], n + 1)


def grid_distances(nodes: list[tuple[int, int]], sources: list[tuple[int, int]]) -> np.ndarray:
    """Shortest 4-connected path lengths (cells) from each source to every node of the region."""
    ij = np.asarray(nodes)
    index = {n: k for k, n in enumerate(nodes)}
    shape = ij.max(0) + 2
    lut = np.full(shape, -1)
    lut[ij[:, 0], ij[:, 1]] = np.arange(len(ij))
    rows, cols = [], []
    for di, dj in ((1, 0), (0, 1)):
        nb = lut[ij[:, 0] + di, ij[:, 1] + dj]
        ok = nb >= 0
        rows.append(np.flatnonzero(ok))
        cols.append(nb[ok])
    r, c = np.concatenate(rows), np.concatenate(cols)
    adj = csr_matrix((np.ones(len(r)), (r, c)), shape=(len(ij), len(ij)))
    return dijkstra(adj, directed=False, indices=[index[s] for s in sources])


def plan_coverage(scene: Scene, geometry: list[ObjectGeometry] | None, seed: int, view: View, spacing: float = 0.5,
                  cell: float = 0.1, robot_radius: float = 0.3, camera_height: float = 1.2,
                  obstacles: np.ndarray | None = None) -> CoveragePlan:
    """Seeded random start, then goals that together see every visible object and enter every room, toured nearest-first."""
    graph, nodes, origin = walk_graph(scene, cell, robot_radius, obstacles)
    geometry = geometry if geometry is not None else [procedural_geometry(o) for o in scene.objects]
    rng = np.random.default_rng(seed)
    start = nodes[int(rng.integers(len(nodes)))]
    k = max(int(round(spacing / cell)), 1)
    cand = [n for n in nodes if n[0] % k == k // 2 and n[1] % k == k // 2] or nodes
    xy = cells_to_xy(cand, origin)
    cams = np.column_stack([xy, np.full(len(xy), floor_z(scene) + camera_height)])
    object_ids = sorted(o.id for o in scene.objects if o.class_name not in STRUCTURE_CLASSES)
    sees = visibility_matrix(geometry, cams, object_ids, view, seed=seed) if object_ids else np.zeros((len(cams), 0), bool)
    rooms = room_of(scene, xy)
    in_room = rooms[:, None] == np.arange(len(scene.rooms))[None]
    picks = greedy_cover(np.concatenate([sees, in_room], axis=1))
    goals = [cand[p] for p, _ in picks]
    # Nearest-neighbour tour by path length on the grid, from the start.
    order, pending = [], list(range(len(goals)))
    if goals:
        where = {n: k for k, n in enumerate(nodes)}
        dist = grid_distances(nodes, [start] + goals)[:, [where[g] for g in goals]]
        at = 0
        while pending:
            nxt = min(pending, key=lambda g: (dist[at, g], g))
            order.append(nxt)
            pending.remove(nxt)
            at = nxt + 1
    cells, at_index = join(scene, graph, [start] + [goals[g] for g in order])
    if len(cells) == 1 and graph.degree(cells[0]):  # one goal at the start: step aside so the path has a heading
        cells.append(min(graph.neighbors(cells[0])))
    path = cells_to_xy(cells, origin)
    turns: dict[int, np.ndarray] = {}
    for step, g in enumerate(order):
        covered = [object_ids[e] for e in picks[g][1] if e < len(object_ids)]
        i = at_index[step + 1]
        if not covered:
            continue
        centres = np.array([scene.object(oid).obb.center[:2] for oid in covered])
        az = np.arctan2(centres[:, 1] - path[i, 1], centres[:, 0] - path[i, 0])
        heading = path[i] - path[i - 1] if i > 0 else path[min(1, len(path) - 1)] - path[0]
        turns[i] = sweep(az, view.hfov / 2 - view.margin, float(np.arctan2(heading[1], heading[0])))
    return CoveragePlan(path=path, goal_index=at_index[1:], turns=turns, candidates=len(cand),
                        coverable_objects=int(sees.any(0).sum()))



def sequence_coverage(scene: Scene, positions: np.ndarray, seen_ids: set[int], min_pixels: int) -> Coverage:
    """meta.json coverage: non-structure objects among `seen_ids` (≥ min_pixels in some frame), rooms holding a camera position."""
    objects = sorted(o.id for o in scene.objects if o.class_name not in STRUCTURE_CLASSES)
    seen = [i for i in objects if i in seen_ids]
    entered = np.unique(room_of(scene, positions[:, :2])) if len(positions) else np.zeros(0, int)
    return Coverage(objects_seen=len(seen), objects_total=len(objects), fraction=round(len(seen) / len(objects), 4) if objects else 1.0,
                    rooms_entered=[scene.rooms[k].name for k in entered if k >= 0], rooms_total=len(scene.rooms), min_pixels=min_pixels,
                    unseen=sorted(set(objects) - set(seen)))
