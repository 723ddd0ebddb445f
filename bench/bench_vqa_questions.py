"""Report question-generation speed: the GT graph's relations and the question set of a 1,000-object scene.

    python bench/bench_vqa_questions.py [--objects 1000] [--repeat 3]

Target: under 5 s on 2 cores for 1,000 objects (relations from boxes included). Printed beside it: the relation
computation alone, and the same generation at a tenth of the objects (how it scales).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from generation.library import LIBRARY, ROOM_KINDS  # noqa: E402
from generation.vqa_questions import generate_questions  # noqa: E402
from tiermap.formats.scene_graph import GraphNode, RelationThresholds, SceneGraph  # noqa: E402
from tiermap.vqa_program import box_relations  # noqa: E402


def synthetic_graph(n: int, seed: int = 0) -> SceneGraph:
    """n objects of library classes in 10 rooms of 8 x 8 m: furniture on the floor, small things on top of it."""
    rng = np.random.default_rng(seed)
    classes = sorted(LIBRARY)
    nodes = []
    for i in range(n):
        room = i % 10
        kind = LIBRARY[classes[int(rng.integers(len(classes)))]]
        e = np.array([rng.uniform(*r) for r in kind.size])
        c = np.array([room * 10 + rng.uniform(0, 8), rng.uniform(0, 8), e[2] / 2])
        if i % 4 == 3 and nodes:  # a quarter stand on an earlier object
            host = nodes[int(rng.integers(len(nodes)))]
            c = np.array([host.center[0], host.center[1], host.center[2] + host.extent[2] / 2 + e[2] / 2])
        nodes.append(GraphNode(id=i + 1, label=kind.name, synonyms=list(kind.synonyms), names=[kind.name], center=c.round(3).tolist(),
                               extent=e.round(3).tolist(), room=f"r{room}", colors=["brown"], material="wood"))
    th = RelationThresholds()
    return SceneGraph(scene="bench", nodes=nodes, edges=box_relations(nodes, th), thresholds=th,
                      room_kinds={f"r{k}": sorted(ROOM_KINDS)[k % len(ROOM_KINDS)] for k in range(10)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for n in (args.objects // 10, args.objects):
        t0 = time.perf_counter()
        g = synthetic_graph(n)
        t_rel = time.perf_counter() - t0
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            qs = generate_questions(g, seed=0, per_category=200)
            best = min(best, time.perf_counter() - t)
        print(f"{n} objects: {len(g.edges)} relations in {t_rel:.2f} s (graph build incl. relations); "
              f"{len(qs.questions)} questions in {best:.2f} s (best of {args.repeat}); total {t_rel + best:.2f} s (target < 5 s)")


if __name__ == "__main__":
    main()
