"""Camera paths: free space at robot height, seeded goals, shortest paths, smoothing, timed pose sampling."""
from __future__ import annotations

import networkx as nx
import numpy as np

from tiermap.formats.base import InputError
from tiermap.formats.scene import Scene

STRUCTURE_CLASSES = {"floor", "ceiling", "wall"}
FLOORS = {"floor", "ceiling"}


class NoPathError(InputError):
    """A goal cannot be reached through free space."""


def free_space(scene: Scene, cell: float = 0.1, robot_radius: float = 0.3, height: tuple[float, float] = (0.05, 1.6),
               obstacles: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Boolean occupancy grid of the floor (True = free) and its origin (x0, y0, cell).

    Heights are above the floor (the rooms' lowest z). Obstacles are object boxes (procedural scenes) or, for mesh
    scenes, surface points (N, 3) in that height band, kept `robot_radius` away from.
    """
    if not scene.rooms:
        raise NoPathError(f"scene {scene.name!r}: no rooms, so no free space to walk")
    lo = np.min([r.min for r in scene.rooms], axis=0)
    hi = np.max([r.max for r in scene.rooms], axis=0)
    nx_, ny_ = max(int(np.ceil((hi[0] - lo[0]) / cell)), 1), max(int(np.ceil((hi[1] - lo[1]) / cell)), 1)
    xs = lo[0] + (np.arange(nx_) + 0.5) * cell
    ys = lo[1] + (np.arange(ny_) + 0.5) * cell
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    free = (gx > lo[0] + robot_radius) & (gx < hi[0] - robot_radius) & (gy > lo[1] + robot_radius) & (gy < hi[1] - robot_radius)
    band = (lo[2] + height[0], lo[2] + height[1])
    if obstacles is not None:
        from scipy.ndimage import distance_transform_edt

        p = obstacles[(obstacles[:, 2] > band[0]) & (obstacles[:, 2] < band[1])]
        occ = np.zeros(free.shape, dtype=bool)
        ij = np.floor((p[:, :2] - lo[:2]) / cell).astype(int)
        ok = (ij[:, 0] >= 0) & (ij[:, 0] < nx_) & (ij[:, 1] >= 0) & (ij[:, 1] < ny_)
        occ[ij[ok, 0], ij[ok, 1]] = True
        if occ.any():
            free &= distance_transform_edt(~occ) * cell > robot_radius
    else:
        for o in scene.objects:
            if o.class_name in FLOORS:  # walls are obstacles: paths cross between rooms through door gaps only
                continue
            R, c, e = np.asarray(o.obb.R), np.asarray(o.obb.center), np.asarray(o.obb.extent) / 2
            zhalf = (np.abs(R) @ e)[2]
            if c[2] + zhalf < band[0] or c[2] - zhalf > band[1]:
                continue
            half = (np.abs(R) @ e)[:2] + robot_radius
            free &= ~((np.abs(gx - c[0]) < half[0]) & (np.abs(gy - c[1]) < half[1]))
    if not free.any():
        raise NoPathError(f"scene {scene.name!r}: no free space at robot height (radius {robot_radius} m)")
    return free, np.array([lo[0], lo[1], cell])


def floor_z(scene: Scene) -> float:
    """Height of the floor: the lowest z of the scene's rooms."""
    return float(np.min([r.min[2] for r in scene.rooms])) if scene.rooms else 0.0


def walk_graph(scene: Scene, cell: float = 0.1, robot_radius: float = 0.3, obstacles: np.ndarray | None = None
               ) -> tuple[nx.Graph, list[tuple[int, int]], np.ndarray]:
    """4-connected graph of the largest free region, its sorted cells, and the grid origin (x0, y0, cell)."""
    free, origin = free_space(scene, cell, robot_radius, obstacles=obstacles)
    graph = nx.grid_2d_graph(*free.shape)
    graph.remove_nodes_from([tuple(ij) for ij in np.argwhere(~free)])
    # Keep the largest connected region so every goal is reachable.
    region = max(nx.connected_components(graph), key=len)
    return graph.subgraph(region).copy(), sorted(region), origin


def join(scene: Scene, graph: nx.Graph, picks: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], list[int]]:
    """Cells of the A* paths through the picks in order, and the index of each pick in that list."""
    cells: list[tuple[int, int]] = [picks[0]]
    at = [0]
    for a, b in zip(picks[:-1], picks[1:]):
        try:
            seg = nx.astar_path(graph, a, b, heuristic=lambda u, v: np.hypot(u[0] - v[0], u[1] - v[1]))
        except nx.NetworkXNoPath:
            raise NoPathError(f"scene {scene.name!r}: no collision-free path from {a} to {b}") from None
        cells.extend(seg[1:])
        at.append(len(cells) - 1)
    return cells, at


def cells_to_xy(cells: list[tuple[int, int]] | np.ndarray, origin: np.ndarray) -> np.ndarray:
    """Grid cells → (M, 2) xy of their centres."""
    x0, y0, c = origin
    ij = np.asarray(cells, dtype=float).reshape(-1, 2)
    return np.stack([x0 + (ij[:, 0] + 0.5) * c, y0 + (ij[:, 1] + 0.5) * c], axis=1)


def plan_path(scene: Scene, seed: int, n_goals: int = 3, cell: float = 0.1, robot_radius: float = 0.3,
              obstacles: np.ndarray | None = None) -> np.ndarray:
    """Seeded random start + goals joined by grid shortest paths (A*), as (M, 2) xy waypoints."""
    graph, nodes, origin = walk_graph(scene, cell, robot_radius, obstacles)
    rng = np.random.default_rng(seed)
    picks = [nodes[i] for i in rng.choice(len(nodes), size=n_goals + 1, replace=len(nodes) <= n_goals)]
    return cells_to_xy(join(scene, graph, picks)[0], origin)


def smooth(path: np.ndarray, window: int = 5) -> np.ndarray:
    """Moving-average smoothing that keeps the end points."""
    if len(path) < 3:
        return path
    k = min(window, len(path))
    pad = np.concatenate([np.repeat(path[:1], k // 2, 0), path, np.repeat(path[-1:], k // 2, 0)])
    kernel = np.ones(k) / k
    out = np.stack([np.convolve(pad[:, d], kernel, mode="valid") for d in range(2)], axis=1)[: len(path)]
    out[0], out[-1] = path[0], path[-1]
    return out


def look_at_pose(position: np.ndarray, yaw: float, pitch: float) -> np.ndarray:
    """Camera-to-world 4×4 in OpenCV axes (x right, y down, z forward) for a z-up world."""
    fwd = np.array([np.cos(yaw) * np.cos(pitch), np.sin(yaw) * np.cos(pitch), np.sin(pitch)])
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    down = np.cross(fwd, right)
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = right, down, fwd, position
    return T


def sample_poses(path: np.ndarray, linear: float, angular: float, fps: float, height: float = 1.2, pitch: float = -0.25,
                 turns: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """Poses along the path at the given speeds: each step moves ≤ linear/fps and turns ≤ angular/fps.

    `turns` maps a waypoint index to yaws (radians, each step under π) the camera turns through in place there.
    """
    keep = np.concatenate([[True], np.linalg.norm(np.diff(path, axis=0), axis=1) > 1e-9])
    kept_index = np.cumsum(keep) - 1
    path = path[keep]
    if len(path) < 2:
        raise NoPathError("path has fewer than two distinct points")
    seg = np.diff(path, axis=0)
    heading = np.arctan2(seg[:, 1], seg[:, 0])
    # One knot per waypoint facing along the segment into it, then the waypoint's in-place turns.
    turns = {int(kept_index[i]): np.asarray(y, dtype=float) for i, y in (turns or {}).items() if len(y)}
    counts = np.ones(len(path), dtype=int)
    for i, y in turns.items():
        counts[i] += len(y)
    xy = np.repeat(path, counts, axis=0)
    yaw = np.repeat(np.concatenate([heading[:1], heading]), counts)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    for i, y in turns.items():
        yaw[first[i] + 1: first[i] + 1 + len(y)] = y
    yaw = np.unwrap(yaw)
    # Time per knot step is the larger of translation time and turn time.
    dt = np.maximum(np.linalg.norm(np.diff(xy, axis=0), axis=1) / linear, np.abs(np.diff(yaw)) / angular)
    t_knots = np.concatenate([[0.0], np.cumsum(dt)])
    t = np.arange(0.0, t_knots[-1] + 1e-9, 1.0 / fps)
    x = np.interp(t, t_knots, xy[:, 0])
    y = np.interp(t, t_knots, xy[:, 1])
    a = np.interp(t, t_knots, yaw)
    return np.stack([look_at_pose(np.array([xi, yi, height]), ai, pitch) for xi, yi, ai in zip(x, y, a)])
