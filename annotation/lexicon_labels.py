"""Labels taken straight from each object's scene lexicon (a single 'lexicon' annotator), for seeding and demos."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from tiermap.formats.crops import read_visibility
from tiermap.formats.labels import LABEL_COLUMNS, validate_labels_frame
from tiermap.formats.openlex3d import CATEGORIES
from tiermap.formats.scene import read_scene


def lexicon_labels(scene_jsons: list[Path], visibility_jsons: list[Path], min_frames: int = 1) -> pd.DataFrame:
    """Tidy labels table of every visible object's lexicon."""
    rows = []
    for scene_json, vis_json in zip(scene_jsons, visibility_jsons):
        scene = read_scene(scene_json)
        vis = read_visibility(vis_json)
        for o in scene.objects:
            if o.id not in vis or vis[o.id].frames < min_frames:
                continue
            for cat in CATEGORIES:
                for lbl in getattr(o.lexicon, cat):
                    rows.append({"scene": scene.name, "object_id": o.id, "annotator": "lexicon", "category": cat,
                                 "label": lbl, "raw_label": lbl})
    return validate_labels_frame(pd.DataFrame(rows, columns=list(LABEL_COLUMNS)))
