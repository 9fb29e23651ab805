"""The mechanism registry is the one place that lists mechanisms (docs/design.md, "Adding a
mechanism"): every class owns what it is, the browser client mirrors the registry in one
table, and no other code names a mechanism."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from deniable.mechanisms import (
    ALIASES,
    CATEGORICAL,
    CLASSES,
    LONGITUDINAL,
    MECHANISMS,
    NUMERIC_WITH_EXTRAS,
    QUESTION_MECHANISMS,
    Mechanism,
    mechanism_class,
)

ROOT = Path(__file__).resolve().parents[2]
BROWSER = ROOT / "client" / "browser"
# The source tree a mechanism's name must not leak into (tests, vectors and docs may name it).
SCANNED = ("shared", "client", "aggregator", "relay", "service", "analysis")
SUFFIXES = (".py", ".js", ".ts", ".html")
# The registry and its browser mirror.
REGISTRY = (ROOT / "shared" / "mechanisms" / "__init__.py", BROWSER / "survey.js")


def _source_files() -> list[Path]:
    files = []
    for root in SCANNED:
        for path in sorted((ROOT / root).rglob("*")):
            parts = set(path.relative_to(ROOT).parts)
            if path.suffix in SUFFIXES and not parts & {"test", "tests", "node_modules"}:
                files.append(path)
    return files


def _allowed(name: str) -> set[Path]:
    """The mechanism's own modules (every class with that wire name), their JS twins, and
    the registry with its mirror."""
    owners = [cls for cls in CLASSES if cls.name == name]
    places = {Path(inspect.getsourcefile(cls)).resolve() for cls in owners}
    places |= {BROWSER / cls.browser_module for cls in owners}
    return places | set(REGISTRY)


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_a_mechanism_name_is_quoted_only_in_its_own_places(name: str) -> None:
    quoted = re.compile(rf"""(["']){re.escape(name)}\1""")
    allowed = _allowed(name)
    leaks = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _source_files()
        if path.resolve() not in allowed
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if quoted.search(line)
    ]
    assert not leaks, f"{name!r} is named outside its module, its JS twin and the registry"


def test_the_scan_sees_the_whole_tree() -> None:
    # A scan that found nothing would pass whatever the tree says.
    files = {path.relative_to(ROOT).as_posix() for path in _source_files()}
    assert {"shared/resolution.py", "client/browser/respond.js", "client/browser/survey.js"} <= (
        files
    )
    assert any(name.startswith("aggregator/dashboard/templates/") for name in files)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_class_owns_what_it_is(cls: type[Mechanism]) -> None:
    assert cls.display_name and cls.display_name != cls.name
    twin = BROWSER / cls.browser_module
    assert twin.is_file(), f"{cls.__name__}: no browser module {cls.browser_module}"
    assert re.search(rf"class {cls.__name__} extends", twin.read_text("utf-8"))
    for module in cls.browser_files():
        assert (BROWSER / module).is_file()
    assert cls.kind in ("categorical", "numeric", "multiple")


def _example(question_type: str, name: str, *, longitudinal: bool = False) -> Mechanism:
    cls = mechanism_class(question_type, name, longitudinal=longitudinal)
    assert cls is not None
    if question_type == "multiple_choice":
        return cls(epsilon=1.0, options=3)
    if question_type == "numeric":
        return cls(epsilon=1.0, lo=0.0, hi=1.0)
    if longitudinal:
        return cls(epsilon=1.0, instantaneous_epsilon=2.0, domain_size=2)
    return cls(epsilon=1.0) if cls.binary else cls(epsilon=1.0, domain_size=5)


def _browser_table() -> list[dict[str, list[str]]]:
    text = (BROWSER / "survey.js").read_text("utf-8")
    table = re.search(r"const ORACLES =\s*`([^`]*)`", text)
    assert table, "survey.js has no ORACLES table"
    columns = ("mechanisms", "types", "file", "name", "names", "flags")
    return [
        dict(zip(columns, (cell.split(",") for cell in row.split()), strict=True))
        for row in table.group(1).splitlines()
    ]


def _forms() -> list[tuple[str, str, bool]]:
    forms = [(kind, name, False) for kind, table in QUESTION_MECHANISMS.items() for name in table]
    # A scale names what single choice may, but never a two-category oracle (5 points or more).
    forms += [
        (alias, name, False)
        for alias, kind in ALIASES.items()
        for name, cls in QUESTION_MECHANISMS[kind].items()
        if not getattr(cls, "binary", False)
    ]
    forms += [(kind, name, True) for kind in ("yes_no", "single_choice") for name in LONGITUDINAL]
    return forms


@pytest.mark.parametrize(("question_type", "name", "longitudinal"), _forms())
def test_the_browser_table_mirrors_the_registry(
    question_type: str, name: str, longitudinal: bool
) -> None:
    mechanism = _example(question_type, name, longitudinal=longitudinal)
    cls = type(mechanism)
    rows = [
        row
        for row in _browser_table()
        if name in row["mechanisms"]
        and question_type in row["types"]
        and ("longitudinal" in row["flags"]) == longitudinal
        and "extras" not in row["flags"]
    ]
    assert len(rows) == 1, (question_type, name, longitudinal)
    row = rows[0]
    assert row["name"] == [cls.__name__]
    assert [f"{row['file'][0]}.js"] == [cls.browser_module]
    imports = [flag[1:] + ".js" for flag in row["flags"] if flag.startswith("+")]
    assert tuple(imports) == cls.browser_imports
    assert sorted(row["names"]) == sorted(mechanism.resolved_parameters())
    assert ("binary" in row["flags"]) == bool(getattr(cls, "binary", False))


@pytest.mark.parametrize("name", sorted(NUMERIC_WITH_EXTRAS))
def test_the_browser_table_mirrors_a_numeric_question_with_extras(name: str) -> None:
    """An optional or conditional numeric question builds another class (docs/protocol.md §5.5):
    the browser's "extras" row names it, its module, imports and parameters."""
    cls = NUMERIC_WITH_EXTRAS[name]
    (row,) = [r for r in _browser_table() if "extras" in r["flags"] and name in r["mechanisms"]]
    assert row["types"] == ["numeric"] and row["name"] == [cls.__name__]
    assert [f"{row['file'][0]}.js"] == [cls.browser_module]
    imports = [flag[1:] + ".js" for flag in row["flags"] if flag.startswith("+")]
    assert tuple(imports) == cls.browser_imports
    mechanism = cls(epsilon=1.0, lo=0.0, hi=1.0, extras=2)
    assert sorted(row["names"]) == sorted(mechanism.resolved_parameters())


def test_the_browser_table_has_no_row_the_registry_lacks() -> None:
    forms = {(kind, name, longitudinal) for kind, name, longitudinal in _forms()}
    for row in _browser_table():
        longitudinal = "longitudinal" in row["flags"]
        for kind in row["types"]:
            for name in row["mechanisms"]:
                assert (kind, name, longitudinal) in forms, row


def test_the_recommendation_never_offers_a_two_category_oracle() -> None:
    from deniable.mechanisms import recommend

    for d in (2, 3, 17):
        offered = {c.mechanism for c in recommend(d, 1.0).candidates}
        assert not {name for name, cls in CATEGORICAL.items() if cls.binary} & offered


def test_every_form_of_every_mechanism_has_cross_language_vectors() -> None:
    from deniable.survey import Question

    from .vector_questions import CASES

    covered = set()
    for definition, _ in CASES:
        question = Question.from_dict(definition)
        covered.add((question.type, question.mechanism, question.longitudinal is not None))
    chosen = {(kind, name, longitudinal) for kind, name, longitudinal in _forms()}
    # yes/no, single choice and scale share every oracle; one of the types is enough for each.
    choice = ("yes_no", "single_choice", *ALIASES)
    asked = {(name, longitudinal) for kind, name, longitudinal in covered if kind in choice}
    for kind, name, longitudinal in chosen:
        if kind in choice:
            assert (name, longitudinal) in asked, (kind, name, longitudinal)
        else:
            assert (kind, name, longitudinal) in covered, (kind, name, longitudinal)
