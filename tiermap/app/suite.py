"""The great-expectations suite: one named check per expectation over the gathered tables, and Data Docs.

great_expectations is imported inside the functions: it takes seconds, importing this module must not.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiermap import atomic
from tiermap.app.gather import COLUMNS, ID_COLUMNS, Inputs
from tiermap.formats.openlex3d import (
    CATEGORIES,
)

LABEL_REGEX = r"^[^\sA-Z_]+(?: [^\sA-Z_]+)*$"

"""Normalised label: no uppercase, no underscore, single spaces between words, none at either end."""

CLUTTER_ID_REGEX = r"^-?[0-9]+$"

PROMPT_REGEX = r"^\S(?:.*\S)?$"

MAX_LABEL_LENGTH = 64

MAX_FAILURES = 20



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



@dataclass
class Spec:
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



def specs_for(inp: Inputs, annotators: int, dataset: bool) -> list[Spec]:
    """The suite: every check of a dataset (or, dataset=False, those that need only gt_categories.json)."""
    cats = list(CATEGORIES)
    S = Spec
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



def run_suite(inp: Inputs, specs: list[Spec], name: str, docs_dir: Path | None = None) -> tuple[list[Check], str | None]:
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
