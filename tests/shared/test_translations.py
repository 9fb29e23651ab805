"""A survey's language and translations (docs/protocol.md §5.7): validated like the texts they
translate, refused through the survey's one refusal path, and words only: a report is the same
whatever language the respondent read."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from deniable.errors import InvalidSurvey
from deniable.survey import FORMAT_V1, Survey
from deniable.translations import survey_words


def german() -> dict:
    """A German survey with an English translation: every kind of text a question has."""
    return {
        "format": "deniable.survey/2",
        "id": "glueck",
        "title": "Glück bei der Arbeit",
        "description": "Eine kurze Umfrage.",
        "language": "de",
        "questions": [
            {"id": "froh", "type": "yes_no", "text": "Sind Sie froh?", "epsilon": 1.0},
            {
                "id": "farbe",
                "type": "single_choice",
                "text": "Welche Farbe?",
                "epsilon": 1.0,
                "options": ["rot", "grün", "blau"],
                "help": "Die erste, die Ihnen einfällt.",
            },
            {
                "id": "wie",
                "type": "scale",
                "points": 5,
                "text": "Wie zufrieden?",
                "epsilon": 1.0,
                "anchors": {"low": "gar nicht", "high": "sehr"},
                "optional": True,
            },
            {
                "id": "sport",
                "type": "multiple_choice",
                "text": "Welcher Sport?",
                "epsilon": 1.0,
                "options": ["Laufen", "Schwimmen", "Rad"],
            },
        ],
        "translations": {
            "en": {
                "title": "Happiness at work",
                "description": "A short survey.",
                "questions": {
                    "froh": {"text": "Are you happy?"},
                    "farbe": {
                        "text": "Which colour?",
                        "options": ["red", "green", "blue"],
                        "help": "The first that comes to mind.",
                    },
                    "wie": {"text": "How satisfied?", "anchors": {"low": "not", "high": "very"}},
                    "sport": {"text": "Which sport?", "options": ["running", "swimming", "bike"]},
                },
            }
        },
    }


def test_language_and_translations_round_trip_through_the_signed_bytes() -> None:
    survey = Survey.from_dict(german())
    assert survey.language == "de" and set(survey.translations) == {"en"}
    again = Survey.from_dict(json.loads(survey.canonical_bytes()), resolved=True)
    assert again.canonical_bytes() == survey.canonical_bytes()
    assert (again.language, again.translations) == (survey.language, survey.translations)
    words = survey.translations["en"].questions
    assert words["farbe"].options == ("red", "green", "blue")
    assert words["wie"].anchors == ("not", "very")


def test_a_survey_without_them_is_english_and_keeps_its_bytes() -> None:
    data = german()
    del data["language"], data["translations"]
    survey = Survey.from_dict(data)
    assert survey.language == "en" and survey.translations == {}
    assert b"language" not in survey.canonical_bytes()
    # Written out, "en" is the default: the canonical form omits it, so a client refuses it.
    data["language"] = "en"
    assert Survey.from_dict(data).canonical_bytes() == survey.canonical_bytes()
    with pytest.raises(InvalidSurvey) as refused:
        Survey.from_dict(data, resolved=True)
    assert refused.value.reason == "language"


def test_the_words_follow_the_reader_s_languages() -> None:
    survey = Survey.from_dict(german())
    assert survey_words(survey, ["en-GB"])[0] == "en"
    assert survey_words(survey, ["en"])[1].title == "Happiness at work"
    assert survey_words(survey, ["fr", "de", "en"])[0] == "de"  # its own, asked before English
    assert survey_words(survey, ["fr"])[1].title == "Glück bei der Arbeit"
    assert survey_words(survey, [])[0] == "de"


def _refusal(change) -> InvalidSurvey:
    data = german()
    change(data)
    with pytest.raises(InvalidSurvey) as refused:
        Survey.from_dict(data)
    return refused.value


def _en(data: dict) -> dict:
    return data["translations"]["en"]


@pytest.mark.parametrize(
    ("change", "reason", "words"),
    [
        (lambda d: d.update(language="DE"), "language", "two or three lowercase letters"),
        (lambda d: d.update(language="de-CH"), "language", "lowercase letters"),
        (lambda d: d.update(language=7), "language", "got 7"),
        (lambda d: d.update(translations=[]), "wrong-type", "object of languages"),
        (lambda d: d.update(translations={}), "translation", "1 to 20 languages"),
        (lambda d: d["translations"].update(de=_en(d)), "translation", "own language"),
        (lambda d: d["translations"].update(english=_en(d)), "language", "got 'english'"),
        (lambda d: _en(d).pop("title"), "missing-member", "title"),
        (lambda d: _en(d).pop("description"), "missing-member", "description"),
        (lambda d: _en(d).update(extra="x"), "unknown-member", "extra"),
        (lambda d: _en(d)["questions"].pop("wie"), "translation", "'wie' is not translated"),
        (
            lambda d: _en(d)["questions"].update(nope={"text": "x"}),
            "translation",
            "no question 'nope'",
        ),
        (
            lambda d: _en(d)["questions"]["farbe"]["options"].pop(),
            "translation",
            "all 3 options",
        ),
        (
            lambda d: _en(d)["questions"]["farbe"].update(options=["red", "red", "blue"]),
            "options-duplicate",
            "distinct",
        ),
        (lambda d: _en(d)["questions"]["froh"].update(help="x"), "translation", "no help"),
        (lambda d: _en(d)["questions"]["farbe"].pop("help"), "missing-member", "help"),
        (lambda d: _en(d)["questions"]["wie"].pop("anchors"), "missing-member", "anchors"),
        (lambda d: _en(d)["questions"]["froh"].update(text=" "), "text-blank", "blank"),
        (lambda d: _en(d)["questions"]["froh"].update(text="x" * 2001), "text-length", "2000"),
        (lambda d: _en(d).update(title="x" * 201), "text-length", "200"),
        (
            lambda d: _en(d)["questions"]["sport"].update(options=["a", "b\r", "c"]),
            "text-control",
            "U+000D",
        ),
        (
            lambda d: _en(d)["questions"]["wie"].update(anchors={"low": "x"}),
            "missing-member",
            "high",
        ),
    ],
)
def test_a_translation_that_does_not_fit_the_survey_is_refused(change, reason, words) -> None:
    refused = _refusal(change)
    assert refused.reason == reason, str(refused)
    assert words in str(refused)


def test_the_description_is_translated_only_when_there_is_one() -> None:
    def change(data: dict) -> None:
        del data["description"]

    refused = _refusal(change)
    assert refused.reason == "translation" and "no description" in str(refused)


def test_format_1_refuses_both_members() -> None:
    for member in ("language", "translations"):
        data = copy.deepcopy(german())
        data["format"] = FORMAT_V1
        for q in data["questions"]:
            q.pop("optional", None), q.pop("help", None)
        data["questions"] = data["questions"][:2]
        data.pop("language" if member == "translations" else "translations")
        del data["translations" if member == "translations" else "language"]
        data[member] = german()[member]
        if member == "translations":
            data[member]["en"]["questions"] = {"froh": {"text": "Happy?"}}
        with pytest.raises(InvalidSurvey) as refused:
            Survey.from_dict(data)
        assert refused.value.reason == "format" and member in str(refused.value)


def test_a_report_is_the_same_whatever_language_was_read() -> None:
    """Answers go by index: the label chosen in English randomizes as the German one does."""
    from deniable.client.cli import in_language, original_answer

    survey = Survey.from_dict(german())
    lang, english = in_language(survey, "en")
    assert lang == "en" and english.title == "Happiness at work"
    answers = {"froh": True, "farbe": "green", "wie": 4, "sport": ["running", "bike"]}
    for shown_question in english.questions:
        signed = survey.question(shown_question.id)
        answer = original_answer(signed, shown_question, answers[shown_question.id])
        assert answer == {"farbe": "grün", "sport": ["Laufen", "Rad"]}.get(signed.id, answer)
        for seed in range(20):
            assert shown_question.randomize(
                answers[signed.id], np.random.default_rng(seed)
            ) == signed.randomize(answer, np.random.default_rng(seed))
