"""Prediction down-sampling as the official loader: Open3D tensor voxel grid, nearest original point's feature."""
from __future__ import annotations

import numpy as np

VOXEL_SIZE = 0.05


def voxel_downsample(points: np.ndarray, voxel: float = VOXEL_SIZE) -> np.ndarray:
    """Voxel centroids with Open3D's tensor API (key floor(p / voxel), no min-bound offset, mean position)."""
    import open3d as o3d

    pc = o3d.t.geometry.PointCloud(o3d.core.Tensor(np.ascontiguousarray(points)))
    return pc.voxel_down_sample(voxel_size=voxel).point.positions.numpy()


def nearest_original(points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Index of each query's nearest original point."""
    from sklearn.neighbors import NearestNeighbors

    # The official load_predicted_features uses this exact call; a 2-point voxel's centroid is equidistant from
    # both points and sklearn's KD-tree picks a different one than scipy's cKDTree would.
    nn = NearestNeighbors(n_neighbors=1, algorithm="auto").fit(points)
    return nn.kneighbors(queries, return_distance=False)[:, 0]


def downsample_predictions(points: np.ndarray, index: np.ndarray, voxel: float = VOXEL_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """(voxel centroids (V, 3), embedding row of each centroid) as the official segmentation loader."""
    ds = voxel_downsample(points, voxel)
    return ds, index[nearest_original(points, ds)]
