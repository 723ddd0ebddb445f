"""Labels taken straight from each object's scene lexicon (a single 'lexicon' annotator), for seeding and demos."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from tiermap import schema


def lexicon_labels(scene_jsons: list[Path], visibility_jsons: list[Path], min_frames: int = 1) -> pd.DataFrame:
    """Tidy labels table of every visible object's lexicon."""
    rows = []
    for scene_json, vis_json in zip(scene_jsons, visibility_jsons):
        scene = schema.read_scene(scene_json)
        vis = {int(k): v for k, v in json.loads(Path(vis_json).read_text()).items()}
        for o in scene.objects:
            if vis.get(o.id, {}).get("frames", 0) < min_frames:
                continue
            for cat in schema.CATEGORIES:
                for lbl in getattr(o.lexicon, cat):
                    rows.append({"scene": scene.name, "object_id": o.id, "annotator": "lexicon", "category": cat,
                                 "label": lbl, "raw_label": lbl})
    return schema.validate_labels_frame(pd.DataFrame(rows, columns=list(schema.LABEL_COLUMNS)))
