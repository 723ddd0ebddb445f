"""Where every file of a dataset lives: folder layout and file names, defined once."""
from __future__ import annotations

import re
from pathlib import Path

from tiermap.formats.base import SchemaError
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


NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
NAME_RULE = "a plain name: a letter or digit, then letters, digits, '_', '.' or '-' (no path separator, no leading dot)"
"""Dataset, scene and condition names are one folder each under the data root: never a path, never hidden, never `..`."""


def name_error(value: object) -> str | None:
    """Why `value` is not a plain name (None when it is one)."""
    return None if isinstance(value, str) and NAME_RE.fullmatch(value) else NAME_RULE


def plain_name(value: str, what: str, where: Path | str = "<options>") -> str:
    """`value` when it is a plain name, else a SchemaError naming `where` and the field `what`."""
    if name_error(value):
        raise SchemaError(where, what, NAME_RULE, value)
    return value


class DatasetPaths:
    """Paths of one dataset under the data root (the layout of the data contract); names are checked to be plain names."""

    def __init__(self, root: Path | str, name: str) -> None:
        self.root = Path(root)
        self.name = plain_name(name, "dataset", self.root)
        self.dir = self.root / name

    def scene_folder(self, kind: str, scene: str) -> Path:
        """datasets/<d>/<kind>/<scene>/ (scenes, build, closeups, crops, previews, gt, ...)."""
        if scene == PREPARED_SEMANTICS_DIR:  # gt/prepared_semantics/ holds every scene's ScanNet++-style copy
            raise SchemaError(self.dir, "scene", f"a scene name other than {PREPARED_SEMANTICS_DIR!r} (a folder of gt/)", scene)
        return self.dir / kind / plain_name(scene, "scene", self.dir)

    def scene_dir(self, scene: str) -> Path:
        """datasets/<d>/scenes/<scene>/."""
        return self.scene_folder("scenes", scene)

    def sequence_dir(self, scene: str, condition: str) -> Path:
        """datasets/<d>/sequences/<scene>/<condition>/."""
        return self.scene_folder("sequences", scene) / plain_name(condition, "condition", self.dir)

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
