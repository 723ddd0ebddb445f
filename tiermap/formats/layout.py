"""Where every file of a dataset lives: folder layout and file names, defined once."""
from __future__ import annotations

from pathlib import Path

from tiermap.formats.benchbot import OBJECTS_FILE, read_benchbot_gt
from tiermap.formats.openlex3d import (
    GT_CATEGORIES_FILE,
    PREPARED_SEMANTICS_DIR,
    PROMPT_LIST_FILE,
    QUERY_LEVELS,
    query_mapping_file,
    read_gt_categories,
    read_query_mapping,
)
from tiermap.formats.records import RELEASE_FILE, RELEASE_NOTES, VALIDATION_FILE


class DatasetPaths:
    """Paths of one dataset under the data root (the layout of the data contract)."""

    def __init__(self, root: Path | str, name: str) -> None:
        self.root = Path(root)
        self.name = name
        self.dir = self.root / name

    def scene_dir(self, scene: str) -> Path:
        """datasets/<d>/scenes/<scene>/."""
        return self.dir / "scenes" / scene

    def sequence_dir(self, scene: str, condition: str) -> Path:
        """datasets/<d>/sequences/<scene>/<condition>/."""
        return self.dir / "sequences" / scene / condition

    @property
    def gt(self) -> Path:
        """datasets/<d>/gt/."""
        return self.dir / "gt"

    @property
    def labels(self) -> Path:
        """datasets/<d>/labels/."""
        return self.dir / "labels"

    @property
    def prompt_list(self) -> Path:
        """datasets/<d>/gt/prompt_list.txt (per dataset, as the official layout)."""
        return self.gt / PROMPT_LIST_FILE

    @property
    def validation_report(self) -> Path:
        """datasets/<d>/validation.json, written by `tiermap validate` (git-tracked metrics)."""
        return self.dir / VALIDATION_FILE

    @property
    def release_notes(self) -> Path:
        """datasets/<d>/RELEASE.md."""
        return self.dir / RELEASE_NOTES

    @property
    def release_manifest(self) -> Path:
        """datasets/<d>/release.json (what the last release contained)."""
        return self.dir / RELEASE_FILE

    def gt_scenes(self) -> list[str]:
        """Scenes that have a GT folder (prepared_semantics/ holds every scene's ScanNet++-style copy, not a scene)."""
        if not self.gt.is_dir():
            return []
        return sorted(p.name for p in self.gt.iterdir() if p.is_dir() and p.name != PREPARED_SEMANTICS_DIR)


GT_READERS = {
    GT_CATEGORIES_FILE: read_gt_categories,
    **{query_mapping_file(level): read_query_mapping for level in QUERY_LEVELS},
    OBJECTS_FILE: read_benchbot_gt,
}
"""The files of gt/<scene>/ and the reader of each."""
