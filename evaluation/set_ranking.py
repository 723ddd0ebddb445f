"""OpenLex3D set ranking (official `set_based_ranking`): band scores of each object's labels in a point's ranking."""
from __future__ import annotations

import warnings

import numpy as np

# Per-pair sums kept so per-object values can be pooled over points without storing every label score.
FIELDS = ("syn_sum", "syn_n", "sec_sum", "sec_n", "syn_in", "sec_in", "syn_under_sum", "syn_under_n",
          "sec_over_sum", "sec_over_n", "sec_under_sum", "sec_under_n")


def band_scores(rank: np.ndarray, b_l: float, b_r: float, last: int) -> tuple[np.ndarray, np.ndarray]:
    """(left, right) scores: 1 inside [b_l, b_r], linear to 0 at rank 0 (left) or rank `last` (right)."""
    left = 1 + np.minimum(0, (rank - b_l) / (b_l + 1e-8))
    # The official code divides by zero when b_r == last (labels covering the whole prompt list); nothing can rank
    # beyond the last slot, so the right score is 1 there.
    right = 1 - np.maximum(0, (rank - b_r) / (last - b_r)) if last > b_r else np.ones_like(rank, dtype=np.float64)
    return left, right


def pair_sums(ranks_s: np.ndarray, ranks_sec: np.ndarray, n_prompts: int) -> np.ndarray:
    """The FIELDS sums of each pair from the 0-based ranks of its synonyms (pairs, S) and secondary labels (pairs, D+V)."""
    last = n_prompts - 1
    n_s, n_sec = ranks_s.shape[1], ranks_sec.shape[1]
    out = np.zeros((len(ranks_s), len(FIELDS)))
    if n_s:
        left, right = band_scores(ranks_s.astype(np.float64), 0.0, n_s - 1.0, last)
        score = np.minimum(left, right)
        out[:, 0], out[:, 1] = score.sum(1), n_s
        out[:, 4] = (score == 1).sum(1)
        out[:, 6], out[:, 7] = np.where(right < 1, right, 0).sum(1), (right < 1).sum(1)
    if n_sec:
        left, right = band_scores(ranks_sec.astype(np.float64), float(n_s), n_s + n_sec - 1.0, last)
        score = np.minimum(left, right)
        out[:, 2], out[:, 3] = score.sum(1), n_sec
        out[:, 5] = (score == 1).sum(1)
        out[:, 8], out[:, 9] = np.where(left < 1, left, 0).sum(1), (left < 1).sum(1)
        out[:, 10], out[:, 11] = np.where(right < 1, right, 0).sum(1), (right < 1).sum(1)
    return out


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def aggregate(sums: np.ndarray, pair_obj: np.ndarray, pair_count: np.ndarray, last_pair: np.ndarray,
              n_objects: int, definition: str = "official") -> dict[str, float]:
    """Scene values: per-object means (nanmean over objects) from per-pair sums.

    official: overall/synonyms/secondary pool every point × label of the object, the rates and penalties come from
    the object's last GT point only (the official dict assignment overwrites earlier points).
    paper: rates and penalties also pool every point of the object.
    """
    tot = np.zeros((n_objects, len(FIELDS)))
    np.add.at(tot, pair_obj, sums * pair_count[:, None])
    rate_src = tot if definition == "paper" else np.zeros((n_objects, len(FIELDS)))
    if definition != "paper":
        has = last_pair >= 0
        rate_src[has] = sums[last_pair[has]]
    per_obj = {
        "overall": _ratio(tot[:, 0] + tot[:, 2], tot[:, 1] + tot[:, 3]),
        "synonyms": _ratio(tot[:, 0], tot[:, 1]),
        "secondary": _ratio(tot[:, 2], tot[:, 3]),
        "synonym_undershooting": _ratio(rate_src[:, 6], rate_src[:, 7]),
        "secondary_overshooting": _ratio(rate_src[:, 8], rate_src[:, 9]),
        "secondary_undershooting": _ratio(rate_src[:, 10], rate_src[:, 11]),
        "synonym_inlier_rate": _ratio(rate_src[:, 4], rate_src[:, 1]),
        "secondary_inlier_rate": _ratio(rate_src[:, 5], rate_src[:, 3]),
    }
    seen = np.zeros(n_objects, bool)
    seen[pair_obj] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {k: float(np.nanmean(v[seen])) if seen.any() else float("nan") for k, v in per_obj.items()}
