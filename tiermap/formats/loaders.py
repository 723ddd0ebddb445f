"""Drop-in configs beside every sequence for the loaders mapping methods already use.

`dataconfig.yaml`: a gradslam / ConceptGraphs dataconfig (`dataset_name: replica`, `camera_params`), so its
`ReplicaDataset` reads `results/frame*.jpg`, `results/depth*.png` / `png_depth_scale` and `traj.txt` with the
sequence's own intrinsics (the stock Replica config would resize to 1200×680 and divide depth by 6553.5).
`nice_slam.yaml`: a NICE-SLAM config inheriting its Replica defaults, with the sequence's `cam:` block and the scene's
bounds. Both use OpenCV intrinsics with integer pixel centres, as camera_params.json does; the world is z-up.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tiermap import atomic
from tiermap.formats.base import SchemaError
from tiermap.formats.sequence import CameraParams

DATACONFIG_FILE = "dataconfig.yaml"
NICE_SLAM_FILE = "nice_slam.yaml"
NICE_SLAM_BASE = "configs/Replica/replica.yaml"
"""NICE-SLAM's own Replica config (tracking and mapping settings), relative to its repository root."""


def dataconfig(camera: CameraParams) -> dict[str, Any]:
    """gradslam/ConceptGraphs dataconfig of a sequence."""
    return {"dataset_name": "replica",
            "camera_params": {"image_height": camera.h, "image_width": camera.w, "fx": camera.fx, "fy": camera.fy,
                              "cx": camera.cx, "cy": camera.cy, "png_depth_scale": camera.depth_scale, "crop_edge": 0}}


def nice_slam_config(camera: CameraParams, bound: list[list[float]], input_folder: str) -> dict[str, Any]:
    """NICE-SLAM config of a sequence: its camera and the scene's [[x0, x1], [y0, y1], [z0, z1]] bounds (metres, world)."""
    if len(bound) != 3 or any(len(b) != 2 or not b[0] < b[1] for b in bound):
        raise SchemaError(NICE_SLAM_FILE, "mapping.bound", "three [min, max] pairs with min < max", bound)
    return {"inherit_from": NICE_SLAM_BASE, "dataset": "replica",
            "cam": {"H": camera.h, "W": camera.w, "fx": camera.fx, "fy": camera.fy, "cx": camera.cx, "cy": camera.cy,
                    "png_depth_scale": camera.depth_scale, "crop_edge": 0},
            "mapping": {"bound": [list(b) for b in bound], "marching_cubes_bound": [list(b) for b in bound]},
            "data": {"input_folder": input_folder, "output": f"output/{input_folder}"}}


def _dump(data: dict[str, Any]) -> str:
    """Block-style YAML in the given key order."""
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def write_loader_configs(sequence_dir: Path | str, camera: CameraParams, bound: list[list[float]], input_folder: str) -> list[Path]:
    """Write dataconfig.yaml and nice_slam.yaml into a sequence folder (atomically, byte-stable)."""
    d = Path(sequence_dir)
    return [atomic.write_text(d / DATACONFIG_FILE, _dump(dataconfig(camera))),
            atomic.write_text(d / NICE_SLAM_FILE, _dump(nice_slam_config(camera, bound, input_folder)))]

