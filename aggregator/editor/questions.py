"""The editor's question pages: add, edit, move up or down, remove.

A question is edited on its own page, by its position in the draft (ids can change
while editing).  Saving stores it whatever it holds, then checks the draft's questions up
to it (:func:`.drafts.check_draft`): a refusal naming it is shown next to its field, and
the page stays; otherwise "Save" returns to the draft and "Save and update advice" stays
to show the planner's advice at the new ε.
"""

from __future__ import annotations

from typing import Any

from flask import redirect, render_template, request, url_for

from deniable.survey import MAX_QUESTIONS

from . import blueprint
from .drafts import advice_for, check_draft, load_draft, missing
from .forms import (
    CONDITION_WORDS,
    QUESTIONNAIRE,
    SCALE_POINTS,
    TYPE_WORDS,
    mechanism_choices,
    question_from_form,
    question_types,
    question_view,
)
from .session import editor_store, operator_page

__all__ = ["DEFAULT_EPSILON", "new_question"]

DEFAULT_EPSILON = 1.0


def new_question(kind: str, taken: set[str]) -> dict[str, Any]:
    """A question of ``kind`` with a free id (``q1``, ``q2``, …) and ε = 1, to be written."""
    number = 1
    while f"q{number}" in taken:
        number += 1
    question: dict[str, Any] = {
        "id": f"q{number}",
        "type": kind,
        "text": "",
        "epsilon": DEFAULT_EPSILON,
    }
    if kind in ("single_choice", "multiple_choice"):
        question["options"] = []
    if kind == "numeric":
        question["lo"], question["hi"] = 0, 10
    if kind == "scale":
        question["points"] = 5
    return question


def _questions(definition: dict[str, Any]) -> list[dict[str, Any]]:
    raw = definition.get("questions")
    return list(raw) if isinstance(raw, list) else []


def _save(draft: Any, questions: list[dict[str, Any]]) -> None:
    document = {**draft.document, "definition": {**draft.definition, "questions": questions}}
    editor_store().save_draft(draft.id, document)


@blueprint.post("/drafts/<draft_id>/questions")
@operator_page
def add_question(draft_id: str) -> Any:
    draft = load_draft(draft_id)
    if draft is None:
        return missing()
    questions = _questions(draft.definition)
    kind = request.form.get("type", "")
    if kind not in question_types() or len(questions) >= MAX_QUESTIONS:
        return redirect(url_for("editor.draft", draft_id=draft_id), 303)
    questions.append(new_question(kind, {str(q.get("id")) for q in questions}))
    _save(draft, questions)
    index = len(questions) - 1
    return redirect(url_for("editor.question", draft_id=draft_id, index=index, new=1), 303)


def _page(draft: Any, index: int, values: dict[str, Any]) -> Any:
    questions = _questions(draft.definition)
    checked = check_draft({**draft.definition, "questions": questions[: index + 1]})
    valid = checked.questions[index] if index < len(checked.questions) else None
    earlier = [
        {"id": q.get("id"), "text": q.get("text") or q.get("id"), "type": q.get("type")}
        for q in questions[:index]
    ]
    # A question just added shows no problem before a save: nothing was typed yet.
    fresh = request.method == "GET" and request.args.get("new") == "1"
    problems = {} if fresh else checked.at(index)
    before = [p for p in checked.problems if p.index is not None and p.index < index]
    page = render_template(
        "editor/question.html",
        draft=draft,
        index=index,
        count=len(questions),
        q=values,
        types=[(kind, TYPE_WORDS.get(kind, kind)) for kind in question_types()],
        all_mechanisms=_mechanisms_by_name(),
        problems=problems,
        other_problem=f"question {before[0].index + 1}: {before[0].words}" if before else None,
        advice=advice_for(valid, draft.definition) if valid is not None else None,
        relay=isinstance(draft.definition.get("relay"), dict),
        earlier=earlier,
        conditions=CONDITION_WORDS,
        points=SCALE_POINTS,
        questionnaire=QUESTIONNAIRE,
    )
    return page, 422 if problems and request.method == "POST" else 200


def _mechanisms_by_name() -> list[tuple[str, str, list[str]]]:
    """(wire name, plain words, the question types it fits) of every mechanism, once each."""
    found: dict[str, tuple[str, list[str]]] = {}
    for kind in question_types():
        for name, words in mechanism_choices(kind):
            found.setdefault(name, (words, []))[1].append(kind)
    return [(name, words, kinds) for name, (words, kinds) in found.items()]


def _found(draft_id: str, index: int) -> Any:
    draft = load_draft(draft_id)
    if draft is None or not 0 <= index < len(_questions(draft.definition)):
        return None
    return draft


@blueprint.get("/drafts/<draft_id>/questions/<int:index>")
@operator_page
def question(draft_id: str, index: int) -> Any:
    draft = _found(draft_id, index)
    if draft is None:
        return missing("This question does not exist (it may have been removed).")
    return _page(draft, index, question_view(_questions(draft.definition)[index]))


@blueprint.post("/drafts/<draft_id>/questions/<int:index>")
@operator_page
def save_question(draft_id: str, index: int) -> Any:
    draft = _found(draft_id, index)
    if draft is None:
        return missing("This question does not exist (it may have been removed).")
    questions = _questions(draft.definition)
    questions[index] = question_from_form(request.form, questions[index], questions[:index])
    _save(draft, questions)
    draft = load_draft(draft_id)
    checked = check_draft({**draft.definition, "questions": questions[: index + 1]})
    if checked.at(index) or request.form.get("then") == "stay":
        return _page(draft, index, question_view(questions[index]))
    return redirect(
        url_for("editor.draft", draft_id=draft_id, saved="question") + f"#question-{index}", 303
    )


@blueprint.post("/drafts/<draft_id>/questions/<int:index>/move")
@operator_page
def move_question(draft_id: str, index: int) -> Any:
    draft = _found(draft_id, index)
    if draft is None:
        return missing("This question does not exist (it may have been removed).")
    questions = _questions(draft.definition)
    other = index - 1 if request.form.get("direction") == "up" else index + 1
    if 0 <= other < len(questions):
        questions[index], questions[other] = questions[other], questions[index]
        _save(draft, questions)
        index = other
    return redirect(
        url_for("editor.draft", draft_id=draft_id, saved="moved") + f"#question-{index}", 303
    )


@blueprint.post("/drafts/<draft_id>/questions/<int:index>/remove")
@operator_page
def remove_question(draft_id: str, index: int) -> Any:
    draft = _found(draft_id, index)
    if draft is None:
        return missing("This question does not exist (it may have been removed).")
    questions = _questions(draft.definition)
    del questions[index]
    _save(draft, questions)
    return redirect(url_for("editor.draft", draft_id=draft_id, saved="removed") + "#questions", 303)
