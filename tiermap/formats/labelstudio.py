"""Label Studio: the JSON export, seat credentials, the tasks record and the pull ledger."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from tiermap import atomic
from tiermap.formats.base import (
    Model,
    NonNegInt,
    PosInt,
    SchemaError,
    dump_json,
    read_json,
    read_model,
    write_model,
)

TAMPER_FILE = "tamper.csv"
TAMPER_COLUMNS = ["key", "annotator", "kind", "detail"]
"""labels/tamper.csv: one row per task and annotator the last pull flagged."""

LEDGER_FILE = "ledger.json"

TASKS_FILE = "tasks.json"
CREDENTIALS_FILE = "credentials.json"
SIMULATED_FILE = "simulated.json"

LS_TEXT_FIELDS = {"synonyms": "synonyms", "depictions": "depictions", "visually_similar": "vis_sim", "vis_sim": "vis_sim"}
"""Label Studio TextArea `from_name` → label category of the tidy table."""


class LSUser(BaseModel):
    """`completed_by` of a snapshot export (serialization option annotations__completed_by only_id=False)."""

    model_config = ConfigDict(extra="allow")
    id: int | None = None
    email: str | None = None

    @model_validator(mode="after")
    def _identified(self) -> LSUser:
        if self.id is None and not self.email:
            raise ValueError("a user with an id or an email")
        return self


class LSValue(BaseModel):
    """A result's value; TextArea answers are `text` (a list of strings, one per submitted text)."""

    model_config = ConfigDict(extra="allow")
    text: list[str] | None = None


class LSResult(BaseModel):
    """One region/field result of an annotation."""

    model_config = ConfigDict(extra="allow")
    from_name: str
    to_name: str | None = None
    type: str | None = None
    value: LSValue

    @property
    def category(self) -> str | None:
        """The tidy-table category of a label field (synonyms / depictions / vis_sim), else None."""
        return LS_TEXT_FIELDS.get(self.from_name)


class LSAnnotation(BaseModel):
    """One annotator's submission for a task."""

    model_config = ConfigDict(extra="allow")
    id: int | None = None
    completed_by: int | LSUser
    result: list[LSResult]
    was_cancelled: bool = False

    @property
    def annotator(self) -> str:
        """The annotator's email when the export has it, else 'user<id>'."""
        u = self.completed_by
        if isinstance(u, LSUser):
            return u.email or f"user{u.id}"
        return f"user{u}"


class LSTaskData(BaseModel):
    """Task data: the scene (`scene`, or `scene_id`) and the object's integer id, plus any other fields."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    scene: str = Field(validation_alias=AliasChoices("scene", "scene_id"))
    object_id: int


class LSTask(BaseModel):
    """One task of a Label Studio JSON export (`ls.projects.exports.as_json`)."""

    model_config = ConfigDict(extra="allow")
    id: int | None = None
    data: LSTaskData
    annotations: list[LSAnnotation] = []


_LS_EXPECTED = {
    None: "a task object with 'data' and 'annotations'",
    "data": "an object with the task data (scene, object_id)",
    "scene": "the scene name as a string (data.scene or data.scene_id)",
    "scene_id": "the scene name as a string (data.scene or data.scene_id)",
    "object_id": "an integer object id (data.object_id)",
    "annotations": "a list of annotations",
    "completed_by": "an int user id or a user object with an id or email",
    "result": "a list of results (one per labelling field)",
    "from_name": "the labelling field name as a string",
    "value": "an object with the result value",
    "text": "a list of strings (the TextArea answers)",
    "was_cancelled": "true or false",
}
_ls_adapter: TypeAdapter[list[LSTask]] | None = None


def _ls_error(source: Path | str, data: Any, err: ValidationError) -> SchemaError:
    """A one-line SchemaError with the JSON path ([3].annotations[0].result[1].value.text) of the first error."""
    e = err.errors()[0]
    loc, cur, path, key, item = list(e["loc"]), data, "", None, False
    for n, part in enumerate(loc):
        if isinstance(part, int) and isinstance(cur, list):
            path += f"[{part}]"
            cur, item = (cur[part] if part < len(cur) else None), True
        elif isinstance(part, str) and isinstance(cur, dict) and (part in cur or (n == len(loc) - 1 and e["type"] == "missing")):
            path += f".{part}"
            cur, key, item = cur.get(part), part, False
        # anything else is a union member tag (e.g. 'int', 'LSUser'): not part of the JSON path
    items = {"annotations": "an annotation object (completed_by, result)", "result": "a result object (from_name, value)",
             "text": "a string (one TextArea answer)"}
    expected = (items[key] if item and key in items else _LS_EXPECTED.get(key, e["msg"].removeprefix("Value error, ")))
    if e["type"] == "missing":
        return SchemaError(source, path or "<root>", f"{expected} (field is missing)")
    got = e.get("input")
    return SchemaError(source, path or "<root>", expected, got if isinstance(got, str | int | float | bool) else type(got).__name__)


def parse_ls_export(data: Any, source: Path | str = "<export>") -> list[LSTask]:
    """Validate a Label Studio JSON export (a list of tasks); errors name `source` and the JSON path."""
    global _ls_adapter
    if not isinstance(data, list):
        raise SchemaError(source, "<root>", "a JSON list of tasks (Label Studio JSON export)", type(data).__name__)
    if _ls_adapter is None:
        _ls_adapter = TypeAdapter(list[LSTask])
    try:
        tasks = _ls_adapter.validate_python(data)
    except ValidationError as err:
        raise _ls_error(source, data, err) from None
    for i, t in enumerate(tasks):
        for j, a in enumerate(t.annotations):
            for k, r in enumerate(a.result):
                if r.from_name in LS_TEXT_FIELDS and r.value.text is None:
                    raise SchemaError(source, f"[{i}].annotations[{j}].result[{k}].value.text", _LS_EXPECTED["text"] + " (field is missing)")
    return tasks


def read_ls_export(path: Path | str) -> list[LSTask]:
    """A Label Studio JSON export file → validated tasks."""
    return parse_ls_export(read_json(path), path)


class LSSeat(Model):
    """One annotator's own Label Studio server: its admin secrets and address (credentials.json, mode 0600, never served)."""

    annotator: Annotated[str, Field(min_length=3)]
    slug: Annotated[str, Field(pattern=r"^seat-\d+$")]
    admin_password: str
    token: Annotated[str, Field(min_length=6, max_length=40)]
    user_id: NonNegInt = 0
    url: str = ""
    pid: NonNegInt = 0
    simulated: bool = False


class LSCredentials(Model):
    """labelstudio/credentials.json: the admin account shared by every seat and one record per seat."""

    admin_email: str
    seats: list[LSSeat] = []

    def seat(self, annotator: str) -> LSSeat | None:
        """The seat of an annotator, if any."""
        return next((s for s in self.seats if s.annotator == annotator), None)


class SeatTasks(Model):
    """The project and task ids of one seat (task key scene/object_id → task id)."""

    project_id: PosInt
    tasks: dict[str, PosInt]


class TasksRecord(Model):
    """labels/tasks.json: what the last push left on each seat's server, and the crop hash of every task (no secrets)."""

    crop_hashes: dict[str, Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]]
    seats: dict[str, SeatTasks]


class LedgerEntry(Model):
    """One accepted annotation: what an annotator submitted for a task, as first pulled (or last accepted)."""

    key: str
    scene: str
    object_id: Annotated[int, Field(ge=1, le=65535)]
    annotator: str
    annotation_id: PosInt
    completed_by: NonNegInt
    created_at: str
    updated_at: str
    lead_time: float | None = None
    was_cancelled: bool = False
    result: list[dict[str, Any]]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    pulled_from: str


class Ledger(Model):
    """labels/ledger.json: the accepted annotations every pull is compared with (sorted by task key, annotator)."""

    entries: list[LedgerEntry] = []

    @model_validator(mode="after")
    def _unique(self) -> Ledger:
        keys = [(e.key, e.annotator) for e in self.entries]
        if len(keys) != len(set(keys)):
            raise ValueError("one entry per (task key, annotator)")
        return self


def read_ledger(path: Path | str) -> Ledger:
    """labels/ledger.json; a missing file is an empty ledger (no pull yet)."""
    return read_model(Ledger, path) if Path(path).is_file() else Ledger()


def write_ledger(ledger: Ledger, path: Path | str) -> Path:
    """Write the ledger sorted by (key, annotator), atomically."""
    ledger = Ledger(entries=sorted(ledger.entries, key=lambda e: (e.key, e.annotator)))
    return write_model(ledger, path)


# ---------------------------------------------------------------- raw pulls and simulated annotators' passwords
def write_raw_export(path: Path | str, raw: bytes) -> Path:
    """A seat's export bytes exactly as received (never parsed first, so a bad export is still kept)."""
    return atomic.write_bytes(path, raw)


def decode_ls_export(raw: bytes, source: Path | str) -> list[dict[str, Any]]:
    """A seat's export bytes as received → the task dicts, validated as a Label Studio JSON export."""
    import json

    try:
        tasks = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        where = f"{err.msg} at line {err.lineno}" if isinstance(err, json.JSONDecodeError) else type(err).__name__
        raise SchemaError(source, "<root>", f"a JSON list of Label Studio tasks ({where})") from None
    parse_ls_export(tasks, source)
    return tasks


def write_seat_users(path: Path | str, users: list[dict[str, Any]]) -> Path:
    """A seat's user list as the server returned it (kept beside the raw export), each checked to carry an id or email."""
    import json

    for i, u in enumerate(users):
        try:
            LSUser.model_validate(u)
        except ValidationError:
            raise SchemaError(path, f"[{i}]", "a user with an id or an email") from None
    return atomic.write_text(path, json.dumps(users, indent=1))


def read_simulated_passwords(path: Path | str) -> dict[str, str]:
    """labelstudio/simulated.json: email → password of simulated annotators (empty when absent)."""
    if not Path(path).is_file():
        return {}
    data = read_json(path)
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise SchemaError(path, "<root>", "a JSON object {email: password}")
    return dict(data)


def write_simulated_passwords(path: Path | str, passwords: dict[str, str]) -> Path:
    """Write simulated.json, owner-only (mode 0600)."""
    import json

    return atomic.write_text(path, json.dumps(passwords, indent=1), mode=0o600)


def read_ls_credentials(path: Path | str) -> LSCredentials:
    """labelstudio/credentials.json: every seat's admin secrets."""
    return read_model(LSCredentials, path)


def write_ls_credentials(cred: LSCredentials, path: Path | str) -> Path:
    """Write credentials.json, owner-only (mode 0600)."""
    return atomic.write_text(path, dump_json(cred.model_dump(mode="json")), mode=0o600)
