"""Procedural textures that carry depictions: patterns, motif silhouettes and words."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

SIZE = 128


def _ink(color: tuple[float, float, float]) -> tuple[int, int, int]:
    """A contrasting drawing colour for a base colour."""
    lum = 0.3 * color[0] + 0.59 * color[1] + 0.11 * color[2]
    return (25, 25, 30) if lum > 0.5 else (240, 236, 225)


def _motif(d: ImageDraw.ImageDraw, name: str, ink: tuple[int, int, int], c: float = SIZE / 2, r: float = SIZE * 0.32) -> None:
    if name == "sun":
        d.ellipse([c - r / 2, c - r / 2, c + r / 2, c + r / 2], fill=(240, 190, 40))
        for a in np.linspace(0, 2 * np.pi, 12, endpoint=False):
            d.line([c + 0.6 * r * np.cos(a), c + 0.6 * r * np.sin(a), c + r * np.cos(a), c + r * np.sin(a)], fill=(240, 190, 40), width=4)
    elif name == "house":
        d.rectangle([c - r * 0.7, c, c + r * 0.7, c + r], fill=ink)
        d.polygon([(c - r, c), (c, c - r), (c + r, c)], fill=(180, 40, 40))
    elif name == "tree":
        d.rectangle([c - r * 0.12, c + r * 0.2, c + r * 0.12, c + r], fill=(110, 70, 30))
        d.ellipse([c - r * 0.7, c - r, c + r * 0.7, c + r * 0.4], fill=(40, 130, 50))
    elif name == "star":
        pts = [(c + (r if k % 2 == 0 else r * 0.4) * np.sin(k * np.pi / 5), c - (r if k % 2 == 0 else r * 0.4) * np.cos(k * np.pi / 5)) for k in range(10)]
        d.polygon(pts, fill=(245, 200, 30))
    elif name == "heart":
        d.ellipse([c - r, c - r * 0.6, c, c + r * 0.2], fill=(210, 30, 60))
        d.ellipse([c, c - r * 0.6, c + r, c + r * 0.2], fill=(210, 30, 60))
        d.polygon([(c - r * 0.97, c - r * 0.05), (c + r * 0.97, c - r * 0.05), (c, c + r)], fill=(210, 30, 60))
    elif name in ("cat", "dog"):
        d.ellipse([c - r * 0.8, c - r * 0.1, c + r * 0.6, c + r * 0.7], fill=ink)  # body
        d.ellipse([c + r * 0.2, c - r * 0.6, c + r * 0.9, c + r * 0.1], fill=ink)  # head
        if name == "cat":
            d.polygon([(c + r * 0.25, c - r * 0.4), (c + r * 0.35, c - r * 0.9), (c + r * 0.5, c - r * 0.5)], fill=ink)
            d.polygon([(c + r * 0.6, c - r * 0.5), (c + r * 0.8, c - r * 0.9), (c + r * 0.85, c - r * 0.35)], fill=ink)
        else:
            d.ellipse([c + r * 0.7, c - r * 0.5, c + r * 1.0, c + r * 0.1], fill=ink)  # floppy ear
        d.line([c - r * 0.8, c + r * 0.2, c - r * 1.1, c - r * 0.3], fill=ink, width=5)  # tail


@lru_cache(maxsize=256)
def texture_image(texture: str, color: tuple[float, float, float], text: str | None = None) -> np.ndarray:
    """An RGB uint8 SIZE×SIZE texture for a pattern, motif or words on the base colour."""
    base = tuple(int(255 * v) for v in color)
    ink = _ink(color)
    im = Image.new("RGB", (SIZE, SIZE), base)
    d = ImageDraw.Draw(im)
    s = SIZE
    if texture == "stripes":
        for x in range(0, s, 16):
            d.rectangle([x, 0, x + 7, s], fill=ink)
    elif texture == "checks":
        for i in range(0, s, 16):
            for j in range(0, s, 16):
                if (i + j) // 16 % 2 == 0:
                    d.rectangle([i, j, i + 15, j + 15], fill=ink)
    elif texture == "polka dots":
        for i in range(8, s, 24):
            for j in range(8 + (i // 24 % 2) * 12, s, 24):
                d.ellipse([i - 5, j - 5, i + 5, j + 5], fill=ink)
    elif texture == "flowers":
        for cx, cy in ((32, 32), (96, 40), (40, 96), (100, 100)):
            for a in np.linspace(0, 2 * np.pi, 6, endpoint=False):
                d.ellipse([cx + 10 * np.cos(a) - 7, cy + 10 * np.sin(a) - 7, cx + 10 * np.cos(a) + 7, cy + 10 * np.sin(a) + 7], fill=(220, 90, 150))
            d.ellipse([cx - 5, cy - 5, cx + 5, cy + 5], fill=(250, 210, 60))
    elif texture == "words":
        d.rectangle([6, s // 2 - 18, s - 6, s // 2 + 18], fill=(250, 250, 245))
        d.text((12, s // 2 - 12), (text or "text").upper(), fill=(20, 20, 20), font_size=22)
    else:
        _motif(d, texture, ink)
    return np.asarray(im)
