"""The ``deniable`` command in-process: explanations, prompts, argument errors."""

from __future__ import annotations

import io

import pytest

from deniable.client.cli import explain, main, prompt_answer
from deniable.mechanisms import CATEGORICAL
from deniable.survey import Survey

from .conftest import CANARY_DEFINITION, definition


def every_question() -> list:
    questions = list(Survey.from_dict(definition()).questions)
    questions += list(Survey.from_dict(CANARY_DEFINITION).questions)
    for name in sorted(CATEGORICAL):
        if name == "binary_rr":
            continue
        spec = {
            "id": "q",
            "type": "single_choice",
            "text": "?",
            "epsilon": 1.0,
            "mechanism": name,
            "options": ["a", "b", "c", "d"],
        }
        questions += list(Survey.from_dict(definition(questions=[spec])).questions)
    return questions


@pytest.mark.parametrize("question", every_question(), ids=lambda q: f"{q.id}-{q.mechanism}")
def test_every_question_is_explained_in_plain_words(question) -> None:
    text = explain(question)
    assert "ε =" in text and "more likely" in text
    if question.longitudinal is not None:
        assert "asked again" in text


def scripted(*lines: str):
    feed = iter(lines)

    def read(prompt: str) -> str:
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    return read


def test_prompts_reask_until_the_answer_is_valid() -> None:
    survey = Survey.from_dict(definition())
    smoker, commute, tools, hours = survey.questions
    out = io.StringIO()
    assert prompt_answer(smoker, scripted("perhaps", "YES"), out) is True
    assert prompt_answer(commute, scripted("9", "bus", "2"), out) == "bus"
    assert prompt_answer(tools, scripted("1, 4", "1, 3"), out) == ["email", "meetings"]
    assert prompt_answer(tools, scripted(""), out) == []
    assert prompt_answer(hours, scripted("lots", "-1", "20"), out) == 20.0
    said = out.getvalue()
    # Plain words, never a Python type or repr: "please answer yes or no", not "got str ''".
    assert said.count("please answer yes or no") == 1
    assert said.count("please enter one number from 1 to 5") == 1
    assert said.count("separated by commas, or nothing for none") == 1
    assert said.count("please enter a number from 0 to 20") == 2
    assert "got" not in said and "'" not in said


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["answer"],
        ["simulate", "http://x", "s"],
        ["simulate", "http://x", "s", "--respondents", "-3"],
        ["answer", "http://x", "s", "--timeout", "0"],
    ],
)
def test_usage_errors_exit_2_with_one_line(argv, capsys) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_unreachable_aggregator_exits_5_with_one_line(tmp_path, monkeypatch) -> None:
    from deniable.aggregator.demo import free_port

    monkeypatch.setenv("DENIABLE_STATE", str(tmp_path / "state.bin"))
    err = io.StringIO()
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["answer", url, "s1", "--timeout", "0.5"], err=err, out=io.StringIO()) == 5
    assert err.getvalue().startswith("deniable: TransportError:")
    assert err.getvalue().count("\n") == 1


def test_server_text_loses_terminal_control_sequences() -> None:
    from deniable.client.cli import terminal_text

    hostile = "ok\x1b[2J\x1b]0;owned\x07\x1b[31mred\rfake prompt\x00\x9b"
    assert terminal_text(hostile) == "okredfake prompt"
    assert terminal_text("one\ntwo\x1b[A", newlines=True) == "one\ntwo"
    assert terminal_text("one\ntwo") == "onetwo"


def test_randomized_reports_are_shown_in_words() -> None:
    """What ``deniable answer`` shows before asking to send: the report as the server reads
    it, non-response values in plain words; the encoded form only for mechanisms whose
    report names no answer (local hashing, Hadamard)."""
    from deniable.client.cli import shown_report

    survey = Survey.from_dict(
        {
            "format": "deniable.survey/2",
            "id": "words",
            "title": "Words",
            "questions": [
                {"id": "a", "type": "yes_no", "text": "A", "epsilon": 1, "optional": True},
                {"id": "b", "type": "numeric", "text": "B", "epsilon": 1, "lo": 0, "hi": 10,
                 "optional": True},
                {"id": "c", "type": "single_choice", "text": "C", "epsilon": 1,
                 "options": ["x", "y", "z"]},
                {"id": "d", "type": "multiple_choice", "text": "D", "epsilon": 1,
                 "options": ["x", "y"], "optional": True},
            ],
        }
    )  # fmt: skip
    a, b, c, d = survey.questions
    encode = lambda q, report: q.oracle.encode(report)  # noqa: E731
    assert shown_report(a, encode(a, 1)) == "Yes"
    assert shown_report(a, encode(a, 2)) == "Prefer not to say"
    assert shown_report(b, encode(b, (0, 1))) == "answered; high end of the range (10)"
    assert shown_report(b, encode(b, (1, -1))) == "Prefer not to say"
    assert shown_report(c, encode(c, 2)) == "z"
    assert shown_report(d, encode(d, (1, 1))) == "about \u201cy\u201d only: yes"
    assert shown_report(d, encode(d, (2, 0))) == "about \u201cPrefer not to say\u201d only: no"
    for question in every_question():
        answer = {
            "yes_no": True,
            "single_choice": question.options[0] if question.options else None,
            "multiple_choice": list(question.options[:1]),
            "numeric": question.lo,
        }[question.type]
        payload = question.randomize(answer)
        words = shown_report(question, payload)
        assert words and "encoded" not in words, (question.mechanism, words)
