"""The evaluator's flow on a real rendered dataset: caption baseline → the four `tiermap eval` commands → compare."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import BIN, run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scored(built_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Baseline predictions for two conditions and every evaluation's output folder."""
    tmp = tmp_path_factory.mktemp("eval")
    d = built_repo / "datasets" / "demo"
    gt = d / "gt" / "room0"
    tm = str(BIN / "tiermap")

    def both(cmds: list[list[str]]) -> None:  # independent commands, two at a time (2 cores)
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda c: run(c, tmp), cmds))

    both([[tm, "baseline", "caption", "--sequence", str(d / "sequences" / "room0" / cond), "--gt-classes", str(gt / "objects.json"),
           "--prompt-list", str(d / "gt" / "prompt_list.txt"), "--queries", str(gt / "gt_categories_query_to_object_mapping_all.json"),
           "--stride", "1", "--out", str(tmp / "pred" / cond / "room0")] for cond in ("baseline", "nominal")])
    npz = str(tmp / "pred" / "baseline" / "room0" / "text_features.npz")
    base = ["--predictions", str(tmp / "pred" / "baseline")]
    both([[tm, "eval", "segmentation", "--gt-dir", str(d / "gt"), *base, "--text-features", npz, "--top-n", "1", "5",
           "--set-ranking", "--out", str(tmp / "seg")],
          [tm, "eval", "segmentation", "--gt-dir", str(d / "gt"), "--predictions", str(tmp / "pred" / "nominal"),
           "--text-features", npz, "--method", "nominal-run", "--out", str(tmp / "seg_nominal")],
          [tm, "eval", "retrieval", "--gt-dir", str(d / "gt"), *base, "--text-features", npz, "--level", "all", "--out", str(tmp / "ret")],
          [tm, "eval", "osma", "--gt-cloud", str(gt / "gt_cloud.ply"), "--predictions", str(tmp / "pred"), "--condition", "baseline",
           "nominal", "--clip-model", "minilm", "--out", str(tmp / "osma")],
          [tm, "eval", "omq", "--ground-truth", str(gt / "objects.json"), "--results",
           str(tmp / "pred" / "baseline" / "room0" / "benchbot_results.json"), "--out", str(tmp / "omq")],
          *[[tm, "vqa", "answer", "--questions", str(gt / "vqa_questions.json"), "--graph", str(tmp / "pred" / cond / "room0" / "scene_graph.json"),
             "--answerer", "program", "--condition", cond, "--method", "caption-oracle", "--out", str(tmp / "vqa" / f"{cond}.json")]
            for cond in ("baseline", "nominal")]])
    run([tm, "eval", "vqa", "--questions", str(gt / "vqa_questions.json"), "--answers", str(tmp / "vqa" / "baseline.json"),
         str(tmp / "vqa" / "nominal.json"), "--gt-graph", str(gt / "scene_graph.json"), "--out", str(tmp / "vqa_eval")], tmp)
    return {"tmp": tmp, "gt": gt}


def results(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def test_baseline_writes_the_official_layout_with_oracle_captions(scored: dict[str, Path]) -> None:
    pred = scored["tmp"] / "pred" / "baseline" / "room0"
    for name in ("point_cloud.pcd", "embeddings.npy", "index.npy", "text_features.npz", "benchbot_results.json"):
        assert (pred / name).stat().st_size > 0
    classes = {o["id"]: o["class"] for o in json.loads((scored["gt"] / "objects.json").read_text())["ground_truth"]["objects"]}
    captions = json.loads((pred / "captions.json").read_text())
    assert captions and all(captions[k] == classes[int(k)] for k in captions)
    assert "oracle" in json.loads((pred / "method.json").read_text())["note"]


def test_segmentation_of_oracle_captions(scored: dict[str, Path]) -> None:
    r = results(scored["tmp"] / "seg")
    assert r["method"] == "caption-oracle" and "oracle" in r["note"]
    for top in ("top1", "top5"):
        f = r["frequency"][top]
        assert sum(f.values()) == pytest.approx(1.0)
        # Captions are the GT class names, so synonyms dominate every wrong category.
        assert f["synonyms"] > max(f["depictions"], f["vis_sim"], f["clutter"], f["incorrect"])
    assert r["frequency"]["top5"]["synonyms"] >= r["frequency"]["top1"]["synonyms"]
    assert 0 < r["set_ranking"]["overall"] <= 1
    # Golden values: the demo-sized render is byte-identical across runs, so the scores are too.
    assert r["frequency"]["top1"]["synonyms"] == pytest.approx(0.5054099681712119, rel=1e-6)
    assert r["frequency"]["top1"]["clutter"] == pytest.approx(0.039826008969779655, rel=1e-6)
    assert r["frequency"]["top5"]["synonyms"] == pytest.approx(0.5285790590084927, rel=1e-6)
    assert r["set_ranking"]["overall"] == pytest.approx(0.7745577195138773, rel=1e-6)
    assert (scored["tmp"] / "seg" / "topdown_room0.png").stat().st_size > 0


def test_retrieval_osma_omq_reports(scored: dict[str, Path]) -> None:
    ret = results(scored["tmp"] / "ret")["overall"]
    assert 0 <= ret["all_ap"] <= ret["all_ap_50%"] <= ret["all_ap_25%"] <= 100
    assert (ret["all_ap"], ret["all_ap_50%"], ret["all_ap_25%"]) == pytest.approx((1.417364785420341, 7.343336640211641, 37.20089954145809), rel=1e-6)
    osma = results(scored["tmp"] / "osma")
    assert set(osma["conditions"]) == {"baseline", "nominal"}
    assert osma["conditions"]["baseline"]["overall"]["macc"] > 0.5  # oracle class names → most points right
    base = osma["conditions"]["baseline"]["overall"]
    assert (base["macc"], base["fmiou"], base["miou"]) == pytest.approx((0.8549589250390196, 0.6840497076912984, 0.6476928082504705), rel=1e-6)
    assert set(osma["relative_change"]["nominal"]) == {"macc", "fmiou", "miou"}
    assert (scored["tmp"] / "osma" / "relative_change.png").stat().st_size > 0
    omq = results(scored["tmp"] / "omq")["scores"]
    assert (omq["OMQ"], omq["avg_label"]) == pytest.approx((0.6687647191489615, 0.9996131338724276), rel=1e-6)


def test_compare_prints_side_by_side(scored: dict[str, Path]) -> None:
    out = run([str(BIN / "tiermap"), "eval", "--compare", str(scored["tmp"] / "seg" / "results.json"),
               str(scored["tmp"] / "seg_nominal" / "results.json")], scored["tmp"]).stdout
    assert "caption-oracle" in out and "nominal-run" in out and "best" in out


def test_gemini_captions_through_the_real_client(built_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fake_gemini import FakeGemini
    from PIL import Image

    from evaluation.baseline import caption_baseline

    fake = FakeGemini(default={"caption": "Thing"})
    fake.queue.append({"status": 503})  # one server error first: retried with backoff
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    seq = built_repo / "datasets" / "demo" / "sequences" / "room0" / "baseline"
    info = caption_baseline(seq, tmp_path / "pred" / "room0", captions="gemini", stride=1)
    calls = len(fake.requests)
    assert calls == info["objects"] + 1 and info["method"] == "caption-gemini"
    assert fake.requests[-1]["path"].endswith("/models/gemini-2.5-flash:generateContent")
    assert fake.requests[-1]["headers"]["x-goog-api-key"] == "test-key"
    assert fake.requests[-1]["body"]["generationConfig"]["responseMimeType"] == "application/json"
    Image.open(__import__("io").BytesIO(fake.image())).verify()  # a real PNG crop was sent
    captions = json.loads((tmp_path / "pred" / "room0" / "captions.json").read_text())
    assert set(captions.values()) == {"thing"}
    caption_baseline(seq, tmp_path / "pred" / "room0", captions="gemini", stride=1)
    assert len(fake.requests) == calls  # cached: a re-run costs nothing
    fake.stop()


def test_vqa_from_the_released_gt_graph(scored: dict[str, Path]) -> None:
    """GT questions answered from the baseline's ConceptGraphs-style graph; the GT graph itself is the 100 % ceiling."""
    qs = json.loads((scored["gt"] / "vqa_questions.json").read_text())
    assert {q["category"] for q in qs["questions"]} >= {"Binary General", "Binary Existence-Based", "Measurement", "Comparison"}
    r = results(scored["tmp"] / "vqa_eval")
    assert r["kind"] == "vqa" and set(r["conditions"]) == {"baseline", "nominal"}
    assert r["references"]["gt-graph"]["overall"]["accuracy"] == 1.0
    for cat in ("Binary General", "Binary Existence-Based", "Binary Logical"):
        c = r["references"]["majority"]["categories"].get(cat)
        if c:  # balanced: a constant answer scores exactly 50 %
            assert c["n_yes"] == c["n_no"] and c["accuracy"] == 0.5
    base = r["conditions"]["baseline"]["overall"]["accuracy"]
    assert r["references"]["majority"]["overall"]["accuracy"] < base <= 1.0  # oracle captions beat a constant answer
    assert set(r["relative_change"]) == {"nominal"}
    for name in ("metrics.csv", "vqa_polar.png", "room0_baseline_evaluated.json", "room0_nominal_evaluated.json"):
        assert (scored["tmp"] / "vqa_eval" / name).stat().st_size > 0


def sweep_tree(scored: dict[str, Path]) -> tuple[Path, Path]:
    """A released GT folder of two scenes and predictions laid out {method}/{condition}/{scene}: 2 x 2 x 2 folders."""
    import shutil

    import numpy as np

    tmp = scored["tmp"] / "sweep"
    gt = tmp / "gt"
    from tiermap.formats.openlex3d import read_gt_cloud, write_gt_cloud

    points, ids = read_gt_cloud(scored["gt"] / "gt_cloud.ply")
    order = np.argsort(ids, kind="stable")
    first = np.searchsorted(ids[order], ids[order])
    keep = np.sort(order[(np.arange(len(ids)) - first) % 4 == 0])  # every 4th point of each object: every object stays
    for s in ("room0", "room1"):  # room1: a copy of room0's released GT folder under another name
        shutil.copytree(scored["gt"], gt / s)
        write_gt_cloud(gt / s / "gt_cloud.ply", points[keep], ids[keep])
    shutil.copy(scored["gt"].parent / "prompt_list.txt", gt / "prompt_list.txt")
    from tiermap.formats.predictions import read_predictions, write_predictions

    for cond in ("baseline", "nominal"):
        src = read_predictions(scored["tmp"] / "pred" / cond / "room0")
        shutil.copytree(src.folder, tmp / "pred" / "oracle" / cond / "room0")
        write_predictions(tmp / "pred" / "oracle" / cond / "room1", src.points[::2], src.embeddings, src.index[::2])  # every other point
        graph = json.loads((src.folder / "scene_graph.json").read_text())  # ConceptGraphs-style list
        rotated = [{**n, "object_tag": m["object_tag"], "caption": m["caption"]} for n, m in zip(graph, graph[1:] + graph[:1])]
        for s in ("room0", "room1"):
            p = read_predictions(tmp / "pred" / "oracle" / cond / s)
            write_predictions(tmp / "pred" / "shuffled" / cond / s, p.points, np.roll(p.embeddings, 1, axis=0), p.index)  # neighbour's caption
            (tmp / "pred" / "oracle" / cond / s / "scene_graph.json").write_text(json.dumps(graph))
            (tmp / "pred" / "shuffled" / cond / s / "scene_graph.json").write_text(json.dumps(rotated))
    return gt, tmp / "pred"


def plain(x: object) -> object:
    """JSON values with NaN as null, so equal results compare equal."""
    return json.loads(json.dumps(x, sort_keys=True).replace("NaN", "null"))


def test_eval_sweep_on_two_workers_equals_one_run_per_method_and_condition(scored: dict[str, Path]) -> None:
    import os
    import shutil
    import subprocess

    from evaluation.layout import osma_inputs, retrieval_scenes, segmentation_scenes
    from evaluation.osma import evaluate_conditions
    from evaluation.retrieval import evaluate_retrieval
    from evaluation.segmentation import evaluate_segmentation
    from evaluation.sweep import sweep
    from evaluation.text_features import make_encoder
    from tiermap.app.cluster import connect

    gt, root = sweep_tree(scored)
    npz = make_encoder(root / "oracle/baseline/room0/text_features.npz")
    minilm = make_encoder(clip_model="minilm")
    with connect("local:2") as client:
        seg = sweep("segmentation", root, gt, npz, options={"top_n": [1, 5], "set_ranking": True, "definition": "official"}, client=client)
        ret = sweep("retrieval", root, gt, npz, options={"level": "all"}, client=client)
        osma = sweep("osma", root, gt, minilm, client=client)
        vqa = sweep("vqa", root, gt, None, client=client)
    assert seg["methods"] == ["oracle", "shuffled"] and seg["conditions"] == ["baseline", "nominal"] and seg["leaves"] == 8
    prompts = (gt / "prompt_list.txt")
    for m in ("oracle",):  # the shuffled method's cells come from the same code; its numbers are checked below
        for c in ("baseline", "nominal"):
            one = evaluate_segmentation(*segmentation_scenes(root / m / c, None, None, None, gt, None, prompts)[:2], npz, top_n=(1, 5))
            for k in ("frequency", "set_ranking", "per_scene"):
                assert plain(seg["results"][m][c][k]) == plain(one[k]), (m, c, k)
            one = evaluate_retrieval(retrieval_scenes(root / m / c, None, None, None, None, gt, None, "all"), npz)
            assert plain(ret["results"][m][c]["overall"]) == plain(one["overall"]) and plain(ret["results"][m][c]["per_scene"]) == plain(one["per_scene"])
        data: dict = {}
        for c in ("baseline", "nominal"):
            for s in ("room0", "room1"):
                data.setdefault(c, {}).update(osma_inputs(gt / s / "gt_cloud.ply", None, None, root / m / c / s, [c], minilm,
                                                          ("an image of {}",))[c])
        one = evaluate_conditions(data)
        for c in ("baseline", "nominal"):
            assert osma["results"][m][c]["conditions"][c] == one["conditions"][c]
        assert osma["relative_change"][m] == one["relative_change"]
    from evaluation.vqa_answer import answer_program, load_graph, minilm_encoder
    from evaluation.vqa_score import match_answers, summarise
    from tiermap.formats.vqa import read_questions

    enc = minilm_encoder()
    for m in ("oracle", "shuffled"):
        for c in ("baseline", "nominal"):
            ok = n = 0
            for s in ("room0", "room1"):
                qs = read_questions(gt / s / "vqa_questions.json")
                ans = {a.id: a.answer for a in answer_program(qs, load_graph(root / m / c / s), enc)}
                one = summarise(qs.questions, match_answers(qs.questions, ans, enc), ans)
                assert plain(vqa["results"][m][c]["per_scene"][s]) == plain(one), (m, c, s)
                ok, n = ok + one["overall"]["correct"], n + one["overall"]["n"]
            assert vqa["results"][m][c]["conditions"][c]["overall"]["accuracy"] == pytest.approx(ok / n, rel=1e-12)
        assert set(vqa["results"][m]["nominal"]["relative_change"]["nominal"]) >= {"overall", "overall_no_functional"}
    acc = {(r["method"], r["condition"]): r["overall"] for r in vqa["table"]}
    assert acc[("oracle", "baseline")] > acc[("shuffled", "baseline")] + 0.05  # rotated labels answer worse (77 % vs 66 %)
    top1 = {(r["method"], r["condition"]): r["top1 S"] for r in seg["table"]}
    assert top1[("oracle", "baseline")] > top1[("shuffled", "baseline")]  # wrong captions score lower
    # The scenes differ (room1 has every other predicted point), so the sweep really averaged two scenes.
    assert plain(seg["results"]["oracle"]["baseline"]["per_scene"]["room0"]) != plain(seg["results"]["oracle"]["baseline"]["per_scene"]["room1"])

    broken = root / "broken" / "baseline" / "room0"  # a method whose one folder is not predictions: reported, the rest scored
    shutil.copytree(root / "oracle/baseline/room0", broken)
    (broken / "embeddings.npy").write_text("not numpy\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([str(BIN / "tiermap"), "eval", "sweep", "segmentation", "--predictions", str(root), "--gt-dir", str(gt),
                          "--text-features", str(root / "oracle/baseline/room0/text_features.npz"), "--top-n", "1", "5", "--set-ranking",
                          "--scene", "room0", "--cluster", "local:1", "--out", str(root.parent / "report")], text=True, capture_output=True, env=env)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Dask dashboard: http" in res.stdout and "5/5" in res.stdout
    report = root.parent / "report"
    got = json.loads((report / "results.json").read_text())
    assert list(got["failed"]) == ["broken/baseline/room0"] and got["scenes"] == ["room0"]
    for m in ("oracle", "shuffled"):  # one scene: the mean is that scene's numbers
        for c in ("baseline", "nominal"):
            assert plain(got["results"][m][c]["frequency"]) == plain(seg["results"][m][c]["per_scene"]["room0"]["frequency"])
    assert "embeddings.npy" in got["failed"]["broken/baseline/room0"] and "\n" not in got["failed"]["broken/baseline/room0"]
    md = (report / "results.md").read_text()
    row = next(ln for ln in md.splitlines() if ln.startswith("| oracle |"))
    top1_room0 = seg["results"]["oracle"]["baseline"]["per_scene"]["room0"]["frequency"]["top1"]["synonyms"]
    assert f"{top1_room0 * 100:.2f}" in row and "## top1 S (%)" in md and "broken/baseline/room0" in md
    csv = (report / "results.csv").read_text().splitlines()
    assert csv[0] == "method,condition,scope,group,metric,value" and any(ln.startswith("shuffled,nominal,room0,") for ln in csv)
    assert (report / "sweep.png").stat().st_size > 10_000
