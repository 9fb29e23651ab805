"""A survey's language and its translations (format /2, docs/protocol.md §5.7).

``language`` is the language the survey's own text is written in: a BCP 47 primary
language subtag (RFC 5646 §2.2.1: two or three lowercase letters, "en", "de", "fil"),
English when omitted.  ``translations`` gives, per other language, the same texts in that
language: the title, the description, and per question its text, help, options and anchors,
every one the original has and no other.  They are words for people only: randomizing,
reports and results use answer indices, never labels, so a report is the same whatever
language the respondent read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .survey_checks import MAX_LABEL, check_text, fail, require_keys

__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGE",
    "MAX_TRANSLATIONS",
    "QuestionWords",
    "Translation",
    "check_language",
    "language_members",
    "parse_translations",
    "survey_words",
    "translations_document",
]

DEFAULT_LANGUAGE = "en"
# A primary language subtag only (no region or script): the page's lang attribute.
LANGUAGE = re.compile(r"[a-z]{2,3}")
MAX_TRANSLATIONS = 20
QUESTION_MEMBERS = {"text", "help", "options", "anchors"}


@dataclass(frozen=True, kw_only=True)
class QuestionWords:
    """One question's texts in one language (empty where the question has none)."""

    text: str
    help: str = ""
    options: tuple[str, ...] = ()
    anchors: tuple[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"text": self.text}
        if self.help:
            data["help"] = self.help
        if self.options:
            data["options"] = list(self.options)
        if self.anchors is not None:
            data["anchors"] = {"low": self.anchors[0], "high": self.anchors[1]}
        return data


@dataclass(frozen=True, kw_only=True)
class Translation:
    """A survey's texts in one other language."""

    title: str
    description: str = ""
    questions: Mapping[str, QuestionWords]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"title": self.title}
        if self.description:
            data["description"] = self.description
        data["questions"] = {qid: words.to_dict() for qid, words in self.questions.items()}
        return data


def check_language(where: str, value: object) -> str:
    """A primary language subtag: two or three lowercase letters (reason ``language``)."""
    if not isinstance(value, str) or not LANGUAGE.fullmatch(value):
        raise fail(
            where,
            f"must be a language code of two or three lowercase letters (en, de), got {value!r}",
            "language",
        )
    return value


def _question(where: str, data: object, question: Any) -> QuestionWords:
    has = {"text"}
    if question.help:
        has.add("help")
    if question.options:
        has.add("options")
    if question.anchors is not None:
        has.add("anchors")
    if isinstance(data, Mapping):
        odd = (data.keys() & QUESTION_MEMBERS) - has
        if odd:
            raise fail(
                where, f"the question has no {', '.join(sorted(odd))} to translate", "translation"
            )
    require_keys(where, data, has, has)
    assert isinstance(data, Mapping)
    text = check_text(f"{where}.text", data["text"])
    help = check_text(f"{where}.help", data["help"], newlines=True) if "help" in has else ""
    options: tuple[str, ...] = ()
    if "options" in has:
        raw = data["options"]
        if not isinstance(raw, list):
            raise fail(f"{where}.options", "must be a list of labels", "wrong-type")
        if len(raw) != len(question.options):
            raise fail(
                f"{where}.options",
                f"must translate all {len(question.options)} options, in order; got {len(raw)}",
                "translation",
            )
        options = tuple(check_text(f"{where}.options", o, MAX_LABEL) for o in raw)
        if len(set(options)) != len(options):
            raise fail(f"{where}.options", "labels must be distinct", "options-duplicate")
    anchors = None
    if "anchors" in has:
        raw = data["anchors"]
        require_keys(f"{where}.anchors", raw, {"low", "high"}, {"low", "high"})
        anchors = (
            check_text(f"{where}.anchors.low", raw["low"], MAX_LABEL),
            check_text(f"{where}.anchors.high", raw["high"], MAX_LABEL),
        )
    return QuestionWords(
        text=text,
        help=help,
        options=options,
        anchors=anchors,
    )


def parse_translations(
    data: object, language: str, description: str, questions: tuple[Any, ...]
) -> dict[str, Translation]:
    """``translations`` checked against the survey: one per language other than ``language``,
    each with every text the survey has (same limits) and no other (docs/protocol.md §5.7)."""
    where = "survey.translations"
    if not isinstance(data, Mapping):
        raise fail(where, "must be an object of languages", "wrong-type")
    if not 1 <= len(data) <= MAX_TRANSLATIONS:
        raise fail(where, f"must have 1 to {MAX_TRANSLATIONS} languages", "translation")
    result: dict[str, Translation] = {}
    for lang in sorted(data):
        check_language(f"{where} key", lang)
        if lang == language:
            raise fail(
                f"{where}.{lang}",
                f"{lang!r} is the survey's own language: not a translation",
                "translation",
            )
        here = f"{where}.{lang}"
        entry = data[lang]
        needed = {"title", "questions"} | ({"description"} if description else set())
        if isinstance(entry, Mapping) and "description" in entry and not description:
            raise fail(here, "the survey has no description to translate", "translation")
        require_keys(here, entry, needed, needed)
        assert isinstance(entry, Mapping)
        if entry.get("description") == "":  # as the survey's: omitted, never "" (§2.2)
            raise fail(f"{here}.description", "must not be empty", "description-empty")
        texts = entry["questions"]
        if not isinstance(texts, Mapping):
            raise fail(f"{here}.questions", "must be an object of question ids", "wrong-type")
        ids = [q.id for q in questions]
        unknown = sorted(set(texts) - set(ids))
        if unknown:
            raise fail(
                f"{here}.questions", f"the survey has no question {unknown[0]!r}", "translation"
            )
        absent = [qid for qid in ids if qid not in texts]
        if absent:
            raise fail(
                f"{here}.questions", f"question {absent[0]!r} is not translated", "translation"
            )
        result[lang] = Translation(
            title=check_text(f"{here}.title", entry["title"], MAX_LABEL),
            description=check_text(
                f"{here}.description", entry.get("description", ""), empty=True, newlines=True
            )
            if description
            else "",
            questions={
                q.id: _question(f"{here}.questions.{q.id}", texts[q.id], q) for q in questions
            },
        )
    return result


def translations_document(translations: Mapping[str, Translation]) -> dict[str, Any]:
    """The ``translations`` member as the definition writes it."""
    return {lang: translations[lang].to_dict() for lang in sorted(translations)}


def language_members(
    data: Mapping[str, Any], format: str, resolved: bool, description: str, questions: tuple
) -> dict[str, Any]:
    """The survey's ``language`` and ``translations`` checked: keyword arguments for
    :class:`deniable.survey.Survey` (none when the definition has neither)."""
    from .survey import FORMAT

    present = sorted({"language", "translations"} & data.keys())
    if not present:
        return {}
    if format != FORMAT:
        raise fail(f"survey.{present[0]}", f"needs format {FORMAT}", "format")
    language = DEFAULT_LANGUAGE
    if "language" in data:
        language = check_language("survey.language", data["language"])
        if resolved and language == DEFAULT_LANGUAGE:
            # Why: the canonical form omits the default, so "en" written out could not be the
            # signed bytes of any survey (as an empty description, docs/protocol.md §2.2).
            raise fail("survey.language", "must be omitted for English (en)", "language")
    members: dict[str, Any] = {"language": language}
    if "translations" in data:
        members["translations"] = parse_translations(
            data["translations"], language, description, questions
        )
    return members


def survey_words(survey: Any, wanted: list[str] | tuple[str, ...] = ()) -> tuple[str, Any]:
    """(language, texts) of ``survey`` for a reader wanting ``wanted`` (language tags, best
    first): the first the survey is written or translated in, else its own language.  The
    texts are a :class:`Translation` (the original's, for its own language)."""
    for tag in wanted:
        primary = str(tag).lower().split("-")[0]
        if primary == survey.language:
            break
        if primary in survey.translations:
            return primary, survey.translations[primary]
    return survey.language, Translation(
        title=survey.title,
        description=survey.description,
        questions={
            q.id: QuestionWords(text=q.text, help=q.help, options=q.options, anchors=q.anchors)
            for q in survey.questions
        },
    )
