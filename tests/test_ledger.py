"""The tamper check of pulls, on hand-made exports: what is flagged, what is kept, what --accept-changes does."""
from __future__ import annotations

from annotation.ledger import compare, ledger_tasks, result_hash, seat_entries
from annotation.project import textarea_result
from annotation.tidy import tidy_export
from tiermap.formats.labelstudio import Ledger, LSSeat, SeatTasks

SEAT = LSSeat(annotator="ann@lab.org", slug="seat-1", admin_password="x", token="t" * 40, user_id=2)
TASKS = SeatTasks(project_id=1, tasks={"room0/3": 10, "room0/4": 11, "room0/5": 12})


def ann(aid: int, text: str, who: int = 2, editor: int | None = None, updated: str = "2026-01-01T00:00:00Z") -> dict:
    """One exported annotation with a synonyms answer."""
    return {"id": aid, "completed_by": who, "updated_by": editor, "result": textarea_result({"synonyms": text}),
            "was_cancelled": False, "created_at": "2026-01-01T00:00:00Z", "updated_at": updated, "lead_time": 9.0}


def export(**by_task: list[dict]) -> list[dict]:
    """Tasks 10, 11, 12 with the given annotations (keyword t10=[...])."""
    return [{"id": tid, "data": {"scene": "room0", "object_id": tid - 7}, "annotations": by_task.get(f"t{tid}", [])}
            for tid in (10, 11, 12)]


def pull_once(ledger: Ledger, exp: list[dict], accept: bool = False):  # type: ignore[no-untyped-def]
    """One pull of one seat: (new ledger, all flags, newly accepted)."""
    old = {(e.key, e.annotator): e for e in ledger.entries}
    cur, flags = seat_entries(exp, SEAT, TASKS, "raw.json", old)
    new, changes, added = compare(ledger, {SEAT.annotator: cur}, accept)
    return new, flags + changes, added


def test_first_pull_accepts_everything_and_a_repeat_is_clean() -> None:
    exp = export(t10=[ann(1, "sofa")], t11=[ann(2, "mug")])
    led, flags, added = pull_once(Ledger(), exp)
    assert (flags, added) == ([], 2) and [(e.key, e.annotation_id) for e in led.entries] == [("room0/3", 1), ("room0/4", 2)]
    assert led.entries[0].sha256 == result_hash(textarea_result({"synonyms": "sofa"}), False)
    # The same content with a newer timestamp is not a change.
    again, flags, added = pull_once(led, export(t10=[ann(1, "sofa", updated="2026-02-01T00:00:00Z")], t11=[ann(2, "mug")]))
    assert (flags, added, again) == ([], 0, led)


def test_changed_recreated_and_disappeared_are_flagged_and_the_pulled_versions_kept() -> None:
    led, _, _ = pull_once(Ledger(), export(t10=[ann(1, "sofa")], t11=[ann(2, "mug")], t12=[ann(3, "lamp")]))
    tampered = export(t10=[ann(1, "tampered")], t11=[ann(9, "mug")])  # 1 edited, 2 deleted and re-made as 9, 3 deleted
    kept, flags, _ = pull_once(led, tampered)
    assert sorted((f.kind, f.key) for f in flags) == [("changed", "room0/3"), ("changed", "room0/4"), ("disappeared", "room0/5")]
    assert "result changed" in flags[0].line() or "result changed" in flags[1].line()
    assert kept == led  # nothing replaced or dropped
    accepted, flags, _ = pull_once(led, tampered, accept=True)
    assert len(flags) == 3
    assert [(e.key, e.annotation_id) for e in accepted.entries] == [("room0/3", 1), ("room0/4", 9)]
    labels, _ = tidy_export(ledger_tasks(accepted), "ledger.json")
    assert sorted(labels["label"]) == ["mug", "tampered"] and sorted(labels["annotation_id"]) == [1, 9]


def test_foreign_duplicate_and_unknown_annotations_are_never_accepted() -> None:
    exp = export(t10=[ann(1, "sofa", who=1)], t11=[ann(2, "mug", editor=1)], t12=[ann(3, "lamp"), ann(4, "lamp again")])
    exp.append({"id": 99, "data": {"scene": "ghost", "object_id": 1}, "annotations": [ann(5, "chair")]})
    led, flags, added = pull_once(Ledger(), exp, accept=True)
    kinds = sorted((f.kind, f.key) for f in flags)
    assert kinds == [("duplicate", "room0/5"), ("foreign author", "room0/3"), ("foreign author", "room0/4"),
                     ("unknown task", "task-id-99")]
    assert added == 1 and [(e.key, e.annotation_id) for e in led.entries] == [("room0/5", 3)]
    # A duplicate never displaces the accepted annotation, whatever its id.
    led2, flags, _ = pull_once(led, export(t12=[ann(2, "earlier id"), ann(3, "lamp")]))
    assert [f.kind for f in flags] == ["duplicate"] and led2 == led
