"""Survey definitions a client must refuse, each with its reason code (docs/protocol.md §7).

Part of ``python -m tests.shared.generate_vectors`` (``invalid_surveys[]``); kept apart so
that file stays readable.
"""

from __future__ import annotations

import json
from typing import Any

from deniable.survey import MAX_QUESTIONS

from .vector_questions import question_vectors

__all__ = ["invalid_surveys"]


def invalid_surveys(valid: dict[str, Any]) -> list[dict[str, Any]]:
    """Signed-looking definitions a client must refuse, each with the reason."""

    def variant(reason: str, edit, code: str) -> dict[str, Any]:
        definition = json.loads(json.dumps(valid))
        edit(definition)
        return {"reason": reason, "code": code, "definition": definition}

    first = 0  # burnout (binary_rr), 1 commute (grr), 2 tools (option_sampling), 3 overtime (duchi)
    cases = question_vectors()

    def replaced(reason: str, case: str, edit, code: str, index: int = 1) -> dict[str, Any]:
        """The demo with question ``index`` replaced by a resolved CASES question, then edited."""

        def apply(d: dict[str, Any]) -> None:
            d["questions"][index] = json.loads(json.dumps(cases[case]))
            edit(d["questions"][index])

        return variant(reason, apply, code)

    def parameters(**values: Any):
        return lambda question: question["parameters"].update(values)

    low = 1  # a threshold of 1 / 2**53: the true answer is (almost) never kept
    implied = "implied-epsilon"
    # Thresholds that favour the other answers imply a negative log-ratio; the privacy
    # loss is its absolute value, far above the declared ε (the answer is flipped).  (SUE
    # or OUE with the two thresholds swapped is not among them: its loss is the same |ε|.)
    flipped = [
        variant(
            "binary_rr keep below one half (answers flipped)",
            lambda d: d["questions"][first]["parameters"].update(keep=low),
            implied,
        ),
        variant(
            "grr keep below 1/d (the truth never kept)",
            lambda d: d["questions"][1]["parameters"].update(keep=low),
            implied,
        ),
        variant(
            "option_sampling keep below one half",
            lambda d: d["questions"][2]["parameters"].update(keep=low),
            implied,
        ),
        replaced(
            "binary_rr per option: keep below one half", "tools", parameters(keep=low), implied, 2
        ),
        replaced("olh keep below 1/g", "olh", parameters(keep=low), implied),
        replaced("hrr keep below one half", "hrr", parameters(keep=low), implied),
        replaced("subset keep below k/d", "subset", parameters(keep=low), implied),
        replaced(
            "longitudinal permanent keep below one half", "habit", parameters(keep=low), implied
        ),
        replaced(
            "longitudinal instantaneous_keep below 1/d",
            "mood",
            parameters(instantaneous_keep=low),
            implied,
        ),
        replaced(
            "duchi clamps beyond the declared ε",
            "duchi",
            parameters(low=2**50, high=2**53 - 2**50),
            implied,
            3,
        ),
    ]

    def same_key(d: dict[str, Any]) -> None:
        d["questions"][1] = json.loads(json.dumps(cases["habit"]))
        d["questions"][2] = json.loads(json.dumps(cases["mood"]))
        d["questions"][2]["longitudinal"]["key"] = "habit"

    def many_questions(d: dict[str, Any]) -> None:
        d["questions"] = [dict(d["questions"][0], id=f"q{i}") for i in range(MAX_QUESTIONS + 1)]

    def title(text: str):
        return lambda d: d.update(title=text)

    return [
        # (/1 is refused by every client but the Python one, which keeps verifying stored /1
        # surveys: §2.1; client/browser/test/vectors.test.js checks that refusal.)
        variant("unknown format", lambda d: d.update(format="deniable.survey/3"), "format"),
        variant("unknown top-level field", lambda d: d.update(extra=1), "unknown-member"),
        variant(
            "threshold implies more ε than declared",
            lambda d: d["questions"][first]["parameters"].update(keep=2**53 - 2),
            implied,
        ),
        *flipped,
        variant(
            "missing resolved parameter",
            lambda d: d["questions"][1]["parameters"].pop("keep"),
            "missing-member",
        ),
        variant(
            "unknown parameter",
            lambda d: d["questions"][1]["parameters"].update(g=3),
            "unknown-member",
        ),
        variant(
            "option_sampling takes no option_epsilon",
            lambda d: d["questions"][2]["parameters"].update(option_epsilon=3.0),
            "unknown-member",
        ),
        variant(
            "a probability parameter of another mechanism",
            lambda d: d["questions"][1]["parameters"].update(slope=0.25),
            "unknown-member",
        ),
        replaced(
            "per-option ε is not ε/m", "tools", parameters(option_epsilon=1.0), "parameter", 2
        ),
        variant(
            "duchi thresholds not symmetric",
            lambda d: d["questions"][3]["parameters"].update(high=2**53 - 1),
            "parameter",
        ),
        variant(
            "duchi slope above one half",
            lambda d: d["questions"][3]["parameters"].update(slope=0.75),
            "parameter",
        ),
        variant(
            "threshold not an integer",
            lambda d: d["questions"][first]["parameters"].update(keep=0.5),
            "parameter",
        ),
        variant(
            "threshold an integral number beyond 2**53 - 1",
            lambda d: d["questions"][first]["parameters"].update(keep=1e16),
            "parameter",
        ),
        variant(
            "threshold a string",
            lambda d: d["questions"][first]["parameters"].update(
                keep=str(d["questions"][first]["parameters"]["keep"])
            ),
            "parameter",
        ),
        variant(
            "threshold a boolean",
            lambda d: d["questions"][first]["parameters"].update(keep=True),
            "parameter",
        ),
        replaced(
            "hrr order not the power of two above d", "hrr", parameters(order=16), "parameter"
        ),
        replaced("olh hash_range below 2", "olh", parameters(hash_range=1), "parameter"),
        replaced("subset_size not below d", "subset", parameters(subset_size=12), "parameter"),
        replaced(
            "discrete_laplace grid_size below 1", "laplace", parameters(grid_size=0), "parameter", 3
        ),
        replaced(
            "discrete_laplace grid_size with a fraction",
            "laplace",
            parameters(grid_size=4.5),
            "parameter",
            3,
        ),
        variant("ε out of range", lambda d: d["questions"][first].update(epsilon=25), "epsilon"),
        variant(
            "duplicate question ids",
            lambda d: d["questions"][1].update(id="burnout"),
            "question-id-duplicate",
        ),
        variant("duplicate longitudinal keys", same_key, "longitudinal-key-duplicate"),
        variant(
            "unknown mechanism",
            lambda d: d["questions"][1].update(mechanism="laplace"),
            "mechanism",
        ),
        variant(
            "one option only", lambda d: d["questions"][1].update(options=["Car"]), "options-count"
        ),
        variant(
            "two equal options",
            lambda d: d["questions"][1]["options"].__setitem__(1, "Car"),
            "options-duplicate",
        ),
        variant("lo not below hi", lambda d: d["questions"][3].update(lo=20, hi=20), "range"),
        variant(
            "hi - lo not finite", lambda d: d["questions"][3].update(lo=-1e308, hi=1e308), "range"
        ),
        variant(
            "survey id not an identifier", lambda d: d.update(id="Demo Workplace"), "identifier"
        ),
        variant(
            "question id one character too long",
            lambda d: d["questions"][0].update(id="q" * 65),
            "identifier",
        ),
        variant("101 questions", many_questions, "questions-count"),
        variant(
            "control character in a label",
            lambda d: d["questions"][1]["options"].__setitem__(0, "Ca\rr"),
            "text-control",
        ),
        variant(
            "C1 control character in a question",
            lambda d: d["questions"][0].update(text="Burn\u0085out?"),
            "text-control",
        ),
        variant("line feed in a title", title("Two\nlines"), "text-control"),
        variant("empty title", title("  "), "text-blank"),
        variant(
            "empty description (omitted, never empty)",
            lambda d: d.update(description=""),
            "description-empty",
        ),
        variant("title of white space only", title("\u3000\u00a0\u2003"), "text-blank"),
        # Not blank: a code point outside White_Space and Default_Ignorable_Code_Point.  A
        # browser's trim() strips U+FEFF but not U+200B; Python's strip() strips neither.
        variant("title of U+FEFF only", title("\ufeff"), "text-blank"),
        variant("title of U+200B only", title("\u200b"), "text-blank"),
        variant(
            "title of invisible characters only",
            title("\u200b\u2060\ufeff\u00ad \u180e"),
            "text-blank",
        ),
        variant(
            "label of U+200B only",
            lambda d: d["questions"][1]["options"].__setitem__(0, "\u200b"),
            "text-blank",
        ),
        variant(
            "unknown question type", lambda d: d["questions"][0].update(type="yes_or_no"), "type"
        ),
        variant("a title that is a number", title(7), "wrong-type"),
        variant(
            "options not a list",
            lambda d: d["questions"][1].update(options="Car,Bus"),
            "wrong-type",
        ),
        variant(
            "parameters not an object",
            lambda d: d["questions"][1].update(parameters=[1]),
            "wrong-type",
        ),
        variant("question without text", lambda d: d["questions"][0].pop("text"), "missing-member"),
        variant(
            "binary_rr for five options",
            lambda d: d["questions"][1].update(mechanism="binary_rr"),
            "mechanism",
        ),
        replaced(
            "longitudinal on a unary encoding",
            "sue",
            lambda q: q.update(longitudinal={"key": "k", "instantaneous_epsilon": 1.0}),
            "mechanism",
        ),
        replaced(
            "instantaneous ε out of range",
            "mood",
            lambda q: q["longitudinal"].update(instantaneous_epsilon=0),
            "epsilon",
        ),
        variant("title over 200 characters", title("🕐" * 201), "text-length"),
        variant(
            "question text over 2000 characters",
            lambda d: d["questions"][0].update(text="𝄞" * 2001),
            "text-length",
        ),
        variant(
            "label over 200 characters",
            lambda d: d["questions"][1]["options"].__setitem__(0, "🙂" * 201),
            "text-length",
        ),
        variant(
            "description over 2000 characters",
            lambda d: d.update(description="x" * 2001),
            "text-length",
        ),
    ]
