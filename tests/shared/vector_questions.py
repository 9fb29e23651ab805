"""The questions of the report vectors, as an operator writes them, with the true answers
each is randomized from (``reports[]``, ``decode[]``), and resolved (``questions{}``).

Part of ``python -m tests.shared.generate_vectors``; kept apart so that file stays readable.
tests/shared/test_registry.py checks that CASES covers every form of every mechanism.
"""

from __future__ import annotations

from typing import Any

from deniable.survey import FORMAT, Question

__all__ = ["CASES", "FIVE", "q", "question_vectors", "resolved"]


def q(qid: str, kind: str, epsilon: float, **extra: Any) -> dict[str, Any]:
    return {"id": qid, "type": kind, "text": f"Question {qid}?", "epsilon": epsilon, **extra}


FIVE = ["Car", "Bus", "Bicycle", "Foot", "Home"]
# (question definition as an operator writes it, true answers to randomize)
CASES: list[tuple[dict[str, Any], list[Any]]] = [
    (q("yes", "yes_no", 1.0), [True, False]),
    (q("yes_small", "yes_no", 0.1), [True]),
    (q("grr5", "single_choice", 2.0, options=FIVE, mechanism="grr"), ["Car", "Home", "Bus"]),
    (
        q("grr300", "single_choice", 1.5, options=[f"{i}" for i in range(300)], mechanism="grr"),
        ["0", "299"],
    ),
    (q("sue", "single_choice", 1.0, options=FIVE, mechanism="sue"), ["Bus", "Home"]),
    (
        q("oue", "single_choice", 2.5, options=[f"v{i}" for i in range(11)], mechanism="oue"),
        ["v0", "v10"],
    ),
    (q("olh", "single_choice", 2.0, options=FIVE, mechanism="olh"), ["Car", "Foot"]),
    (
        q(
            "blh",
            "single_choice",
            1.0,
            options=[f"{i}" for i in range(1024)],
            mechanism="olh",
            parameters={"hash_range": 2},
        ),
        ["7"],
    ),
    (
        q("olh1024", "single_choice", 3.0, options=[f"{i}" for i in range(1024)], mechanism="olh"),
        ["1023"],
    ),
    (q("hrr", "single_choice", 1.0, options=FIVE, mechanism="hrr"), ["Car", "Home"]),
    (
        q("hrr300", "single_choice", 0.5, options=[f"{i}" for i in range(300)], mechanism="hrr"),
        ["17"],
    ),
    (
        q("subset", "single_choice", 0.5, options=[f"v{i}" for i in range(12)], mechanism="subset"),
        ["v0", "v11"],
    ),
    (
        q(
            "subset_k",
            "single_choice",
            1.0,
            options=FIVE,
            mechanism="subset",
            parameters={"subset_size": 3},
        ),
        ["Foot"],
    ),
    (
        q(
            "tools",
            "multiple_choice",
            3.0,
            options=["Email", "Chat", "Meetings", "Tickets"],
            mechanism="binary_rr",
        ),
        [["Email", "Meetings"], []],
    ),
    (
        q(
            "tools_sampled",
            "multiple_choice",
            2.0,
            options=["Email", "Chat", "Meetings"],
            mechanism="option_sampling",
        ),
        [["Email", "Meetings"], [], ["Chat"]],
    ),
    (q("duchi", "numeric", 1.5, lo=0, hi=20), [0, 20, 3.5, 7.123456789]),
    (q("duchi_tricky", "numeric", 0.30000000000000004, lo=-1e-6, hi=1e21), [12345.678]),
    # hi - lo = 1e308 is finite; 2 * (x - lo) is not (crafted_vectors(): the order of §4).
    (q("duchi_wide", "numeric", 1.0, lo=-5e307, hi=5e307), [0, -5e307, 5e307]),
    (
        q(
            "laplace",
            "numeric",
            1.0,
            lo=-2,
            hi=6,
            mechanism="discrete_laplace",
            parameters={"grid_size": 4},
        ),
        [-2, 6, 1.37],
    ),
    (q("laplace_fine", "numeric", 0.1, lo=0, hi=100, mechanism="discrete_laplace"), [42.0, 99.99]),
    (
        q(
            "laplace_round",
            "numeric",
            1.0,
            lo=0,
            hi=1,
            mechanism="discrete_laplace",
            parameters={"grid_size": 1},
        ),
        [],  # crafted_vectors(): the rounding of the grid step
    ),
    (
        q("habit", "yes_no", 2.0, longitudinal={"key": "habit", "instantaneous_epsilon": 1.0}),
        [True],
    ),
    (
        q(
            "mood",
            "single_choice",
            3.0,
            options=FIVE,
            mechanism="grr",
            longitudinal={"key": "mood", "instantaneous_epsilon": 1.5},
        ),
        ["Bicycle", "Home"],
    ),
]


def resolved(definition: dict[str, Any]) -> dict[str, Any]:
    return Question.from_dict(definition, "question", FORMAT).to_dict(FORMAT)


def question_vectors() -> dict[str, dict[str, Any]]:
    """Every question the report and decode vectors use, resolved, by id."""
    return {definition["id"]: resolved(definition) for definition, _ in CASES}
