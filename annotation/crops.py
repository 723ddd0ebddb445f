"""Images annotators see in Label Studio (OpenLex3D protocol): a masked crop, a context crop and K full views per object.

The masked and context crops come from the object's dedicated close-up render (closeups/<scene>/, generation.closeup)
when there is one, else from its best sequence frame; the K best sequence frames stay as context frames (how the
object looks in the data).

Layout of the output folder (written atomically as a whole):
    index.json                       CropIndex: parameters, one CropRecord per object (files + sha256), skipped objects
    <object_id>/crop.png             RGBA crop of the close-up (or best view), alpha = the exact instance mask (nearest-resized)
    <object_id>/context.png          padded crop of the close-up (or best view), object outlined
    <object_id>/frame_<i>.jpg        the chosen full frames, object outlined
    <object_id>/views.json           CropViews: the close-up used, chosen frames, pixels, boxes, border flags
"""
from __future__ import annotations

import hashlib
import io
import math
from collections import OrderedDict
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm import tqdm

from annotation import views
from tiermap.atomic import atomic_dir
from tiermap.formats.base import SchemaError, write_model
from tiermap.formats.crops import (
    CONTEXT_FILE,
    CROP_FILE,
    INDEX_FILE,
    VIEWS_FILE,
    CloseupView,
    CropCloseup,
    CropIndex,
    CropRecord,
    CropSkip,
    CropView,
    CropViews,
    read_closeup_index,
    read_visibility,
    write_crop_index,
)
from tiermap.formats.scene import read_scene
from tiermap.formats.sequence import Sequence, open_sequence, read_instance, read_rgb

OUTLINE_RGB = (0, 255, 0)
"""Outline colour (bright green; magenta is avoided because OpenLex3D's instructions reserve it for privacy masks)."""
OUTLINE_PX = 2
JPEG_QUALITY = 90


def dilate(mask: np.ndarray, r: int) -> np.ndarray:
    """Binary dilation by a (2r+1)² square, separable shifts (no per-pixel loops)."""
    out = mask.copy()
    for axis in (0, 1):
        src = out.copy()
        for s in range(1, r + 1):
            if axis == 0:
                out[s:] |= src[:-s]
                out[:-s] |= src[s:]
            else:
                out[:, s:] |= src[:, :-s]
                out[:, :-s] |= src[:, s:]
    return out


def outline(rgb: np.ndarray, mask: np.ndarray, px: int = OUTLINE_PX, color: tuple[int, int, int] = OUTLINE_RGB) -> np.ndarray:
    """Copy of rgb with a px-wide contour drawn just outside the mask."""
    out = rgb.copy()
    out[dilate(mask, px) & ~mask] = color
    return out


def fit_size(w: int, h: int, size: int) -> tuple[int, int]:
    """(w, h) scaled so the longer side is `size`, keeping the aspect ratio."""
    s = size / max(w, h)
    return max(1, int(w * s + 0.5)), max(1, int(h * s + 0.5))


def resize_pair(rgb: np.ndarray, mask: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Resize an RGB crop (bicubic) and its mask (nearest neighbour) so the longer side is `size`."""
    h, w = mask.shape
    wh = fit_size(w, h, size)
    if wh == (w, h):
        return rgb, mask
    big = np.asarray(Image.fromarray(rgb).resize(wh, Image.Resampling.BICUBIC))
    m = np.asarray(Image.fromarray(mask.astype(np.uint8) * 255).resize(wh, Image.Resampling.NEAREST)) > 0
    return big, m


def context_box(box: np.ndarray | list[int], pad: float, w: int, h: int) -> list[int]:
    """Box [x0, y0, x1, y1) grown by `pad` × its width/height on each side, clipped to the image."""
    x0, y0, x1, y1 = (int(v) for v in box)
    gx, gy = pad * (x1 - x0), pad * (y1 - y0)
    return [max(0, math.floor(x0 - gx)), max(0, math.floor(y0 - gy)), min(w, math.ceil(x1 + gx)), min(h, math.ceil(y1 + gy))]


def masked_crop(rgb: np.ndarray, mask: np.ndarray, box: list[int], size: int) -> Image.Image:
    """RGBA crop of the box: alpha 255 on the mask, 0 (and black) elsewhere, longer side `size`."""
    x0, y0, x1, y1 = box
    c_rgb, c_mask = resize_pair(rgb[y0:y1, x0:x1], mask[y0:y1, x0:x1], size)
    rgba = np.concatenate([c_rgb, (c_mask * 255).astype(np.uint8)[..., None]], axis=2)
    rgba[~c_mask] = 0
    return Image.fromarray(rgba, "RGBA")


def context_crop(rgb: np.ndarray, mask: np.ndarray, box: list[int], size: int) -> Image.Image:
    """Unmasked crop of the box with the object outlined, longer side `size` (outline drawn after resizing)."""
    x0, y0, x1, y1 = box
    c_rgb, c_mask = resize_pair(rgb[y0:y1, x0:x1], mask[y0:y1, x0:x1], size)
    return Image.fromarray(outline(c_rgb, c_mask), "RGB")


def encode(img: Image.Image, fmt: str) -> bytes:
    """Image → PNG/JPEG bytes (deterministic: no timestamps, fixed quality)."""
    buf = io.BytesIO()
    if fmt == "JPEG":
        img.save(buf, format="JPEG", quality=JPEG_QUALITY)
    else:
        img.save(buf, format="PNG")
    return buf.getvalue()


def content_hash(files: list[tuple[str, bytes]]) -> str:
    """sha256 over (name, sha256 of bytes) of each file, in the given order."""
    h = hashlib.sha256()
    for name, data in files:
        h.update(name.encode("utf-8") + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


class _FrameCache:
    """The last few (rgb, instance) frames read, so objects sharing a view read it once."""

    def __init__(self, seq: Sequence, maxsize: int = 16) -> None:
        self.seq, self.maxsize = seq, maxsize
        self.items: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def get(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(rgb (h, w, 3) uint8, instance (h, w) uint16) of a sequence row."""
        if row in self.items:
            self.items.move_to_end(row)
            return self.items[row]
        pair = (read_rgb(self.seq.rgb[row], self.seq.shape), read_instance(self.seq.instance[row], self.seq.shape))
        self.items[row] = pair
        if len(self.items) > self.maxsize:
            self.items.popitem(last=False)
        return pair


def _check_args(k: int, min_pixels: int, pad: float, size: int) -> None:
    """Reject parameters that cannot give crops."""
    if k < 1 or size < 1 or min_pixels < 0 or not (pad >= 0 and math.isfinite(pad)):
        raise ValueError(f"write_crops: expected k >= 1, size >= 1, min_pixels >= 0, finite pad >= 0 "
                         f"(got k={k}, size={size}, min_pixels={min_pixels}, pad={pad})")


def mask_box(mask: np.ndarray) -> list[int]:
    """Box [x0, y0, x1, y1) of a non-empty mask."""
    ys, xs = np.nonzero(mask.any(1))[0], np.nonzero(mask.any(0))[0]
    return [int(xs[0]), int(ys[0]), int(xs[-1]) + 1, int(ys[-1]) + 1]


def read_closeups(closeup_dir: Path, scene: str) -> dict[int, CloseupView]:
    """The best rendered close-up per object id of a closeups/<scene>/ folder (objects flagged there are left out)."""
    path = Path(closeup_dir) / INDEX_FILE
    if not path.is_file():
        raise SchemaError(path, "<file>", "a close-ups index (run `tiermap generate closeups` first)")
    index = read_closeup_index(path)
    if index.scene != scene:
        raise SchemaError(path, "scene", f"close-ups of scene {scene!r}", index.scene)
    return {o.object_id: o.rendered()[0] for o in index.objects if o.rendered()}


def load_closeup(closeup_dir: Path, view: CloseupView, object_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(rgb, object mask) of a rendered close-up; an instance image without the object is a SchemaError."""
    inst_path = Path(closeup_dir) / str(view.instance)
    inst = read_instance(inst_path, None)
    shape = inst.shape
    mask = inst == object_id
    if int(mask.sum()) != view.pixels:
        raise SchemaError(inst_path, "pixels", f"{view.pixels} pixels of object {object_id} as index.json says", int(mask.sum()))
    return read_rgb(Path(closeup_dir) / str(view.rgb), shape), mask


def write_crops(scene_json: Path, sequence_dir: Path, visibility_json: Path, out_dir: Path, k: int = 3, min_pixels: int = 50,
                pad: float = 0.25, size: int = 256, closeup_dir: Path | None = None) -> CropIndex:
    """Select the best k views of every visible object and write its crop, context, frames and views.json; return the index.

    With `closeup_dir` (closeups/<scene>/), crop.png and context.png come from each object's close-up render."""
    _check_args(k, min_pixels, pad, size)
    scene_json, sequence_dir, visibility_json, out_dir = map(Path, (scene_json, sequence_dir, visibility_json, out_dir))
    scene = read_scene(scene_json)
    vis = read_visibility(visibility_json)
    known = {o.id for o in scene.objects}
    unknown = sorted(set(vis) - known)
    if unknown:
        raise SchemaError(visibility_json, str(unknown[0]), f"ids of objects in {scene_json} (scene {scene.name!r})", unknown[0])
    closeups = read_closeups(Path(closeup_dir), scene.name) if closeup_dir is not None else {}
    seq = open_sequence(sequence_dir)
    h, w = seq.shape
    objs = sorted(scene.objects, key=lambda o: o.id)
    visible = [o for o in objs if o.id in vis and vis[o.id].frames > 0]
    stats = views.score_frames(seq, [o.id for o in visible])
    picks = views.select_all(stats, seq.poses, {o.id: np.asarray(o.obb.center) for o in visible}, k, min_pixels)
    col = {oid: c for c, oid in enumerate(stats.ids.tolist())}
    skipped = []
    for o in objs:
        if o.id not in vis or vis[o.id].frames == 0:
            skipped.append(CropSkip(object_id=o.id, reason="not visible in the reference sequence (visibility.json)"))
        elif o.id not in picks:
            most = int(stats.area[:, col[o.id]].max(initial=0))
            skipped.append(CropSkip(object_id=o.id, reason=f"fewer than {min_pixels} pixels in every frame (at most {most})"))
    cache = _FrameCache(seq)
    records = []
    with atomic_dir(out_dir) as tmp:
        for o in tqdm([o for o in objs if o.id in picks], desc=f"crops {scene.name}", unit="object", leave=False, disable=None):
            c, rows = col[o.id], picks[o.id]
            folder = tmp / str(o.id)
            folder.mkdir()
            files: list[tuple[str, bytes]] = []
            chosen = []
            cu, used = closeups.get(o.id), None
            if cu is not None:
                cu_rgb, cu_mask = load_closeup(Path(closeup_dir), cu, o.id)  # type: ignore[arg-type]
                cu_box, (ch, cw) = mask_box(cu_mask), cu_mask.shape
                ctx = context_box(cu_box, pad, cw, ch)
                files.append((CROP_FILE, encode(masked_crop(cu_rgb, cu_mask, cu_box, size), "PNG")))
                files.append((CONTEXT_FILE, encode(context_crop(cu_rgb, cu_mask, ctx, size), "PNG")))
                used = CropCloseup(rgb=str(cu.rgb), instance=str(cu.instance), azimuth_deg=cu.azimuth_deg, elevation_deg=cu.elevation_deg,
                                          distance=cu.distance, pixels=int(cu.pixels or 0), bbox=cu_box, image_size=[cw, ch])
            for i, row in enumerate(rows):
                rgb, inst = cache.get(row)
                mask = inst == o.id
                box = [int(v) for v in stats.bbox[row, c]]
                if i == 0 and used is None:
                    ctx = context_box(box, pad, w, h)
                    files.append((CROP_FILE, encode(masked_crop(rgb, mask, box, size), "PNG")))
                    files.append((CONTEXT_FILE, encode(context_crop(rgb, mask, ctx, size), "PNG")))
                name = f"frame_{i}.jpg"
                files.append((name, encode(Image.fromarray(outline(rgb, mask), "RGB"), "JPEG")))
                chosen.append(CropView(frame=int(seq.frames[row]), file=name, pixels=int(stats.area[row, c]), bbox=box,
                                              border_cut=bool(stats.border[row, c])))
            for name, data in files:
                (folder / name).write_bytes(data)
            write_model(CropViews(scene=scene.name, condition=seq.dir.name, object_id=o.id, class_name=o.class_name,
                                                image_size=[w, h], context_bbox=ctx, views=chosen, closeup=used), folder / VIEWS_FILE)
            rel = f"{o.id}/"
            records.append(CropRecord(
                scene=scene.name, object_id=o.id, class_name=o.class_name, crop=rel + CROP_FILE, context=rel + CONTEXT_FILE,
                frames=[rel + v.file for v in chosen], views=rel + VIEWS_FILE, sha256=content_hash(files),
                closeup_pixels=used.pixels if used else None))
        index = CropIndex(scene=scene.name, condition=seq.dir.name, k=k, min_pixels=min_pixels, pad=pad, size=size,
                                 objects=records, skipped=skipped)
        write_crop_index(index, tmp / INDEX_FILE)
    return index
