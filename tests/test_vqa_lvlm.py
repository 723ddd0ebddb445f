"""LVLM questions: key frames from camera-to-world poses, the real google-genai client against the local fake server
(image bytes and a response schema in every request), and every question checked against the GT graph."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from fake_gemini import FakeGemini
from generation.vqa_lvlm import key_frames_by_coverage, key_frames_by_pose, lvlm_questions
from test_baseline_scene_graph import tiny_sequence
from test_vqa_questions import tiny_graph


def pose(x: float, yaw_deg: float) -> np.ndarray:
    """Camera-to-world 4x4 at (x, 0, 1.2) turned by yaw degrees about z."""
    T = np.eye(4)
    T[:3, :3] = Rotation.from_euler("z", yaw_deg, degrees=True).as_matrix()
    T[:3, 3] = [x, 0.0, 1.2]
    return T


def test_key_frames_by_pose_read_positions_and_degrees() -> None:
    poses = np.stack([pose(0.5 * i, 0.0) for i in range(7)] + [pose(3.0, 45.0), pose(3.0, 50.0)])
    # Every 1.5 m along the path (frames 0, 3, 6), then the same spot turned by 45 degrees; 50 degrees is 5 from it.
    assert key_frames_by_pose(poses, spacing=1.5, angle_deg=30) == [0, 3, 6, 7]
    assert key_frames_by_pose(poses, spacing=1.5, angle_deg=3) == [0, 3, 6, 7, 8]


def test_key_frames_by_coverage(tmp_path: Path) -> None:
    seq = tiny_sequence(tmp_path)
    assert key_frames_by_coverage(seq, min_pixels=5) == [0]  # frame 0 already shows both objects


def test_lvlm_questions_are_checked_against_the_gt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seq = tiny_sequence(tmp_path)
    reply = {"questions": [
        {"question": "How many chairs are there in the scene?", "answer": "2", "category": "Measurement"},
        {"question": "How many mugs are there in the scene?", "answer": "3", "category": "Measurement"},      # contradicted
        {"question": "Is there a couch in the scene?", "answer": "Yes", "category": "Binary Existence-Based"},
        {"question": "Is there a bed in the scene?", "answer": "No", "category": "Binary Existence-Based"},
        {"question": "Is there a table in the room?", "answer": "No", "category": "Binary General"},          # contradicted
        {"question": "What colour is the sofa?", "answer": "Red", "category": "Object Attributes"},
        {"question": "Is the mug on the table?", "answer": "Yes", "category": "Object Relations – Spatial"},  # no checkable form
        {"question": "How many seats are there?", "answer": "2", "category": "Measurement"},                 # same program
    ]}
    fake = FakeGemini(default=reply)
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    try:
        qs, stats = lvlm_questions(tiny_graph(), seq, "gemini-2.5-flash", tmp_path / "cache", absent=["bed"])
        n = len(fake.requests)
        again, _ = lvlm_questions(tiny_graph(), seq, "gemini-2.5-flash", tmp_path / "cache", absent=["bed"])
    finally:
        fake.stop()
    assert n == 1 and len(fake.requests) == 1  # poses 0.5 m apart: one key frame; the re-run is served from the cache
    body = fake.requests[0]["body"]
    assert fake.image(0) == (seq / "results" / "frame000000.png").read_bytes()
    cfg = body["generationConfig"]
    assert cfg["temperature"] == 0 and cfg["responseMimeType"] == "application/json"
    assert "responseSchema" in cfg or "responseJsonSchema" in cfg
    assert [(q.question, q.answer, q.source) for q in qs] == [
        ("How many chairs are there in the scene?", "2", "lvlm"), ("Is there a couch in the scene?", "Yes", "lvlm"),
        ("Is there a bed in the scene?", "No", "lvlm"), ("What colour is the sofa?", "red", "lvlm")]
    assert stats == {"key_frames": 1, "asked": 8, "kept": 4, "contradicted": 2, "unverifiable": 1, "duplicate": 1}
    assert [q.model_dump() for q in again] == [q.model_dump() for q in qs]
