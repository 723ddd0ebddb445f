"""Scene sources behind one interface: procedural (embedded default), Replica, ReplicaCAD, HM3D, ScanNet++, a generic labelled mesh, habitat-sim."""
from __future__ import annotations

from pathlib import Path

from tiermap.formats.base import InputError
from tiermap.formats.scene import SCENE_SOURCES, Scene, SceneMesh

SOURCES = SCENE_SOURCES


def build_scene(name: str, source: str, seed: int = 0, input_path: Path | str | None = None, rooms: list[str] | None = None,
                classes: Path | str | None = None, up: str | None = None) -> tuple[Scene, SceneMesh | None]:
    """The scene and, for mesh sources, its normalised labelled mesh (written beside scene.json as mesh.ply)."""
    if source not in SOURCES:
        raise InputError(f"unknown scene source {source!r}: expected one of {', '.join(SOURCES)}")
    if source == "procedural":
        from generation.procedural import generate_scene

        return generate_scene(name, seed=seed, rooms=rooms), None
    if input_path is None:
        raise InputError(f"scene {name!r}: source {source!r} needs --input PATH (or `input:` in params.yaml scene.{name})")
    path = Path(input_path)
    if not path.exists():
        raise InputError(f"{path}: missing, expected the {source} scene input of scene {name!r}")
    if source == "replica":
        from generation.mesh_scene import replica_scene

        return replica_scene(name, path, seed)
    if source == "replicacad":
        from generation.replicacad import replicacad_scene

        return replicacad_scene(name, path, seed, Path(classes) if classes else None)
    if source == "hm3d":
        from generation.hm3d import hm3d_scene

        return hm3d_scene(name, path, seed)
    if source == "scannetpp":
        from generation.scannetpp import scannetpp_scene

        return scannetpp_scene(name, path, seed)
    if source == "mesh":
        from generation.mesh_scene import generic_mesh_scene

        return generic_mesh_scene(name, path, seed, Path(classes) if classes else None, up)
    from generation.habitat import habitat_scene

    return habitat_scene(name, path, seed), None
