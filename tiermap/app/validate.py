"""Validation of the published GT and the labels table with a great-expectations suite.

The files of a dataset are turned into pandas tables (one row per GT label, per object, per clutter
entry, per prompt line, per labels-table row, per file read), each table is validated in an ephemeral
great-expectations context, and every expectation becomes one named check of the report. Failures name
the offending scene, object id and label (mapped back from GE's unexpected rows). `validate_dataset`
writes `validation.json` (which `tiermap release` checks, GT checksums included) and Data Docs HTML.

great_expectations is imported inside the functions: it takes seconds, `import tiermap.app.validate` must not.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tiermap import atomic
from tiermap.formats.base import SchemaError, dump_json
from tiermap.formats.labels import LABEL_COLUMNS, read_labels
from tiermap.formats.layout import GT_READERS, DatasetPaths
from tiermap.formats.openlex3d import (
    CATEGORIES,
    GTCategories,
    read_gt_categories,
    read_gt_cloud,
    read_prompt_list,
)

LABEL_REGEX = r"^[^\sA-Z_]+(?: [^\sA-Z_]+)*$"
"""Normalised label: no uppercase, no underscore, single spaces between words, none at either end."""
CLUTTER_ID_REGEX = r"^-?[0-9]+$"
PROMPT_REGEX = r"^\S(?:.*\S)?$"
MAX_LABEL_LENGTH = 64
DEFAULT_ANNOTATORS = 4
"""OpenLex3D protocol: every object is labelled by 4 annotators."""
MAX_FAILURES = 20
DOCS_DIRNAME = "validation_docs"
NO_LABELS = "no labels table"
GT_CLOUD = "gt_cloud.ply"  # generation.scene_gt.GT_CLOUD (not imported: validation must not need generation/)


@dataclass
class Check:
    """One named check (one expectation) and what failed; `success` is None when it was not checked."""

    name: str
    success: bool | None = True
    failures: list[str] = field(default_factory=list)
    description: str = ""
    table: str = ""
    expectation: str = ""
    unexpected_count: int = 0
    skipped: str | None = None

    def fail(self, msg: str) -> None:
        """Record a failure (the first MAX_FAILURES are kept, then one line counts the rest)."""
        self.success = False
        self.unexpected_count += 1
        more = self.unexpected_count - MAX_FAILURES
        if more <= 0:
            self.failures.append(msg)
        elif more == 1:
            self.failures.append("... and 1 more")
        else:
            self.failures[-1] = f"... and {more} more"

    def skip(self, reason: str) -> None:
        """Mark as not checked, with the reason."""
        self.success, self.skipped = None, reason


def md5(path: Path) -> str:
    """MD5 of a file (DVC's hash, so checksums match `dvc` listings)."""
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gt_checksums(gt_dir: Path) -> dict[str, str]:
    """md5 of every file under gt/, keyed by relative path."""
    return {p.relative_to(gt_dir).as_posix(): md5(p) for p in sorted(gt_dir.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- tables
# Columns of each table; `row` is the position, used to map GE's unexpected rows back to the table.
COLUMNS = {
    "files": ["row", "file", "error"],
    "gt_labels": ["row", "scene", "object_id", "name", "category", "label"],
    "objects": ["row", "scene", "object_id", "name", "synonyms", "n_synonyms", "flag", "n_annotators", "cloud_key"],
    "clutter": ["row", "scene", "object_id", "name", "clutter_id", "clutter_int", "clutter_key"],
    "prompts": ["row", "line", "prompt", "prev"],
    "labels": ["row", "scene", "object_id", "annotator", "category", "label", "raw_label", "gt_key"],
}
# Columns GE reports for every unexpected row (shown in Data Docs, used for the messages here).
ID_COLUMNS = {
    "files": ["row", "file"],
    "gt_labels": ["row", "scene", "object_id"],
    "objects": ["row", "scene", "object_id"],
    "clutter": ["row", "scene", "object_id"],
    "prompts": ["row", "line"],
    "labels": ["row", "scene", "object_id", "annotator"],
}


@dataclass
class _Inputs:
    """Rows of every table, and the sets the membership expectations compare against."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {t: [] for t in COLUMNS})
    skipped: dict[str, str] = field(default_factory=dict)
    prompts: list[str] | None = None
    cloud_keys: set[str] = field(default_factory=set)
    gt_keys: set[str] = field(default_factory=set)
    label_union: set[str] = field(default_factory=set)
    annotators_per_object: dict[tuple[str, int], int] | None = None

    def file(self, path: Path | str, err: Exception | None = None) -> None:
        """Record a file read (and its one-line error)."""
        msg = str(err).splitlines()[0] if err is not None else None
        self.rows["files"].append({"file": str(path), "error": msg})

    def add_gt(self, scene: str, gt: GTCategories, cloud_ids: set[int] | None) -> None:
        """Label, object and clutter rows of one scene's gt_categories.json."""
        for s in gt.dataset.samples:
            a, oid = s.labels.image_attributes, s.object_id
            base = {"scene": scene, "object_id": oid, "name": s.name}
            self.gt_keys.add(f"{scene}/{oid}")
            for cat in CATEGORIES:
                for lbl in getattr(a, cat):
                    self.rows["gt_labels"].append({**base, "category": cat, "label": lbl})
                    self.label_union.add(lbl)
            n_ann = None
            if self.annotators_per_object is not None:
                n_ann = self.annotators_per_object.get((scene, oid), 0)
            self.rows["objects"].append({**base, "synonyms": ", ".join(a.synonyms), "n_synonyms": len(a.synonyms),
                                         "flag": s.labels.flag, "n_annotators": n_ann,
                                         "cloud_key": f"{scene}/{oid}" if cloud_ids is not None else None})
            for c in a.clutter:
                as_int = int(c) if c.lstrip("-").isdigit() else None
                key = f"{scene}/{as_int if as_int is not None else c}" if cloud_ids is not None else None
                self.rows["clutter"].append({**base, "clutter_id": c, "clutter_int": as_int, "clutter_key": key})
        if cloud_ids is not None:
            self.cloud_keys.update(f"{scene}/{i}" for i in cloud_ids)

    def frames(self) -> dict[str, Any]:
        """One DataFrame per table, with every column present even when empty."""
        import pandas as pd

        out = {}
        for table, cols in COLUMNS.items():
            rows = [{**r, "row": i} for i, r in enumerate(self.rows[table])]
            df = pd.DataFrame(rows, columns=cols) if rows else pd.DataFrame({c: pd.Series([], dtype=object) for c in cols})
            if table == "clutter" and rows:
                df["clutter_int"] = df["clutter_int"].astype("float64")  # None -> NaN; compared with object_id
            out[table] = df
        return out


def _prompt_rows(inp: _Inputs, path: Path) -> None:
    """Prompt-list rows from the raw lines (blank lines included, so the expectations see them)."""
    try:
        read_prompt_list(path)
    except SchemaError as err:
        if not err.field.startswith("line "):  # blank lines are the prompt_no_blank expectation's job
            inp.file(path, err)
            return
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as err:
        inp.file(path, SchemaError(path, "<file>", f"UTF-8 text ({type(err).__name__})"))
        return
    inp.file(path)
    if lines and lines[-1] == "":
        lines.pop()
    inp.prompts = lines
    for n, line in enumerate(lines, start=1):
        inp.rows["prompts"].append({"line": n, "prompt": line, "prev": lines[n - 2] if n > 1 else None})


def _labels_frame(inp: _Inputs, path: Path) -> Any:
    """The labels table through read_labels; on a SchemaError, the raw table if it has the columns."""
    import pandas as pd

    try:
        df = read_labels(path)
        inp.file(path)
        return df
    except SchemaError as err:
        inp.file(path, err)
    try:
        df = pd.read_parquet(path)
    except Exception:  # pyarrow raises several types for corrupt files; the reader's error is recorded
        return None
    if any(c not in df.columns for c in LABEL_COLUMNS):
        return None
    return df[list(LABEL_COLUMNS)].reset_index(drop=True)


def _dataset_inputs(ds: DatasetPaths) -> _Inputs:
    """Read every file of the dataset into table rows; reader errors become rows of the files table."""
    inp = _Inputs()
    labels_path = ds.labels / "labels.parquet"
    labels = _labels_frame(inp, labels_path) if labels_path.is_file() else None
    if labels is not None:
        counts = labels.groupby(["scene", "object_id"])["annotator"].nunique()
        try:
            inp.annotators_per_object = {(str(s), int(o)): int(n) for (s, o), n in counts.items()}
        except (TypeError, ValueError):  # a raw table with non-integer ids: its reader error is recorded
            inp.skipped["annotator_count"] = "labels table unreadable"

    scenes = ds.gt_scenes()
    if not scenes:
        inp.rows["files"].append({"file": str(ds.gt), "error": f"{ds.gt}: no scene folders"})
    unreadable: set[str] = set()
    for scene in scenes:
        d = ds.gt / scene
        for name, reader in GT_READERS.items():
            if name == "gt_categories.json":
                continue
            try:
                reader(d / name)
                inp.file(d / name)
            except SchemaError as err:
                inp.file(d / name, err)
        cloud_ids = None
        try:
            _, ids = read_gt_cloud(d / GT_CLOUD)
            cloud_ids = {int(i) for i in set(ids.tolist())}
            inp.file(d / GT_CLOUD)
        except SchemaError as err:
            inp.file(d / GT_CLOUD, err)
        try:
            gt = read_gt_categories(d / "gt_categories.json")
            inp.file(d / "gt_categories.json")
        except SchemaError as err:
            inp.file(d / "gt_categories.json", err)
            unreadable.add(scene)
            continue
        inp.add_gt(scene, gt, cloud_ids)

    _prompt_rows(inp, ds.prompt_list)
    if inp.prompts is None:
        for name in ("labels_in_prompt_list", "prompt_no_blank", "prompt_sorted", "prompt_labels_known"):
            inp.skipped[name] = f"{ds.prompt_list.name} unreadable"
    elif unreadable or not scenes:
        inp.skipped["prompt_labels_known"] = "some gt_categories.json unreadable"

    if labels is None:
        reason = NO_LABELS if not labels_path.is_file() else "labels table unreadable"
        for name in ("annotator_count", "labels_category", "labels_annotator", "labels_format", "labels_known_objects"):
            inp.skipped[name] = reason
    else:
        for r in labels.to_dict("records"):
            scene = str(r["scene"])
            key = None if scene in unreadable else f"{scene}/{r['object_id']}"
            inp.rows["labels"].append({**r, "gt_key": key})
    return inp


# ---------------------------------------------------------------- expectations
@dataclass
class _Spec:
    """A check: its table, what it means, the GE expectation (class name + kwargs), and how an unexpected row reads."""

    name: str
    table: str
    description: str
    expectation: str
    kwargs: dict[str, Any]
    row: Callable[[dict[str, Any]], str]
    unless: tuple[str, Any] | None = None
    """(column, value): the expectation applies to the rows where column != value (a GE row_condition)."""


def _obj(r: dict[str, Any]) -> str:
    return f"{r['scene']} object {r['object_id']}"


def _obj_named(r: dict[str, Any]) -> str:
    return f"{_obj(r)} ({r['name']}; synonyms: {r.get('synonyms') or '-'})"


def _lbl(r: dict[str, Any]) -> str:
    return f"{_obj(r)} {r['category']}: {r['label']!r}"


def _lab_row(r: dict[str, Any]) -> str:
    return (f"labels.parquet row {r['row']}: {_obj(r)} annotator {r['annotator']!r} {r['category']}: "
            f"{r['label']!r} (typed {r['raw_label']!r})")


def _specs(inp: _Inputs, annotators: int, dataset: bool) -> list[_Spec]:
    """The suite: every check of a dataset (or, dataset=False, those that need only gt_categories.json)."""
    cats = list(CATEGORIES)
    S = _Spec
    specs = [
        S("files_readable", "files", "every file read passes tiermap.formats' readers",
          "ExpectColumnValuesToBeNull", {"column": "error"}, lambda r: str(r["error"])),
        S("label_not_null", "gt_labels", "every label is present",
          "ExpectColumnValuesToNotBeNull", {"column": "label"}, _lbl),
        S("label_format", "gt_labels", "labels are lowercase, single-spaced, without underscores or surrounding spaces",
          "ExpectColumnValuesToMatchRegex", {"column": "label", "regex": LABEL_REGEX}, _lbl),
        S("label_length", "gt_labels", f"labels are 1 to {MAX_LABEL_LENGTH} characters long",
          "ExpectColumnValueLengthsToBeBetween", {"column": "label", "min_value": 1, "max_value": MAX_LABEL_LENGTH},
          lambda r: f"{_lbl(r)} ({len(str(r['label']))} characters)"),
        S("category_in_set", "gt_labels", f"label categories are {', '.join(cats)}",
          "ExpectColumnValuesToBeInSet", {"column": "category", "value_set": cats}, _lbl),
        S("unique_labels", "gt_labels", "a label is in only one category of an object",
          "ExpectCompoundColumnsToBeUnique", {"column_list": ["scene", "object_id", "label"]}, _lbl),
        S("synonym_present", "objects", "every object has a synonym unless it is flagged ambiguous",
          "ExpectColumnValuesToBeBetween", {"column": "n_synonyms", "min_value": 1},
          lambda r: f"{_obj_named(r)}: no synonym and not flagged ambiguous", unless=("flag", "ambiguous")),
        S("flag_in_set", "objects", "the flag is absent or 'ambiguous'",
          "ExpectColumnValuesToBeInSet", {"column": "flag", "value_set": ["ambiguous"]},
          lambda r: f"{_obj_named(r)}: flag {r['flag']!r}"),
    ]
    if dataset:
        specs += [
            S("annotator_count", "objects", f"every object was labelled by {annotators} annotators (labels table)",
              "ExpectColumnValuesToBeInSet", {"column": "n_annotators", "value_set": [annotators]},
              lambda r: f"{_obj_named(r)}: {r['n_annotators']} annotator(s), expected {annotators}"),
            S("object_in_cloud", "objects", "every labelled object id is an id of its scene's GT cloud",
              "ExpectColumnValuesToBeInSet", {"column": "cloud_key", "value_set": sorted(inp.cloud_keys)},
              lambda r: f"{_obj_named(r)}: id not in the GT cloud"),
        ]
    specs.append(S("clutter_id_format", "clutter", "clutter entries are object ids written as integer strings",
                   "ExpectColumnValuesToMatchRegex", {"column": "clutter_id", "regex": CLUTTER_ID_REGEX},
                   lambda r: f"{_obj(r)} ({r['name']}): clutter id {r['clutter_id']!r} is not an integer string"))
    if dataset:
        specs.append(S("clutter_ids_exist", "clutter", "clutter ids are object ids of the same scene's GT cloud",
                       "ExpectColumnValuesToBeInSet", {"column": "clutter_key", "value_set": sorted(inp.cloud_keys)},
                       lambda r: f"{_obj(r)} ({r['name']}): clutter id {r['clutter_id']!r} is not in the GT cloud"))
    specs.append(S("clutter_not_self", "clutter", "an object is not in its own clutter list",
                   "ExpectSelectColumnValuesToBeUniqueWithinRecord", {"column_list": ["object_id", "clutter_int"]},
                   lambda r: f"{_obj(r)} ({r['name']}): clutter id {r['clutter_id']!r} is the object itself"))
    if not dataset:
        return specs
    return specs + [
        S("labels_in_prompt_list", "gt_labels", "every object label is in prompt_list.txt",
          "ExpectColumnValuesToBeInSet", {"column": "label", "value_set": sorted(set(inp.prompts or []))},
          lambda r: f"{_lbl(r)} is missing from prompt_list.txt"),
        S("prompt_no_blank", "prompts", "prompt_list.txt has no blank lines and no surrounding spaces",
          "ExpectColumnValuesToMatchRegex", {"column": "prompt", "regex": PROMPT_REGEX},
          lambda r: f"prompt_list.txt line {r['line']}: {r['prompt']!r}"),
        S("prompt_sorted", "prompts", "prompt_list.txt is sorted without duplicates",
          "ExpectColumnPairValuesAToBeGreaterThanB",
          {"column_A": "prompt", "column_B": "prev", "ignore_row_if": "either_value_is_missing"},
          lambda r: f"prompt_list.txt line {r['line']}: {r['prompt']!r} after {r['prev']!r}"),
        S("prompt_labels_known", "prompts", "every prompt is a label of some object",
          "ExpectColumnValuesToBeInSet", {"column": "prompt", "value_set": sorted(inp.label_union)},
          lambda r: f"prompt_list.txt line {r['line']}: {r['prompt']!r} is no object's label"),
        S("labels_category", "labels", f"labels-table categories are {', '.join(cats)}",
          "ExpectColumnValuesToBeInSet", {"column": "category", "value_set": cats}, _lab_row),
        S("labels_annotator", "labels", "every labels-table row names its annotator",
          "ExpectColumnValuesToNotBeNull", {"column": "annotator"}, _lab_row),
        S("labels_format", "labels", "labels-table labels are normalised (lowercase, single-spaced, no underscores)",
          "ExpectColumnValuesToMatchRegex", {"column": "label", "regex": LABEL_REGEX}, _lab_row),
        S("labels_known_objects", "labels", "labels-table rows are for objects of gt_categories.json",
          "ExpectColumnValuesToBeInSet", {"column": "gt_key", "value_set": sorted(inp.gt_keys)},
          lambda r: f"{_lab_row(r)}: object not in gt_categories.json"),
    ]


def _clean(v: Any) -> Any:
    """numpy scalars → Python; NaN → None (for messages)."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def run_suite(inp: _Inputs, specs: list[_Spec], name: str, docs_dir: Path | None = None) -> tuple[list[Check], str | None]:
    """Validate every table with GE (ephemeral context); optionally build Data Docs into docs_dir.

    Returns the checks in `specs` order and the Data Docs index.html path (None without docs_dir).
    """
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.expectations.row_conditions import Column

    frames = inp.frames()
    checks = {s.name: Check(s.name, description=s.description, table=s.table, expectation=s.expectation) for s in specs}
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas(name=name)
    run_id = RunIdentifier(run_name=f"tiermap-validate-{name}")
    for table in COLUMNS:
        table_specs = [s for s in specs if s.table == table and s.name not in inp.skipped]
        if not table_specs:
            continue
        suite = context.suites.add(gx.ExpectationSuite(name=f"tiermap.{table}"))
        for s in table_specs:
            kwargs = dict(s.kwargs)
            if s.unless is not None:
                kwargs["row_condition"] = Column(s.unless[0]) != s.unless[1]  # null flags count as "not ambiguous"
            suite.add_expectation(getattr(gxe, s.expectation)(**kwargs, meta={"check": s.name}, notes=s.description))
        batch = source.add_dataframe_asset(name=table).add_batch_definition_whole_dataframe("whole")
        vd = context.validation_definitions.add(gx.ValidationDefinition(name=f"tiermap.{table}", data=batch, suite=suite))
        res = vd.run(batch_parameters={"dataframe": frames[table]}, run_id=run_id,
                     result_format={"result_format": "COMPLETE", "unexpected_index_column_names": ID_COLUMNS[table]})
        by_name = {s.name: s for s in table_specs}
        df = frames[table]
        for r in res.results:
            spec = by_name[r.expectation_config.meta["check"]]
            c = checks[spec.name]
            if r.success:
                continue
            exc = r.exception_info or {}
            raised = [e for e in ([exc] if "raised_exception" in exc else exc.values()) if e.get("raised_exception")]
            if raised:
                c.fail(f"great_expectations could not evaluate {c.expectation}: {raised[0].get('exception_message')}")
                continue
            unexpected = r.result.get("unexpected_index_list") or []
            for i in sorted({int(u["row"]) for u in unexpected}):
                c.fail(spec.row({k: _clean(v) for k, v in df.iloc[i].to_dict().items()}))
            if not unexpected:
                c.fail(f"{c.expectation} failed (observed {r.result.get('observed_value')!r})")
    for check_name, reason in inp.skipped.items():
        if check_name in checks:
            checks[check_name].skip(reason)
    docs: str | None = None
    if docs_dir is not None:
        try:
            docs = _build_docs(context, docs_dir)
        except Exception as err:  # the report matters more than its HTML rendering: keep it, say what broke
            docs = f"not built ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
    return [checks[s.name] for s in specs], docs


def _build_docs(context: Any, docs_dir: Path) -> str:
    """Data Docs of this context's validations into docs_dir (replaced atomically), git-ignored."""
    docs_dir = Path(docs_dir).resolve()  # GE wants an absolute base directory
    with atomic.atomic_dir(docs_dir) as tmp:
        # Always pass site_names: the ephemeral context's own `local_site` writes to a temp folder.
        context.add_data_docs_site(site_name="tiermap", site_config={
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(tmp)},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"}})
        context.build_data_docs(site_names=["tiermap"])
        # Regenerated on every run (~4 MB, timestamped paths): not for git.
        (tmp / ".gitignore").write_text("*\n")
    return str(docs_dir / "index.html")


def _report(dataset: str | None, checks: list[Check], checksums: dict[str, str], docs: str | None) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "success": all(c.success is not False for c in checks),
        "checks": [asdict(c) for c in checks],
        "checksums": checksums,
        "data_docs": docs,
    }


def validate_dataset(ds: DatasetPaths, annotators: int = DEFAULT_ANNOTATORS) -> dict:
    """Run the suite over gt/ and labels/labels.parquet; write validation.json and Data Docs; return the report.

    `checksums` are the md5 of every GT file at validation time (`tiermap release` compares them).
    Without a labels table (a downloaded GT) its checks are reported as not checked, not as passed.
    """
    inp = _dataset_inputs(ds)
    checks, docs = run_suite(inp, _specs(inp, annotators, dataset=True), ds.name, ds.dir / DOCS_DIRNAME)
    report = _report(ds.name, checks, gt_checksums(ds.gt) if ds.gt.is_dir() else {}, docs)
    atomic.write_text(ds.validation_report, dump_json(report))
    return report


def validate_labels_file(path: Path, docs_dir: Path | None = None) -> dict:
    """Check one gt_categories.json on its own (the checks that need no cloud, labels table or prompt list).

    Writes nothing except Data Docs into `docs_dir` when given. The scene name is the file's folder name.
    """
    path = Path(path)
    inp = _Inputs()
    specs = _specs(inp, DEFAULT_ANNOTATORS, dataset=False)  # these use none of inp's sets
    try:
        gt = read_gt_categories(path)
        inp.file(path)
        inp.add_gt(path.parent.name or ".", gt, None)
    except SchemaError as err:
        inp.file(path, err)
        inp.skipped.update({s.name: f"{path.name} unreadable" for s in specs if s.table != "files"})
    checks, docs = run_suite(inp, specs, path.parent.name or "labels", docs_dir)
    report = _report(None, checks, {path.name: md5(path)} if path.is_file() else {}, docs)
    report["file"] = str(path)
    return report


def format_summary(report: dict) -> list[str]:
    """Readable lines: one per check (ok / FAIL / skip), offending ids and labels under each failure, Data Docs path."""
    checks = report.get("checks", [])
    failed = [c for c in checks if c.get("success") is False]
    skipped = [c for c in checks if c.get("success") is None]
    what = f"dataset {report['dataset']}" if report.get("dataset") else report.get("file", "labels")
    verdict = "clean" if report.get("success") else f"FAILED ({len(failed)} of {len(checks)} checks)"
    lines = [f"validation of {what}: {verdict}" + (f", {len(skipped)} not checked" if skipped else "")]
    width = max((len(c["name"]) for c in checks), default=0)
    for c in checks:
        if c.get("success") is None:
            lines.append(f"  skip  {c['name']:<{width}}  not checked: {c.get('skipped')}")
            continue
        status = "ok  " if c["success"] else "FAIL"
        extra = f" ({c.get('unexpected_count', len(c['failures']))} unexpected)" if not c["success"] else ""
        lines.append(f"  {status}  {c['name']:<{width}}  {c.get('description', '')}{extra}")
        lines += [f"          {f}" for f in c.get("failures", [])]
    if report.get("data_docs"):
        lines.append(f"Data Docs: {report['data_docs']}")
    return lines
