"""The ``translated`` survey vector (docs/protocol.md §5.7, §8 "questionnaire"): the
questionnaire survey written in German (``language``) with an English and a French
translation of every text, and the definitions a client must refuse, with their codes."""

from __future__ import annotations

import copy
import json
from typing import Any

from deniable.errors import InvalidSurvey
from deniable.survey import Survey

from .questionnaire_vectors import QUESTIONNAIRE_SURVEY

__all__ = ["TRANSLATED_SURVEY", "invalid_translations"]


def _words(question: dict[str, Any], prefix: str) -> dict[str, Any]:
    """One question's texts in a made-up language: every member the question has."""
    words: dict[str, Any] = {"text": f"{prefix} {question['id']}?"}
    if "help" in question:
        words["help"] = f"{prefix}:\n{question['help']}"
    if "options" in question:
        words["options"] = [f"{prefix} {option}" for option in question["options"]]
    if "anchors" in question:
        words["anchors"] = {k: f"{prefix} {v}" for k, v in question["anchors"].items()}
    return words


def _translated() -> dict[str, Any]:
    survey = copy.deepcopy(QUESTIONNAIRE_SURVEY)
    english = copy.deepcopy(survey)
    for question in survey["questions"]:
        question.update(_words(question, "Frage"))
    # show_if names labels of the original (German) text, never a translation's.
    survey["questions"][3]["show_if"]["in"] = ["Frage Car", "Frage Bus"]
    survey["questions"][6]["show_if"]["any"][0]["includes"] = "Frage Price"
    return {
        **survey,
        "id": "translated",
        "title": "Fragen in drei Sprachen",
        "description": "Eine Beschreibung.\nZweite Zeile.",
        "language": "de",
        "translations": {
            "en": {
                "title": "Questions in three languages",
                "description": "A description.\nSecond line.",
                "questions": {q["id"]: _words(q, "Question") for q in english["questions"]},
            },
            "fr": {
                "title": "Questions en trois langues",
                "description": "Une description.\nDeuxième ligne.",
                "questions": {q["id"]: _words(q, "Question (fr)") for q in english["questions"]},
            },
        },
    }


TRANSLATED_SURVEY: dict[str, Any] = _translated()


def invalid_translations() -> list[dict[str, Any]]:
    """Variants of the translated survey a client must refuse (§5.7), each with its code."""

    def variant(reason: str, code: str, change) -> dict[str, Any]:
        definition = Survey.from_dict(copy.deepcopy(TRANSLATED_SURVEY)).to_dict()  # as signed
        change(definition)
        try:
            Survey.from_dict(json.loads(json.dumps(definition)), resolved=True)
        except InvalidSurvey as error:
            assert error.reason == code, (reason, error.reason, error)
        else:  # pragma: no cover - a vector that does not refuse is a generator bug
            raise AssertionError(f"{reason}: accepted")
        return {"reason": reason, "code": code, "definition": definition}

    en = lambda d: d["translations"]["en"]  # noqa: E731
    questions = lambda d: en(d)["questions"]  # noqa: E731
    return [
        variant("language in upper case", "language", lambda d: d.update(language="DE")),
        variant("language with a region", "language", lambda d: d.update(language="de-CH")),
        variant("language en written out", "language", lambda d: d.update(language="en")),
        variant("a translation key not a language", "language",
                lambda d: d["translations"].update(english=en(d))),
        variant("a translation into the survey's own language", "translation",
                lambda d: d["translations"].update(de=en(d))),
        variant("no translation at all", "translation", lambda d: d.update(translations={})),
        variant("translations not an object", "wrong-type", lambda d: d.update(translations=[])),
        variant("a translation without its title", "missing-member", lambda d: en(d).pop("title")),
        variant("an empty translated description", "description-empty",
                lambda d: en(d).update(description="")),
        variant("a translation with an unknown member", "unknown-member",
                lambda d: en(d).update(language="en")),
        variant("a question not translated", "translation", lambda d: questions(d).pop("five")),
        variant("an unknown question translated", "translation",
                lambda d: questions(d).update(nope={"text": "No?"})),
        variant("an option missing", "translation",
                lambda d: questions(d)["commute"]["options"].pop()),
        variant("two options alike", "options-duplicate",
                lambda d: questions(d)["commute"].update(options=["A", "A", "B"])),
        variant("help the question has not", "translation",
                lambda d: questions(d)["commute"].update(help="Help")),
        variant("help missing", "missing-member", lambda d: questions(d)["smoke"].pop("help")),
        variant("anchors missing", "missing-member",
                lambda d: questions(d)["seven"].pop("anchors")),
        variant("a blank text", "text-blank",
                lambda d: questions(d)["smoke"].update(text="\u200b")),
        variant("a title over 200 characters", "text-length",
                lambda d: en(d).update(title="t" * 201)),
        variant("an option with a control character", "text-control",
                lambda d: questions(d)["reasons"]["options"].__setitem__(0, "a\x1bb")),
    ]  # fmt: skip
