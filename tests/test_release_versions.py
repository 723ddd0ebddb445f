"""Release versions are canonical X.Y.Z compared as numbers; anything else is refused before a push or a tag."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import BIN, run
from tiermap.app.cli import app
from tiermap.app.release import ReleaseError, check_ready, parse_version, released_versions
from tiermap.formats.layout import DatasetPaths


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed git + DVC repo with a local default remote and no GT."""
    r = tmp_path / "repo"
    r.mkdir()
    run(["git", "init", "-q", "-b", "main"], r)
    run([str(BIN / "dvc"), "init", "-q"], r)
    run([str(BIN / "dvc"), "remote", "add", "-d", "store", str(tmp_path / "remote")], r)
    run(["git", "add", "-A"], r)
    run(["git", "commit", "-q", "-m", "init"], r)
    return r


def tag(repo: Path, *names: str) -> None:
    for n in names:
        run(["git", "tag", "-a", n, "-m", n], repo)


def tags(repo: Path) -> list[str]:
    return run(["git", "tag", "-l"], repo).stdout.split()


@pytest.mark.parametrize("text, want", [
    ("1.2.3", (1, 2, 3)), ("0.10.0", (0, 10, 0)), ("10.0.0", (10, 0, 0)), ("0.0.0", (0, 0, 0)),
    ("01.2.3", None), ("1.02.3", None), ("1.2.03", None), ("1.2", None), ("v1.2.3", None), ("1.2.3 ", None), ("1.2.3\n", None),
    ("١.٢.٣", None), ("1.2.3.4", None), ("", None),
])
def test_parse_version(text: str, want: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == want


def test_versions_compare_as_numbers() -> None:
    assert parse_version("0.10.0") > parse_version("0.9.0")  # type: ignore[operator]
    assert parse_version("1.0.0") > parse_version("0.99.99")  # type: ignore[operator]


def test_non_canonical_tags_are_not_releases(repo: Path) -> None:
    tag(repo, "demo-gt@v0.9.0", "demo-gt@v0.10.0", "demo-gt@v01.2.3", "demo-gt@v2.0", "other-gt@v9.9.9")
    assert released_versions(repo, "demo") == [(0, 9, 0), (0, 10, 0)]


def test_checks_order_versions_by_number_and_ignore_non_canonical_tags(repo: Path) -> None:
    tag(repo, "demo-gt@v0.10.0", "demo-gt@v01.2.3")
    ds = DatasetPaths(repo / "datasets", "demo")
    with pytest.raises(ReleaseError, match="version 0.9.0 is lower than the latest release 0.10.0"):
        check_ready(repo, ds, "0.9.0", None)
    with pytest.raises(ReleaseError, match="already exists"):
        check_ready(repo, ds, "0.10.0", None)
    for version in ("1.2.3", "1.0.0", "0.11.0"):  # v01.2.3 neither exists as 1.2.3 nor blocks lower versions
        with pytest.raises(ReleaseError, match="no GT to release"):
            check_ready(repo, ds, version, None)


@pytest.mark.parametrize("version", ["01.2.3", "1.2.03", "1.2"])
def test_non_canonical_version_is_refused_before_anything(repo: Path, version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "datasets").mkdir()
    monkeypatch.chdir(repo)
    head = run(["git", "rev-parse", "HEAD"], repo).stdout
    res = CliRunner().invoke(app, ["release", version, "--root", str(repo / "datasets"), "--dataset", "demo"])
    assert res.exit_code == 2, (res.output, res.exception)
    err = res.stderr.strip()
    assert err.count("\n") == 0 and f"version {version!r}: expected X.Y.Z, numbers without leading zeros" in err, err
    assert tags(repo) == [] and run(["git", "rev-parse", "HEAD"], repo).stdout == head
    assert run(["git", "status", "--porcelain"], repo).stdout == ""
    assert not (repo.parent / "remote").exists()
