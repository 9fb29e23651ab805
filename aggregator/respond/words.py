"""The respond page's words: the one catalogue, client/browser/messages.js, read on this side.

The page and ``respond.js`` share it, so a respondent reads one language throughout.  The
language comes from ``?lang=`` (an embedding page's choice) or ``Accept-Language``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from flask import request

__all__ = ["answer_words", "catalogue", "chosen_language", "translator", "wanted_languages"]

_OBJECT = re.compile(r"export const MESSAGES = (\{.*?\n\});", re.DOTALL)
_FIELD = re.compile(r"\{(\w+)\}")


@cache
def catalogue() -> dict[str, dict[str, str]]:
    """Every language's messages, from messages.js (its MESSAGES object is strict JSON)."""
    text = resources.files("deniable.client").joinpath("browser", "messages.js").read_text("utf-8")
    match = _OBJECT.search(text)
    if match is None:  # a packaging error, found by the tests
        raise RuntimeError("client/browser/messages.js has no MESSAGES object")
    return json.loads(match.group(1))


def languages() -> tuple[str, ...]:
    return tuple(catalogue())


def wanted_languages() -> list[str]:
    """The primary language tags this request asks for, best first: ``?lang=``, then
    Accept-Language ("de-CH" is German)."""
    tags = [request.args.get("lang", ""), *(tag for tag, _ in request.accept_languages)]
    return [primary for tag in tags if (primary := tag.lower().split("-")[0])]


def chosen_language(default: str = "en") -> str:
    """The first language asked for (:func:`wanted_languages`) that the catalogue has, else
    ``default`` (a survey's own language) if it has it, else English."""
    for primary in wanted_languages():
        if primary in catalogue():
            return primary
    return default if default in catalogue() else "en"


def translator(lang: str) -> Callable[..., str]:
    """``t(name, **values)``: the message ``name`` in ``lang`` with its {fields} filled in."""
    table, english = catalogue().get(lang, catalogue()["en"]), catalogue()["en"]

    def t(name: str, **values: object) -> str:
        return _FIELD.sub(lambda m: str(values[m.group(1)]), table.get(name, english[name]))

    return t


def answer_words(
    question: Mapping[str, Any], labels: Sequence[str] = (), lang: str = "en"
) -> dict[str, str]:
    """What people read for a result's labels, in the respond page's words: yes and no, the
    non-response values, and a scale's two ends (``"low"``, ``"high"``: its anchors, or for
    0 to 10 the net promoter score's) as "0 = Not at all likely".  ``labels``: a scale's
    points in order.  Other labels are the operator's own text, read as written.  The
    dashboard and the command line's results table word them alike."""
    t = translator(lang)
    words = {"declined": t("prefer_not"), "not_applicable": t("not_asked")}
    if question.get("type") == "yes_no":
        words |= {"no": t("no"), "yes": t("yes")}
    if question.get("type") == "scale" and labels:
        low, high = labels[0], labels[-1]
        anchors = question.get("anchors")
        if anchors:
            words["low"] = t("scale_anchor", value=low, label=anchors["low"])
            words["high"] = t("scale_anchor", value=high, label=anchors["high"])
        elif len(labels) == 11:  # as the respond page says a 0-10 scale's ends
            words["low"], words["high"] = t("scale_nps").split(", ", 1)
    return words
