"""Pictures to look at: a contact sheet (same frames, every condition) and a top-down map per scene."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw
from scipy.spatial import ConvexHull

from generation.geometry import box_corners
from tiermap.formats.scene import Scene
from tiermap.formats.sequence import open_sequence, read_rgb


def contact_sheet(sequence_dirs: dict[str, Path], out: Path, n_frames: int = 4, thumb_w: int = 240) -> Path:
    """Rows = conditions, columns = the same path positions (fractions of each sequence) under each condition."""
    rows = []
    for cond, d in sequence_dirs.items():
        seq = open_sequence(d)
        picks = [seq.rgb[int(round(f * (len(seq.rgb) - 1)))] for f in np.linspace(0, 1, n_frames)]
        rows.append((cond, [Image.fromarray(read_rgb(p, seq.shape)) for p in picks]))
    w0, h0 = rows[0][1][0].size
    tw, th = thumb_w, int(thumb_w * h0 / w0)
    label_w = 110
    sheet = Image.new("RGB", (label_w + n_frames * tw, len(rows) * th), "white")
    draw = ImageDraw.Draw(sheet)
    for r, (cond, ims) in enumerate(rows):
        draw.text((6, r * th + th // 2 - 6), cond, fill="black")
        for c, im in enumerate(ims):
            sheet.paste(im.resize((tw, th)), (label_w + c * tw, r * th))
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out)
    return out


def topdown_map(scene: Scene, traj: np.ndarray, out: Path) -> Path:
    """Top-down PNG: object footprints (oriented boxes) with class names, and the camera path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 6))
    for o in scene.objects:
        if o.class_name in ("floor", "ceiling"):
            continue
        c = box_corners(o.obb)[:, :2]
        hull = ConvexHull(c, qhull_options="QJ")  # the footprint of a box in any orientation (mesh scenes' PCA boxes)
        top = c[[*hull.vertices, hull.vertices[0]]]
        ax.plot(top[:, 0], top[:, 1], lw=1, color="0.3" if o.class_name == "wall" else "tab:blue")
        if o.class_name != "wall":
            ax.text(*np.asarray(o.obb.center)[:2], f"{o.class_name} {o.id}", fontsize=6, ha="center")
    ax.plot(traj[:, 0, 3], traj[:, 1, 3], "-", color="tab:red", lw=1.5, label="camera path")
    ax.quiver(traj[::3, 0, 3], traj[::3, 1, 3], traj[::3, 0, 2], traj[::3, 1, 2], color="tab:red", scale=25, width=0.003)
    ax.plot(traj[0, 0, 3], traj[0, 1, 3], "o", color="tab:green", label="start")
    ax.set_aspect("equal")
    ax.set_title(f"{scene.name}: objects and camera path")
    ax.legend(loc="upper right", fontsize=7)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out
