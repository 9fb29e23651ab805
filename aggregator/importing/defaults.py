"""The defaults a hand-written definition may leave out (docs/operations.md, "Definition files").

* ``format``: the current one, ``deniable.survey/2``;
* ``id``: from the title: lower case, runs of other characters as ``-``, at most 64
  (``"Staff survey, May 2026"`` -> ``staff-survey-may-2026``);
* a question's ``id``: ``q1``, ``q2``, ... by position;
* a question's ``epsilon``: the file's top-level ``epsilon`` if it gives one, else
  :data:`DEFAULT_EPSILON` (1, "the usual strong choice", docs/choosing-epsilon.md).
  The top-level ``epsilon`` is a default for the file only; it is not part of the survey.

Nothing is filled in a question that is not a mapping, nor where the file gives a value
(a wrong one is refused by the survey's own checks, with its usual message).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from deniable.survey import FORMAT, IDENTIFIER

__all__ = ["DEFAULT_EPSILON", "fill_defaults", "survey_id_from_title"]

DEFAULT_EPSILON = 1.0


def survey_id_from_title(title: str) -> str | None:
    """A survey id made of the title's letters and digits (None if it has none)."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    text = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:64].rstrip("-")
    return text if text and IDENTIFIER.fullmatch(text) else None


def fill_defaults(data: Any) -> Any:
    """``data`` with the defaults above filled in (a copy; anything else is returned as is)."""
    if not isinstance(data, Mapping):
        return data
    filled = dict(data)
    epsilon = filled.pop("epsilon", DEFAULT_EPSILON)
    filled.setdefault("format", FORMAT)
    if "id" not in filled and isinstance(filled.get("title"), str):
        made = survey_id_from_title(filled["title"])
        if made is not None:
            filled["id"] = made
    questions = filled.get("questions")
    if isinstance(questions, list):
        filled["questions"] = [
            {"id": f"q{number}", "epsilon": epsilon, **question}
            if isinstance(question, Mapping)
            else question
            for number, question in enumerate(questions, 1)
        ]
    return filled
