"""The ``deniable`` command in-process: explanations, prompts, argument errors; and the
terminal respondent on every path of the shared skip-logic table against a real aggregator."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import requests

from deniable.aggregator.demo import free_port
from deniable.client.cli import in_language, main, original_answer, prompt_answer
from deniable.client.wording import explain
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
    monkeypatch.setenv("DENIABLE_STATE", str(tmp_path / "state.bin"))
    err = io.StringIO()
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["answer", url, "s1", "--timeout", "0.5"], err=err, out=io.StringIO()) == 5
    assert err.getvalue().startswith("deniable: TransportError:")
    assert err.getvalue().count("\n") == 1


def test_server_text_loses_terminal_control_sequences() -> None:
    from deniable.client.wording import terminal_text

    hostile = "ok\x1b[2J\x1b]0;owned\x07\x1b[31mred\rfake prompt\x00\x9b"
    assert terminal_text(hostile) == "okredfake prompt"
    assert terminal_text("one\ntwo\x1b[A", newlines=True) == "one\ntwo"
    assert terminal_text("one\ntwo") == "onetwo"


def test_randomized_reports_are_shown_in_words() -> None:
    """What ``deniable answer`` shows before asking to send: the report as the server reads
    it, non-response values in plain words; the encoded form only for mechanisms whose
    report names no answer (local hashing, Hadamard)."""
    from deniable.client.wording import shown_report

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


# -- optional and conditional questions, scales (docs/protocol.md §5.5, §5.6) --------------
TABLE = json.loads((Path(__file__).with_name("condition_cases.json")).read_text("utf-8"))


def test_prompts_offer_a_decline_for_optional_questions_and_draw_scales() -> None:
    survey = Survey.from_dict(TABLE["definition"])
    questions = {q.id: q for q in survey.questions}
    out = io.StringIO()
    assert prompt_answer(questions["smoker"], scripted("-"), out) is None
    assert prompt_answer(questions["cigarettes"], scripted("lots", "-"), out) is None
    assert prompt_answer(questions["why"], scripted("-"), out) is None
    assert prompt_answer(questions["nps"], scripted("11", "-", "9.5", "9"), out) == 9
    assert prompt_answer(questions["satisfaction"], scripted("0", "5"), out) == 5
    said = out.getvalue()
    assert said.count("(- = Prefer not to say)") == 3 + 1  # smoker, cigarettes, why; satisfaction
    assert "0 = not at all likely, 10 = extremely likely" in said
    assert "1 = Very unhappy, 5 = Very happy" in said
    assert said.count("please enter a whole number from 0 to 10\n") == 3  # "-": not optional
    assert "please enter a whole number from 1 to 5, or -" in said
    # A question that is not optional takes no decline.
    assert prompt_answer(questions["mood"], scripted("-", "2"), io.StringIO()) == "Okay"


def test_language_shows_a_translation_and_answers_the_signed_survey() -> None:
    """``--language en`` on a German survey: English words, and answers in the signed labels."""
    from deniable.client.wording import shown_report
    from tests.shared.test_translations import german

    signed = Survey.from_dict(german())
    lang, shown = in_language(signed, "en-US")
    assert lang == "en" and shown.title == "Happiness at work"
    colour, sport = shown.question("farbe"), shown.question("sport")
    out = io.StringIO()
    chosen = prompt_answer(colour, scripted("2"), out)
    assert chosen == "green" and "1. red\n" in out.getvalue() and "rot" not in out.getvalue()
    assert original_answer(signed.question("farbe"), colour, chosen) == "grün"
    several = prompt_answer(sport, scripted("1,3"), io.StringIO())
    assert original_answer(signed.question("sport"), sport, several) == ["Laufen", "Rad"]
    # A report is read back in the shown words: the same payload, the label of its index.
    payload = signed.question("farbe").randomize("grün")
    index = signed.question("farbe").options.index(shown_report(signed.question("farbe"), payload))
    assert shown_report(colour, payload) == colour.options[index]
    assert in_language(signed, "fr")[0] == "de" and in_language(signed, None)[0] == "de"


def _typed(case: dict) -> list[str]:
    """What a respondent types for a path of the table: shown questions only, then "y"."""
    typed = []
    for question, status in zip(TABLE["definition"]["questions"], case["statuses"], strict=True):
        value = case["answers"].get(question["id"])
        if status == "hidden":
            continue
        if status == "declined":
            typed.append("-")
        elif question["type"] == "yes_no":
            typed.append("y" if value else "n")
        elif question["type"] == "single_choice":
            typed.append(str(question["options"].index(value) + 1))
        elif question["type"] == "multiple_choice":
            typed.append(",".join(str(question["options"].index(v) + 1) for v in value))
        else:
            typed.append(str(value))
    return [*typed, "y"]


class _Proxy(ThreadingHTTPServer):
    """Forwards to the aggregator; records every request with the prompts answered before it."""

    def __init__(self, target: str) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.target, self.seen, self.prompts = target, [], 0
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ProxyHandler(BaseHTTPRequestHandler):
    def _forward(self) -> None:
        server: _Proxy = self.server  # type: ignore[assignment]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        server.seen.append((server.prompts, self.command, self.path, len(body), sorted(headers)))
        response = requests.request(
            self.command, server.target + self.path, data=body, headers=headers, timeout=30
        )
        self.send_response(response.status_code)
        for name in ("Content-Type", "Retry-After"):
            if name in response.headers:
                self.send_header(name, response.headers[name])
        self.send_header("Content-Length", str(len(response.content)))
        self.end_headers()
        self.wfile.write(response.content)

    do_GET = do_POST = _forward  # noqa: N815 - http.server's names

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served_table(tmp_path_factory):
    """A gunicorn aggregator holding the table's survey, behind a recording proxy."""
    from deniable.aggregator import cli as aggregator_cli
    from deniable.aggregator.demo import start_server, stop_server

    directory = tmp_path_factory.mktemp("terminal")
    database, key = directory / "deniable.sqlite3", directory / "key.pem"
    options = ["--database", str(database), "--signing-key", str(key)]
    assert aggregator_cli.main([*options, "init"]) == 0
    path = directory / "survey.json"
    path.write_text(json.dumps(TABLE["definition"]))
    assert aggregator_cli.main([*options, "create-survey", str(path)]) == 0
    port = free_port()
    server = start_server({"DATABASE": database, "SIGNING_KEY_PATH": key}, port)
    proxy = _Proxy(f"http://127.0.0.1:{port}")
    try:
        yield proxy, directory
    finally:
        proxy.shutdown()
        proxy.server_close()
        stop_server(server)


@pytest.mark.slow
def test_every_path_of_the_terminal_respondent_makes_the_same_requests(served_table) -> None:
    """Count, order, paths, sizes, header names and timing class (how many prompts were answered
    when each request left: none, or all of them) on every path of the shared table."""
    proxy, directory = served_table
    shapes: dict[str, list[str]] = {}
    for number, case in enumerate(c for c in TABLE["cases"] if "refused" not in c):
        typed = _typed(case)
        feed = iter(typed)

        def read(prompt: str, feed=feed) -> str:
            proxy.prompts += 1
            return next(feed)

        proxy.seen, proxy.prompts = [], 0
        out, err = io.StringIO(), io.StringIO()
        state = directory / f"state-{number}.bin"
        status = main(
            ["answer", proxy.url, TABLE["definition"]["id"], "--state", str(state)],
            read=read,
            out=out,
            err=err,
        )
        assert status == 0, err.getvalue() + out.getvalue()[-300:]
        said = out.getvalue()
        hidden = case["statuses"].count("hidden")
        assert ("did not apply to your answers" in said) == bool(hidden), said
        assert "Sent 8 randomized reports" in said
        asked_number = 0
        for question, status_ in zip(
            TABLE["definition"]["questions"], case["statuses"], strict=True
        ):
            # Asked only when shown (the list of what will be sent names every report).
            asked, sent = said.split("\nWhat will be sent")
            assert (question["text"] in asked) == (status_ != "hidden"), question["id"]
            # One numbering: a question's number when asked is its number in the list.
            if status_ != "hidden":
                asked_number += 1
                assert f"\n{asked_number}. {question['text']}\n" in asked, question["id"]
                assert f"\n  {asked_number}. {question['text']}: " in sent, question["id"]
            else:
                assert f"\n  –  {question['text']} (not asked): " in sent, question["id"]
        if case["statuses"][1] != "hidden":
            assert "Your best guess is fine." in said  # the help text
        # Timing class: each request leaves before the first prompt or after the last one.
        phases = ["before" if seen[0] == 0 else "after" for seen in proxy.seen]
        assert all(seen[0] in (0, len(typed)) for seen in proxy.seen), proxy.seen
        shape = json.dumps(
            [(phase, *seen[1:]) for phase, seen in zip(phases, proxy.seen, strict=True)]
        )
        shapes.setdefault(shape, []).append(case["name"])
    assert len(shapes) == 1, shapes


def test_simulated_respondents_follow_the_paths_and_decline_optional_questions() -> None:
    """`deniable simulate`'s true answers walk the survey: a conditional question is "not
    applicable" exactly when its condition fails, and an optional question shown is declined
    at the rate asked (fixed seed; 4,000 respondents, the band is over 10 standard errors)."""
    from deniable.client.simulate import path_columns, true_answers

    survey = Survey.from_dict(
        {
            "format": "deniable.survey/2",
            "id": "paths",
            "title": "Paths",
            "questions": [
                {"id": "gate", "type": "yes_no", "text": "Gate?", "epsilon": 1},
                {"id": "why", "type": "single_choice", "text": "Why?", "epsilon": 1,
                 "options": ["x", "y"], "show_if": {"question": "gate", "equals": True},
                 "optional": True},
                {"id": "tools", "type": "multiple_choice", "text": "Tools?", "epsilon": 1,
                 "options": ["a", "b"], "optional": True},
                {"id": "hours", "type": "numeric", "text": "Hours?", "epsilon": 1, "lo": 0,
                 "hi": 10, "show_if": {"question": "gate", "equals": False}},
            ],
        }
    )  # fmt: skip
    gate, why, tools, hours = survey.questions
    count, rng = 4000, np.random.default_rng(11)
    truths = {q.id: true_answers(q, count, "uniform", rng) for q in survey.questions}
    columns = path_columns(survey, truths, decline_rate=0.2, rng=rng)
    said_yes = columns["gate"] == 1
    not_applicable = why.base_size + why.extras.index("not_applicable")
    declined = why.base_size + why.extras.index("declined")
    assert np.array_equal(columns["why"] == not_applicable, ~said_yes)
    share = np.mean(columns["why"][said_yes] == declined)
    assert 0.15 < share < 0.25, share
    tool_declined = columns["tools"][:, len(tools.options) + tools.extras.index("declined")]
    assert 0.15 < tool_declined.mean() < 0.25 and not columns["tools"][tool_declined == 1, :2].any()
    status = columns["hours"][:, 0]  # 0 answered, 1 + position of the non-response value
    assert np.array_equal(status == 1 + hours.extras.index("not_applicable"), said_yes)
    # Every value is one the mechanism randomizes, and nothing declines at rate 0.
    for question in survey.questions:
        question.oracle.encode_many(question.oracle.randomize_many(columns[question.id], rng))
    again = path_columns(survey, truths, decline_rate=0.0, rng=rng)
    assert not np.any(again["why"] == declined)
