"""``deniable``: answer a survey in the terminal, flush the outbox, or simulate respondents.

    deniable answer URL SURVEY_ID [--state PATH] [--trusted-key B64] [--language CODE] [--yes]
    deniable flush URL [--state PATH]
    deniable budget [--state PATH]
    deniable simulate URL SURVEY_ID --respondents N [--distribution uniform|skewed]
        [--decline-rate R] [--seed S]

``answer`` shows each question's help and a scale's anchors, takes ``-`` for "Prefer not to
say" on an optional question, and does not ask a question whose ``show_if`` is false on the
answers given; every question still sends its one report (docs/protocol.md §5.5), so the
requests are the same on every path.  ``--language`` shows a survey's translation
(docs/protocol.md §5.7) in that language; the answers and reports are the same in any.
``simulate``'s synthetic respondents follow the same paths, and decline an optional
question shown at ``--decline-rate``.

Exit status (the same table as ``deniable-aggregator``, see
:mod:`deniable.terminal`): 0 success; 2 usage (a bad option or URL);
3 not found (no such survey); 4 refused (signature, policy, budget, already
answered, closed survey, or the respondent said no); 5 unavailable (the
aggregator cannot be reached or has not accepted queued reports yet, or the
device state cannot be read); 130 interrupted.  One line on stderr says why.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TextIO

from deniable.errors import DeniableError, InvalidValue
from deniable.questionnaire import DECLINED, NOT_APPLICABLE, SCALE_POINTS, shown
from deniable.survey import Question, Survey
from deniable.terminal import EXIT_REFUSED, EXIT_UNAVAILABLE, exit_status, quiet_pipe
from deniable.translations import survey_words

from .policy import Policy
from .session import AnswerDeclined, EnrolmentTokenRequired, SurveyClient, VerifiedSurvey
from .simulate import DECLINE_RATE, DISTRIBUTIONS, simulate
from .state import StateStore
from .wording import explain, shown_report, terminal_text

__all__ = ["in_language", "main", "original_answer", "prompt_answer"]


class Aborted(Exception):
    """The respondent declined or closed the input."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


EXIT_CODES = """exit status: 0 success; 2 usage; 3 not found; 4 refused (signature, policy,
budget, already answered, closed, or you said no); 5 unavailable (aggregator unreachable,
reports still queued, device state unreadable); 130 interrupted."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="deniable", description="Answer local-differential-privacy surveys.", epilog=EXIT_CODES
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def common(sub: argparse.ArgumentParser, *, url: bool = True) -> None:
        if url:
            sub.add_argument("url", help="aggregator base URL, e.g. https://surveys.example.org")
        sub.add_argument(
            "--state",
            help="device state file (default: $DENIABLE_STATE or "
            "~/.local/share/deniable/state.bin)",
        )
        sub.add_argument(
            "--timeout",
            type=_positive_float,
            default=10.0,
            help="seconds to wait for the aggregator (default 10)",
        )

    answer = commands.add_parser(
        "answer",
        help="answer a survey interactively",
        description="Fetch a signed survey, explain each question, "
        "randomize your answers on this device and send them.",
    )
    common(answer)
    answer.add_argument("survey_id", help="id of the survey to answer")
    answer.add_argument(
        "--trusted-key", help="pin this base64 Ed25519 key instead of trusting the first one seen"
    )
    answer.add_argument(
        "--max-question-epsilon",
        type=_positive_float,
        default=4.0,
        help="refuse a survey with a question costing more privacy (ε) than this (default 4)",
    )
    answer.add_argument(
        "--max-survey-epsilon",
        type=_positive_float,
        default=10.0,
        help="refuse a survey costing more privacy (ε) in total than this (default 10)",
    )
    answer.add_argument(
        "--language",
        metavar="CODE",
        help='show the survey\'s text in this language ("de") if it is written or translated '
        "in it (default: the survey's own language)",
    )
    answer.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    answer.add_argument(
        "--enrolment-token",
        metavar="TOKEN",
        help="one-time token, for a survey that requires enrolment",
    )

    flush = commands.add_parser(
        "flush",
        help="deliver reports queued while offline",
        description="Send the randomized reports waiting on this "
        "device; exit status 5 if some are still waiting.",
    )
    common(flush)
    flush.add_argument(
        "--enrolment-token",
        metavar="TOKEN",
        help="one-time token for a batch the aggregator refused for enrolment",
    )
    flush.add_argument(
        "--survey",
        metavar="SURVEY_ID",
        help="which survey's waiting batch the token is for (if several wait)",
    )

    budget = commands.add_parser(
        "budget",
        help="show the privacy budget spent on this device",
        description="Show the privacy loss (ε) spent on this device and what remains.",
    )
    common(budget, url=False)

    sim = commands.add_parser(
        "simulate",
        help="SIMULATION: post synthetic respondents (seeded numpy noise)",
        description="SIMULATION ONLY: post synthetic respondents' reports (noise from a "
        "seeded numpy generator, not the CSPRNG of real answers).",
    )
    sim.add_argument("url", help="aggregator base URL")
    sim.add_argument("survey_id", help="id of the survey")
    sim.add_argument(
        "--respondents", type=_positive_int, required=True, help="how many synthetic respondents"
    )
    sim.add_argument(
        "--distribution",
        choices=DISTRIBUTIONS,
        default="uniform",
        help="synthetic true answers: uniform (default) or skewed",
    )
    sim.add_argument(
        "--decline-rate",
        type=_share,
        default=DECLINE_RATE,
        help="share of the optional questions shown that a respondent declines (default "
        f"{DECLINE_RATE:g}); every respondent follows the survey's skip logic (show_if), so "
        "questions that do not apply are 'Not asked'",
    )
    sim.add_argument("--seed", type=int, default=None, help="seed of the numpy generator")
    sim.add_argument(
        "--batch-reports",
        type=_positive_int,
        default=500,
        help="reports per request on the bulk route (needs --operator-token)",
    )
    sim.add_argument(
        "--operator-token",
        default=os.environ.get("DENIABLE_OPERATOR_TOKEN"),
        help="operator token (default: $DENIABLE_OPERATOR_TOKEN): many respondents "
        "per request on the operator-only bulk route; without it, one per request",
    )
    sim.add_argument(
        "--concurrency", type=_positive_int, default=4, help="parallel senders (default 4)"
    )
    sim.add_argument("--trusted-key", help="pin this base64 Ed25519 key")
    sim.add_argument(
        "--timeout",
        type=_positive_float,
        default=30.0,
        help="seconds to wait for the aggregator (default 30)",
    )
    sim.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


# -- prompting -------------------------------------------------------------------------
def _read(prompt: str, read: Callable[[str], str]) -> str:
    try:
        return read(prompt).strip()
    except EOFError:
        raise Aborted("input closed before the survey was complete") from None


# What a respondent types for "Prefer not to say" (an optional question only).
DECLINE = "-"


def prompt_answer(question: Question, read: Callable[[str], str], out: TextIO) -> Any:
    """Ask until the input is a valid true answer for ``question``; say plainly what is wanted.

    An optional question also takes ``-`` ("Prefer not to say"): then None (declined).
    """
    if question.type == "scale":
        points = SCALE_POINTS[int(question.points or 0)]
        first, last = points[0], points[-1]
        if question.anchors:
            low, high = (terminal_text(anchor) for anchor in question.anchors)
            out.write(f"    {first} = {low}, {last} = {high}\n")
        elif question.points == 11:
            out.write(f"    {first} = not at all likely, {last} = extremely likely\n")
    if question.optional:
        out.write(f"    ({DECLINE} = Prefer not to say)\n")
    while True:
        if question.type == "scale":
            text = _read(f"  a whole number from {first} to {last}: ", read)
            value = int(text) if re.fullmatch(r"[0-9]{1,2}", text) else text
            hint = f"please enter a whole number from {first} to {last}"
        elif question.type == "yes_no":
            text = _read("  your answer [y/n]: ", read).lower()
            value: Any = {"y": True, "yes": True, "n": False, "no": False}.get(text, text)
            hint = "please answer yes or no (y/n)"
        elif question.type == "single_choice":
            for number, label in enumerate(question.options, 1):
                out.write(f"    {number}. {terminal_text(label)}\n")
            text = _read("  your choice (number): ", read)
            value = _pick(question.options, text)
            hint = f"please enter one number from 1 to {len(question.options)}"
        elif question.type == "multiple_choice":
            for number, label in enumerate(question.options, 1):
                out.write(f"    {number}. {terminal_text(label)}\n")
            text = _read("  your choices (numbers separated by commas, empty for none): ", read)
            value = [_pick(question.options, part) for part in text.split(",") if part.strip()]
            hint = (
                f"please enter numbers from 1 to {len(question.options)} separated by "
                "commas, or nothing for none"
            )
        else:
            lo, hi = question.lo, question.hi
            text = _read(f"  a number from {lo:g} to {hi:g}: ", read)
            hint = f"please enter a number from {lo:g} to {hi:g}"
            try:
                value = float(text)
            except ValueError:
                value = text
        if question.optional and text == DECLINE:
            return None
        try:
            question.check_answer(value)
        except InvalidValue:
            out.write(f"  {hint}{f', or {DECLINE}' if question.optional else ''}\n")
            continue
        return value


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _pick(options: Sequence[str], text: str) -> Any:
    try:
        number = int(text.strip())
    except ValueError:
        return text.strip()
    return options[number - 1] if 1 <= number <= len(options) else text


def in_language(survey: Survey, language: str | None) -> tuple[str, Survey]:
    """(language, the survey as shown in it): its texts in ``language`` if it is written or
    translated in it, else its own.  Only words change: every answer value keeps its index, so
    :func:`original_answer` turns an answer given in the shown survey into the signed one's."""
    lang, words = survey_words(survey, [language] if language else [])
    questions = tuple(
        replace(q, text=w.text, help=w.help, options=w.options, anchors=w.anchors)
        for q, w in ((q, words.questions[q.id]) for q in survey.questions)
    )
    return lang, replace(
        survey, title=words.title, description=words.description, questions=questions
    )


def original_answer(signed: Question, shown_question: Question, answer: Any) -> Any:
    """An answer to ``shown_question`` (a label in the shown language) as ``signed``'s."""
    if answer is None or not signed.options:
        return answer
    by_index = dict(zip(shown_question.options, signed.options, strict=True))
    return [by_index[a] for a in answer] if isinstance(answer, list) else by_index[answer]


def run_answer(args: argparse.Namespace, read: Callable[[str], str], out: TextIO) -> int:
    policy = Policy(
        max_question_epsilon=args.max_question_epsilon, max_survey_epsilon=args.max_survey_epsilon
    )
    with SurveyClient(
        args.url,
        trusted_key=args.trusted_key,
        state=StateStore(args.state),
        policy=policy,
        timeout=args.timeout,
    ) as client:
        verified: VerifiedSurvey = client.fetch(args.survey_id)
        signed = verified.survey
        lang, survey = in_language(signed, args.language)
        if verified.require_enrolment and args.enrolment_token is None:
            # Before any question: without a token the aggregator must refuse the answers.
            raise EnrolmentTokenRequired(
                f"survey {survey.id!r} admits only enrolled respondents: run again with "
                "--enrolment-token TOKEN (from the survey's operator); nothing was asked or sent"
            )
        title = terminal_text(survey.title)
        out.write(f"\n{title}\n{'=' * len(title)}\n")
        if survey.description:
            out.write(f"{terminal_text(survey.description, newlines=True)}\n")
        if args.language and args.language.lower().split("-")[0] != lang:
            others = ", ".join(sorted({signed.language, *signed.translations}))
            out.write(f"(This survey is not written in {args.language!r}: it has {others}.)\n")
        out.write(
            f"Signature verified (aggregator key {verified.key_id}). Your answers are randomized "
            "on this device; only the randomized reports leave it.\n"
        )
        if survey.relay is not None:
            out.write(
                f"This survey is relayed: the reports are sealed so that only the aggregator can "
                f"read them, and sent to the relay at {terminal_text(survey.relay.url)}, which "
                "hides who sent them and forwards them in shuffled batches.\n"
            )
        answers = {}
        # The true answers so far, as conditions read them: a question not shown or declined
        # makes every condition on it false. Skipped questions still send their report
        # (not_applicable), randomized like any other: every path sends the same requests.
        given: dict[str, Any] = {}
        # One numbering: the questions asked, 1, 2, ...; "what will be sent" repeats it.
        numbers: dict[str, int] = {}
        for question in survey.questions:
            if not shown(question.show_if, given):
                given[question.id] = NOT_APPLICABLE
                continue
            numbers[question.id] = asked = len(numbers) + 1
            out.write(f"\n{asked}. {terminal_text(question.text)}\n")
            if question.help:
                out.write(f"{_indent(terminal_text(question.help, newlines=True))}\n")
            out.write(f"{explain(question)}\n")
            answer = prompt_answer(question, read, out)
            answers[question.id] = original_answer(signed.question(question.id), question, answer)
            given[question.id] = DECLINED if answer is None else question.check_base(answer)
        skipped = len(survey.questions) - len(numbers)
        if skipped:
            out.write(
                f"\n{skipped} question{'s' if skipped > 1 else ''} did not apply to your answers "
                "and {} not asked; a randomized report is sent for {} all the same, so the "
                "server cannot tell which questions you were asked.\n".format(
                    *(("were", "them") if skipped > 1 else ("was", "it"))
                )
            )
        budget = client.budget()
        out.write(
            f"\nThis survey costs at most ε = {verified.total_epsilon:.2f} in total. "
            f"Spent on this device so far: {budget['spent_total']:.2f} "
            f"(remaining this period: {budget['remaining_period']:.2f}).\n"
        )

        def confirm(payloads: Mapping[str, str]) -> bool:
            out.write(
                "\nWhat will be sent (randomized on this device; some may differ from your "
                "answers on purpose: that is what protects you):\n"
            )
            for question in survey.questions:
                shown = shown_report(question, payloads[question.id])  # labels by index
                text = terminal_text(question.text)
                number = numbers.get(question.id)
                if number is None:  # not asked: its randomized report is sent all the same
                    out.write(f"  –  {text} (not asked): {shown}\n")
                else:
                    out.write(f"  {number}. {text}: {shown}\n")
            if args.yes:
                return True
            out.write(
                "If you say no, nothing is sent and this device will not answer this survey "
                "again (drawing again until the reports match your answers would reveal them).\n"
            )
            return _read("Send these randomized answers? [y/N]: ", read).lower() in ("y", "yes")

        try:
            receipt = client.answer(
                verified, answers, enrolment_token=args.enrolment_token, confirm=confirm
            )
        except AnswerDeclined as error:
            raise Aborted(str(error)) from None
        where = "relay" if survey.relay is not None else "aggregator"
        if receipt.delivered:
            sealed = " sealed" if survey.relay is not None else ""
            out.write(
                f"Sent {len(receipt.report_ids)} randomized{sealed} reports"
                f"{' to the relay' if sealed else ''}. Thank you!\n"
            )
        else:
            out.write(
                f"The {where} is unreachable: the randomized reports are saved on this device "
                "and will be sent by `deniable flush` or with your next answer.\n"
            )
    return 0


def run_flush(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with SurveyClient(args.url, state=StateStore(args.state), timeout=args.timeout) as client:
        result = client.flush(enrolment_token=args.enrolment_token, survey_id=args.survey)
    out.write(f"delivered {result.delivered} batch(es); {result.pending} still pending\n")
    if result.pending:
        err.write(
            f"deniable: {result.pending} batch(es) still pending: the aggregator did not accept "
            "them yet; run `deniable flush` again later (with --enrolment-token TOKEN for a "
            "batch refused for enrolment)\n"
        )
        return EXIT_UNAVAILABLE
    return 0


def run_budget(args: argparse.Namespace, out: TextIO) -> int:
    with SurveyClient("http://localhost", state=StateStore(args.state)) as client:
        budget = client.budget()
    for name, value in budget.items():
        out.write(f"{name.replace('_', ' ')}: {value:.3f}\n")
    return 0


def run_simulate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    out.write(
        "SIMULATION: synthetic respondents, noise from a seeded numpy generator "
        "(not the CSPRNG used for real answers)\n"
    )
    result = simulate(
        args.url,
        args.survey_id,
        respondents=args.respondents,
        distribution=args.distribution,
        decline_rate=args.decline_rate,
        seed=args.seed,
        batch_reports=args.batch_reports,
        concurrency=args.concurrency,
        trusted_key=args.trusted_key,
        operator_token=args.operator_token,
        progress=None if args.quiet else err,
        timeout=args.timeout,
    )
    out.write(
        f"posted {result.respondents} respondents ({result.reports} reports) in "
        f"{result.seconds:.2f} s: {result.respondents_per_second:,.0f} respondents/s\n"
    )
    return 0


def main(
    argv: Sequence[str] | None = None,
    *,
    read: Callable[[str], str] = input,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        with quiet_pipe():
            if args.command == "answer":
                return run_answer(args, read, out)
            if args.command == "flush":
                return run_flush(args, out, err)
            if args.command == "budget":
                return run_budget(args, out)
            return run_simulate(args, out, err)
    except Aborted as error:
        err.write(f"deniable: aborted: {error}\n")
        return EXIT_REFUSED
    except DeniableError as error:
        err.write(f"deniable: {type(error).__name__}: {terminal_text(str(error))}\n")
        return exit_status(error)
    except KeyboardInterrupt:
        err.write("deniable: interrupted\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
