"""Validation of the published GT and the labels table with a great-expectations suite.

The files of a dataset are turned into pandas tables (one row per GT label, per object, per clutter
entry, per prompt line, per labels-table row, per file read), each table is validated in an ephemeral
great-expectations context, and every expectation becomes one named check of the report. Failures name
the offending scene, object id and label (mapped back from GE's unexpected rows). `validate_dataset`
writes `validation.json` (which `tiermap release` checks, GT checksums included) and Data Docs HTML.

great_expectations is imported inside the functions: it takes seconds, `import tiermap.app.validate` must not.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from tiermap.app.gather import Inputs, dataset_inputs, gt_checksums, md5
from tiermap.app.suite import Check, run_suite, specs_for
from tiermap.formats.base import SchemaError
from tiermap.formats.layout import DatasetPaths
from tiermap.formats.openlex3d import (
    read_gt_categories,
)
from tiermap.formats.records import (
    CheckResult,
    ValidationReport,
    write_validation_report,
)

DEFAULT_ANNOTATORS = 4

"""OpenLex3D protocol: every object is labelled by 4 annotators."""

DOCS_DIRNAME = "validation_docs"



def _report(dataset: str | None, checks: list[Check], checksums: dict[str, str], docs: str | None) -> ValidationReport:
    return ValidationReport(dataset=dataset, success=all(c.success is not False for c in checks),
                            checks=[CheckResult.model_validate(asdict(c)) for c in checks], checksums=checksums, data_docs=docs)



def validate_dataset(ds: DatasetPaths, annotators: int = DEFAULT_ANNOTATORS) -> ValidationReport:
    """Run the suite over gt/ and labels/labels.parquet; write validation.json and Data Docs; return the report.

    `checksums` are the md5 of every GT file at validation time (`tiermap release` compares them).
    Without a labels table (a downloaded GT) its checks are reported as not checked, not as passed.
    """
    inp = dataset_inputs(ds)
    checks, docs = run_suite(inp, specs_for(inp, annotators, dataset=True), ds.name, ds.dir / DOCS_DIRNAME)
    report = _report(ds.name, checks, gt_checksums(ds.gt) if ds.gt.is_dir() else {}, docs)
    write_validation_report(report, ds.validation_report)
    return report



def validate_labels_file(path: Path, docs_dir: Path | None = None) -> ValidationReport:
    """Check one gt_categories.json on its own (the checks that need no cloud, labels table or prompt list).

    Writes nothing except Data Docs into `docs_dir` when given. The scene name is the file's folder name.
    """
    path = Path(path)
    inp = Inputs()
    specs = specs_for(inp, DEFAULT_ANNOTATORS, dataset=False)  # these use none of inp's sets
    try:
        gt = read_gt_categories(path)
        inp.file(path)
        inp.add_gt(path.parent.name or ".", gt, None)
    except SchemaError as err:
        inp.file(path, err)
        inp.skipped.update({s.name: f"{path.name} unreadable" for s in specs if s.table != "files"})
    checks, docs = run_suite(inp, specs, path.parent.name or "labels", docs_dir)
    report = _report(None, checks, {path.name: md5(path)} if path.is_file() else {}, docs)
    report.file = str(path)
    return report



def format_summary(report: ValidationReport) -> list[str]:
    """Readable lines: one per check (ok / FAIL / skip), offending ids and labels under each failure, Data Docs path."""
    checks = report.checks
    failed = [c for c in checks if c.success is False]
    skipped = [c for c in checks if c.success is None]
    what = f"dataset {report.dataset}" if report.dataset else report.file or "labels"
    verdict = "clean" if report.success else f"FAILED ({len(failed)} of {len(checks)} checks)"
    lines = [f"validation of {what}: {verdict}" + (f", {len(skipped)} not checked" if skipped else "")]
    width = max((len(c.name) for c in checks), default=0)
    for c in checks:
        if c.success is None:
            lines.append(f"  skip  {c.name:<{width}}  not checked: {c.skipped}")
            continue
        status = "ok  " if c.success else "FAIL"
        extra = f" ({c.unexpected_count} unexpected)" if not c.success else ""
        lines.append(f"  {status}  {c.name:<{width}}  {c.description}{extra}")
        lines += [f"          {f}" for f in c.failures]
    if report.data_docs:
        lines.append(f"Data Docs: {report.data_docs}")
    return lines
