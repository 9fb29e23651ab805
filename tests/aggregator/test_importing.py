"""create-survey's importers: XLSForm workbooks (written here with openpyxl, read by pyxform),
YAML and JSON with defaults, and --dry-run, which creates nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

openpyxl = pytest.importorskip("openpyxl")
pytest.importorskip("pyxform")

from deniable.aggregator.importing import (  # noqa: E402
    ImportRefused,
    fill_defaults,
    read_definition,
    read_xlsform,
    survey_id_from_title,
)
from deniable.aggregator.storage import open_storage  # noqa: E402
from deniable.survey import FORMAT, Survey  # noqa: E402

from .test_cli import call, run  # noqa: E402
from .test_cli import initialised as initialised  # noqa: E402,F401 - a fixture
from .test_cli import paths as paths  # noqa: E402,F401 - a fixture


def workbook(path: Path, survey: list[list], choices: list[list], settings=None) -> Path:
    """An XLSForm as operators write them: survey, choices and settings sheets."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "survey"
    for row in survey:
        sheet.append(row)
    sheet = book.create_sheet("choices")
    for row in choices:
        sheet.append(row)
    if settings:
        sheet = book.create_sheet("settings")
        for row in settings:
            sheet.append(row)
    book.save(path)
    return path


# A clinic's patient-experience form: every feature the importer maps.
SUPPORTED = [
    ["type", "name", "label", "hint", "required", "relevant", "constraint"],
    ["select_one yn", "smoker", "Do you smoke?", "", "yes", "", ""],
    ["integer", "cigarettes", "How many a day?", "Your usual day", "", "${smoker} = 'yes'",
     ". >= 1 and . <= 60"],
    ["begin_group", "diet", "Diet", "", "", "${smoker} != 'yes'", ""],
    ["select_multiple drinks", "drinks", "Which do you drink?", "", "yes", "", ""],
    ["decimal", "sleep", "Hours of sleep", "", "yes", "selected(${drinks}, 'coffee')",
     "${sleep} >= 0 and ${sleep} <= 24"],
    ["end_group", "", "", "", "", "", ""],
    ["select_one rating", "care", "How was your care?", "", "yes",
     "${cigarettes} > 10 or ${smoker} = 'no'", ""],
    ["start", "start", "", "", "", "", ""],
]  # fmt: skip
SUPPORTED_CHOICES = [
    ["list_name", "name", "label"],
    ["yn", "yes", "Yes"],
    ["yn", "no", "No"],
    ["drinks", "tea", "Tea"],
    ["drinks", "coffee", "Coffee"],
    ["drinks", "water", "Water"],
    ["rating", "good", "Good"],
    ["rating", "fair", "Fair"],
    ["rating", "poor", "Poor"],
]


def test_a_fully_supported_form_maps_to_the_contract_fields(tmp_path) -> None:
    path = workbook(
        tmp_path / "clinic.xlsx",
        SUPPORTED,
        SUPPORTED_CHOICES,
        [["form_title", "form_id"], ["Patient experience 2026", "Clinic_2026"]],
    )
    imported = read_xlsform(path, epsilon=0.5)
    definition = imported.definition
    assert definition["format"] == FORMAT
    assert definition["id"] == "clinic_2026"
    assert definition["title"] == "Patient experience 2026"
    questions = {q["id"]: q for q in definition["questions"]}
    assert list(questions) == ["smoker", "cigarettes", "drinks", "sleep", "care"]
    assert questions["smoker"] == {
        "id": "smoker",
        "type": "single_choice",
        "text": "Do you smoke?",
        "options": ["Yes", "No"],
        "epsilon": 0.5,
    }
    assert questions["cigarettes"] == {
        "id": "cigarettes",
        "type": "numeric",
        "text": "How many a day?",
        "lo": 1,
        "hi": 60,
        "help": "Your usual day",
        "optional": True,  # not required
        "show_if": {"question": "smoker", "equals": "Yes"},
        "epsilon": 0.5,
    }
    # the group's relevant (!= on a two-choice question: the other one) joins its questions'
    assert questions["drinks"]["show_if"] == {"question": "smoker", "equals": "No"}
    assert questions["drinks"]["options"] == ["Tea", "Coffee", "Water"]
    assert questions["sleep"]["show_if"] == {
        "all": [
            {"question": "smoker", "equals": "No"},
            {"question": "drinks", "includes": "Coffee"},
        ]
    }
    assert (questions["sleep"]["lo"], questions["sleep"]["hi"]) == (0, 24)
    # > 10 on an integer is 11 and up, cut to the question's range
    assert questions["care"]["show_if"] == {
        "any": [
            {"question": "cigarettes", "between": [11, 60]},
            {"question": "smoker", "equals": "No"},
        ]
    }
    assert "optional" not in questions["care"]
    assert imported.notes == (
        "row 9 (start): device metadata (start) left out: Deniable records no times or device data",
    )


# One row per thing the survey format cannot express, as operators' forms have them.
UNSUPPORTED = [
    ["type", "name", "label", "required", "relevant", "constraint", "calculation"],
    ["select_one yn", "consent", "Do you agree?", "yes", "", "", ""],
    ["text", "name", "Your name", "", "", "", ""],
    ["date", "born", "Date of birth", "", "", "", ""],
    ["begin_repeat", "children", "Children", "", "", "", ""],
    ["integer", "age", "Age", "", "", ". >= 0 and . <= 17", ""],
    ["end_repeat", "", "", "", "", "", ""],
    ["calculate", "score", "", "", "", "", "1 + 1"],
    ["integer", "visits", "Visits", "", "", ". >= 0 and . <= ${consent}", ""],
    ["integer", "nights", "Nights", "", "", "", ""],
    ["select_one yn", "again", "Again?", "", "not(${consent} = 'yes')", "", ""],
    ["select_one yn", "later", "Later?", "", "${consent} = ${again}", "", ""],
]  # fmt: skip


def test_every_unsupported_feature_is_refused_with_its_row_and_reason(tmp_path) -> None:
    path = workbook(tmp_path / "census.xlsx", UNSUPPORTED, SUPPORTED_CHOICES)
    with pytest.raises(ImportRefused) as refused:
        read_xlsform(path)
    lines = refused.value.lines
    assert lines == (
        "row 3 (name): free text cannot be randomized with a guarantee",
        "row 4 (born): dates are not a question type",
        "row 5 (children): repeats are not supported (every respondent answers each question once)",
        "row 8 (score): calculations are not supported",
        "row 9 (visits): constraint '. >= 0 and . <= ${consent}': cross-question constraints "
        "are not supported (it refers to consent)",
        "row 10 (nights): a number needs a range constraint, e.g. '. >= 0 and . <= 120'",
        "row 11 (again): relevant \"not(${consent} = 'yes')\": the function or word 'not' has "
        "no equivalent",
        "row 12 (later): relevant '${consent} = ${again}': two questions compared with each other",
    )


def test_the_cli_refuses_an_unsupported_form_one_line_each_status_4(initialised, capsys):
    path = workbook(initialised["dir"] / "census.xlsx", UNSUPPORTED, SUPPORTED_CHOICES)
    status, out, err = call(capsys, run(initialised, "create-survey", str(path)))
    assert status == 4 and out == ""
    lines = err.splitlines()
    assert len(lines) == 9  # eight rows, then the summary
    assert all(line.startswith(f"deniable-aggregator: error: {path} row ") for line in lines[:8])
    assert lines[-1].endswith("8 items cannot be imported (above); nothing was created")
    storage = open_storage({"DATABASE": str(initialised["database"])})
    assert storage.list_surveys() == []
    storage.close()


TWO_LANGUAGES = [
    ["type", "name", "label::English (en)", "label::Français (fr)", "hint::Français (fr)",
     "required"],
    ["select_one yn", "member", "Are you a member?", "Êtes-vous membre ?", "Adhésion", "yes"],
    ["integer", "years", "For how many years?", "Depuis combien d'années ?", "", "yes"],
]  # fmt: skip
TWO_LANGUAGE_CHOICES = [
    ["list_name", "name", "label::English (en)", "label::Français (fr)"],
    ["yn", "yes", "Yes", "Oui"],
    ["yn", "no", "No", "Non"],
]


def test_a_form_in_two_languages_keeps_both(initialised, capsys) -> None:
    """The chosen language's labels are the survey's text and its ``language``; the other's a
    translation (one that lacks a hint the original has is left out, and a note says why)."""
    rows = [
        row + ([". >= 0 and . <= 80"] if row[1] == "years" else ["constraint"])
        for row in TWO_LANGUAGES
    ]
    rows[1][-1] = ""
    path = workbook(
        initialised["dir"] / "club.xlsx",
        rows,
        TWO_LANGUAGE_CHOICES,
        [["form_title", "form_id", "default_language"], ["Club", "club", "English (en)"]],
    )
    english = read_xlsform(path)
    definition = english.definition
    assert definition["questions"][0]["text"] == "Are you a member?"
    assert definition["questions"][0]["options"] == ["Yes", "No"]
    assert "help" not in definition["questions"][0]  # no English hint: none
    assert "language" not in definition  # English: the default
    assert definition["translations"] == {
        "fr": {
            "title": "Club",
            "questions": {
                "member": {"text": "Êtes-vous membre ?", "options": ["Oui", "Non"]},
                "years": {"text": "Depuis combien d'années ?"},
            },
        }
    }
    assert english.notes == (
        "the survey's text is in 'English (en)' (choose another with --language)",
        "translations: fr (the title has one language in an XLSForm: it is the same in each)",
    )
    french = read_xlsform(path, language="Français (fr)")
    first = french.definition["questions"][0]
    assert (first["text"], first["options"], first["help"]) == (
        "Êtes-vous membre ?",
        ["Oui", "Non"],
        "Adhésion",
    )
    assert french.definition["language"] == "fr" and "translations" not in french.definition
    assert "labels in 'English (en)' left out: row 2 (member) has no hint in it" in french.notes
    # Created through the CLI, translation and all.
    status, out, err = call(capsys, run(initialised, "create-survey", str(path)))
    assert status == 0, err
    assert "created survey 'club': 2 questions" in out
    assert err.splitlines() == [f"note: {note}" for note in english.notes]
    status, _, err = call(
        capsys, run(initialised, "create-survey", str(path), "--language", "Deutsch")
    )
    assert status == 2
    assert "has no labels in 'Deutsch'; it has: 'English (en)', 'Français (fr)'" in err


def test_a_german_form_with_english_labels_is_a_german_survey_translated(tmp_path) -> None:
    """The review's form: labels in English (en) and Deutsch (de), default_language de."""
    path = workbook(
        tmp_path / "glueck.xlsx",
        [
            [
                "type",
                "name",
                "label::English (en)",
                "label::Deutsch (de)",
                "hint::English (en)",
                "hint::Deutsch (de)",
                "label::Klingon",
                "required",
            ],
            [
                "select_one mood",
                "mood",
                "How are you?",
                "Wie geht es Ihnen?",
                "Today",
                "Heute",
                "x",
                "yes",
            ],
            ["select_multiple mood", "work", "Work?", "Arbeit?", "", "", "y", ""],
        ],  # fmt: skip
        [
            ["list_name", "name", "label::English (en)", "label::Deutsch (de)", "label::Klingon"],
            ["mood", "good", "Good", "Gut", "a"],
            ["mood", "bad", "Bad", "Schlecht", "b"],
        ],
        [["form_title", "form_id", "default_language"], ["Glück", "glueck", "Deutsch (de)"]],
    )
    imported = read_xlsform(path)
    definition = imported.definition
    assert definition["language"] == "de"
    assert [q["text"] for q in definition["questions"]] == ["Wie geht es Ihnen?", "Arbeit?"]
    assert definition["questions"][0]["help"] == "Heute"
    english = definition["translations"]["en"]["questions"]
    assert english == {
        "mood": {"text": "How are you?", "help": "Today", "options": ["Good", "Bad"]},
        "work": {"text": "Work?", "options": ["Good", "Bad"]},
    }
    assert (
        "labels in 'Klingon' left out: no language code, e.g. label::Deutsch (de)" in imported.notes
    )
    survey = Survey.from_dict(definition)  # what the aggregator stores: valid as imported
    assert survey.language == "de" and survey.translations["en"].questions["mood"].options == (
        "Good",
        "Bad",
    )


def test_a_minimal_yaml_file_gets_the_defaults(initialised, capsys) -> None:
    path = initialised["dir"] / "staff.yaml"
    path.write_text(
        "title: Staff survey, May 2026\n"
        "questions:\n"
        "  - type: yes_no\n"
        "    text: Did you feel safe at work this month?\n"
        "  - type: single_choice\n"
        "    text: How do you get to work?\n"
        "    options: [Car, Bus, Bike, Walk]\n"
        "    epsilon: 2\n",
        encoding="utf-8",
    )
    status, out, err = call(capsys, run(initialised, "create-survey", str(path)))
    assert status == 0, err
    assert "created survey 'staff-survey-may-2026': 2 questions, total epsilon 3" in out
    storage = open_storage({"DATABASE": str(initialised["database"])})
    survey = storage.get_survey("staff-survey-may-2026").survey
    storage.close()
    assert survey.format == FORMAT
    assert [(q.id, q.epsilon) for q in survey.questions] == [("q1", 1.0), ("q2", 2.0)]


def test_defaults_never_replace_what_the_file_gives() -> None:
    given = {"format": FORMAT, "id": "x", "title": "T", "epsilon": 3, "questions": [{"id": "a"}]}
    assert fill_defaults(given) == {
        "format": FORMAT,
        "id": "x",
        "title": "T",
        "questions": [{"id": "a", "epsilon": 3}],
    }
    assert survey_id_from_title("Été 2026: Qualité!") == "ete-2026-qualite"
    assert survey_id_from_title("!!!") is None


def test_yaml_errors_are_one_line_with_status_2(initialised, capsys, tmp_path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text("title: [unclosed\n", encoding="utf-8")
    status, _, err = call(capsys, run(initialised, "create-survey", str(path)))
    assert status == 2 and "is not valid YAML (line 2)" in err and len(err.splitlines()) == 1
    with pytest.raises(ValueError, match="XLSForm"):
        read_definition(str(path), language="French")


def test_dry_run_prints_the_advice_and_creates_nothing(paths, capsys) -> None:
    path = paths["dir"] / "pulse.json"
    path.write_text(
        json.dumps(
            {
                "title": "Pulse",
                "questions": [
                    {"type": "yes_no", "text": "Stressed?"},
                    {"type": "numeric", "text": "Hours", "lo": 0, "hi": 120},
                ],
            }
        ),
        encoding="utf-8",
    )
    status, out, err = call(capsys, run(paths, "create-survey", str(path), "--dry-run"))
    assert status == 0, err
    assert (
        out.splitlines()[0] == "would create survey 'pulse' (Pulse): 2 questions, total epsilon 2"
    )
    row = next(line.split() for line in out.splitlines() if line.startswith("q1 "))
    # the planner's figures for a yes/no at ε = 1 (docs/choosing-epsilon.md: 1,440 and 367)
    assert row == ["q1", "yes_no", "1", "binary_rr", "1,440", "367"]
    assert "nothing was created" in out
    assert not paths["database"].exists() and not paths["key"].exists()
    status, out, _ = call(capsys, run(paths, "create-survey", str(path), "--dry-run", "--json"))
    document = json.loads(out)
    assert document["advice"][0]["respondents"] == {"5": 1440, "10": 367}
    assert Survey.from_dict(document["definition"]).id == "pulse"
    assert not paths["database"].exists()


def test_the_fully_supported_form_is_created_and_planned(initialised, capsys) -> None:
    """With the survey parser taking the contract's fields (optional, help, show_if), the
    form maps to a survey it accepts, the dry run plans it, and create-survey stores it."""
    path = workbook(initialised["dir"] / "clinic.xlsx", SUPPORTED, SUPPORTED_CHOICES)
    survey = Survey.from_dict(read_xlsform(path).definition)
    assert [q.id for q in survey.questions] == ["smoker", "cigarettes", "drinks", "sleep", "care"]
    status, out, err = call(capsys, run(initialised, "create-survey", str(path), "--dry-run"))
    assert status == 0, err
    rows = [line.split()[0] for line in out.splitlines()[3:8]]
    assert rows == ["smoker", "cigarettes", "drinks", "sleep", "care"]
    status, out, err = call(capsys, run(initialised, "create-survey", str(path)))
    assert status == 0, err
    assert "created survey 'clinic': 5 questions, total epsilon 5" in out


def test_a_range_of_1_5_1_7_or_0_10_is_a_scale(tmp_path) -> None:
    path = workbook(
        tmp_path / "nps.xlsx",
        [
            ["type", "name", "label", "parameters", "required", "relevant"],
            ["range", "satisfied", "How satisfied are you?", "start=1 end=5 step=1", "yes", ""],
            [
                "range",
                "recommend",
                "Would you recommend us?",
                "start=0 end=10",
                "yes",
                "${satisfied} >= 4",
            ],
            ["range", "why", "How likely to return?", "start=1 end=7", "", "${recommend} != 10"],
            ["range", "odd", "Odd range", "start=0 end=100 step=5", "yes", ""],
        ],  # fmt: skip
        [["list_name", "name", "label"]],
    )
    with pytest.raises(ImportRefused) as refused:
        read_xlsform(path)
    assert refused.value.lines == (
        "row 5 (odd): a range must be 1 to 5, 1 to 7 or 0 to 10 in steps of 1 (a scale)",
    )
    book = openpyxl.load_workbook(path)
    book["survey"].delete_rows(5)
    book.save(path)
    questions = read_xlsform(path).definition["questions"]
    assert [(q["type"], q["points"]) for q in questions] == [
        ("scale", 5),
        ("scale", 11),
        ("scale", 7),
    ]
    assert questions[1]["show_if"] == {"question": "satisfied", "between": [4, 5]}
    assert questions[2]["show_if"] == {"question": "recommend", "in": list(range(10))}
    assert questions[2]["optional"] is True
    survey = Survey.from_dict(read_xlsform(path).definition)  # the parser takes it
    assert [q.type for q in survey.questions] == ["scale", "scale", "scale"]


def test_a_yaml_file_s_language_and_translations_pass_through(tmp_path) -> None:
    path = tmp_path / "kurz.yaml"
    path.write_text(
        "title: Kurz\nlanguage: de\nquestions:\n  - text: Rauchen Sie?\n    type: yes_no\n"
        "translations:\n  en:\n    title: Short\n    questions:\n"
        "      q1:\n        text: Do you smoke?\n",
        encoding="utf-8",
    )
    definition = read_definition(str(path)).definition
    survey = Survey.from_dict(definition)
    assert survey.language == "de"
    assert survey.translations["en"].questions["q1"].text == "Do you smoke?"
