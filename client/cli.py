"""``deniable``: answer a survey in the terminal, flush the outbox, or simulate respondents.

    deniable answer URL SURVEY_ID [--state PATH] [--trusted-key B64] [--yes]
    deniable flush URL [--state PATH]
    deniable budget [--state PATH]
    deniable simulate URL SURVEY_ID --respondents N [--distribution uniform|skewed] [--seed S]

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
from typing import Any, TextIO

from deniable.errors import DeniableError, InvalidValue
from deniable.mechanisms.base import FrequencyOracle
from deniable.mechanisms.longitudinal import LongitudinalGRR
from deniable.mechanisms.option_sampling import OptionSampling
from deniable.survey import Question
from deniable.terminal import EXIT_REFUSED, EXIT_UNAVAILABLE, exit_status, quiet_pipe

from .policy import Policy, question_cost
from .session import AnswerDeclined, EnrolmentTokenRequired, SurveyClient, VerifiedSurvey
from .simulate import DISTRIBUTIONS, simulate
from .state import StateStore

__all__ = ["explain", "main", "prompt_answer", "shown_report", "terminal_text"]


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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


# Terminal escape sequences (CSI, OSC, other ESC), then any C0/C1 control character left.
ESCAPE_SEQUENCE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\\\)?|[@-_]?)")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def terminal_text(text: str, *, newlines: bool = False) -> str:
    """Server-supplied text made safe to print: escape sequences and control characters go.

    Why: a survey title or an error detail is written by someone else; on a terminal,
    ESC sequences could recolour, retitle, hide earlier lines or fake a prompt.
    """
    text = ESCAPE_SEQUENCE.sub("", text)
    if newlines:
        return "\n".join(CONTROL.sub("", line) for line in text.split("\n"))
    return CONTROL.sub("", text)


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


# -- explaining a question ---------------------------------------------------------
def explain(question: Question) -> str:
    """Plain words: what the aggregator will see for this question, and what ε means."""
    oracle = question.oracle
    cost = question_cost(question)
    ratio = math.exp(cost)
    lines = []
    if isinstance(oracle, LongitudinalGRR):
        keep = oracle.p_star
        lines.append(
            "This question may be asked again. Your device remembers a randomized version of "
            "your answer and randomizes it afresh each time, so asking many times reveals no "
            f"more than ε = {oracle.epsilon_implemented:.2f} about one answer in total; this "
            f"report alone reveals at most ε = {oracle.report_epsilon:.2f}. The report equals "
            f"your true answer with probability {keep:.0%}."
        )
    elif isinstance(oracle, OptionSampling):
        lines.append(
            "The server gets one option picked at random, independently of your answer, and a "
            f"yes/no for that option that matches your true choice with probability "
            f"{oracle.keep_probability:.0%} and is flipped otherwise."
        )
    elif question.type == "multiple_choice":
        per = oracle.option_oracle  # type: ignore[attr-defined]
        lines.append(
            "For every option the server gets a yes/no that matches your true choice with "
            f"probability {per.p_star:.0%} and is flipped otherwise."
        )
    elif question.type == "numeric":
        lines.append(
            "The server does not get your number: it gets one randomized value whose "
            "distribution depends only slightly on it; only averages over many people are "
            "meaningful."
        )
    elif isinstance(oracle, FrequencyOracle) and oracle.direct_encoding:
        lines.append(
            f"The server gets your true answer with probability {oracle.p_star:.0%}; "
            "otherwise one of the other answers picked at random."
        )
    else:
        lines.append(
            f"The server gets a randomized report ({question.mechanism}) that fits your true "
            "answer only slightly better than any other answer."
        )
    lines.append(
        f"Privacy cost ε = {cost:.2f}: whatever the server sees, it is at most {ratio:.1f}× "
        "more likely under your true answer than under any other, so the report alone can "
        "never prove what you answered."
    )
    return "\n".join("    " + line for line in lines)


# -- prompting -------------------------------------------------------------------------
def _read(prompt: str, read: Callable[[str], str]) -> str:
    try:
        return read(prompt).strip()
    except EOFError:
        raise Aborted("input closed before the survey was complete") from None


def prompt_answer(question: Question, read: Callable[[str], str], out: TextIO) -> Any:
    """Ask until the input is a valid true answer for ``question``; say plainly what is wanted."""
    while True:
        if question.type == "yes_no":
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
            lo, hi = question.oracle.lo, question.oracle.hi  # type: ignore[attr-defined]
            text = _read(f"  a number from {lo:g} to {hi:g}: ", read)
            hint = f"please enter a number from {lo:g} to {hi:g}"
            try:
                value = float(text)
            except ValueError:
                value = text
        try:
            question.check_answer(value)
        except InvalidValue:
            out.write(f"  {hint}\n")
            continue
        return value


# The non-response values as respondents read them (docs/protocol.md §5.5).
EXTRA_WORDS = {"declined": "Prefer not to say", "not_applicable": "Not asked (did not apply)"}


def _label(question: Question, index: int) -> str:
    labels = question.labels
    label = labels[index] if 0 <= index < len(labels) else str(index)
    if question.type == "yes_no" and label in ("yes", "no"):
        return label.capitalize()
    return EXTRA_WORDS.get(label, label) if index >= len(question.options or ()) else label


def _end(question: Question, sign: int) -> str:
    end = question.hi if sign > 0 else question.lo
    return f"{'high' if sign > 0 else 'low'} end of the range ({end:g})"


def shown_report(question: Question, payload: str) -> str:
    """A randomized report in words: what the server will read from it.

    The words of the browser client's ``describe`` (client/browser, each mechanism's
    module), with the range's end and the non-response values named.  Why words and not
    the payload: the respondent is to see that the reports may differ from the answers
    (that is what protects them) before agreeing to send them.
    """
    report = question.oracle.decode(payload)
    mechanism = question.mechanism
    if question.type == "numeric":
        if isinstance(report, tuple | list) and len(report) == 2:  # status, then sign
            status, sign = report
            if status == 0:
                return f"answered; {_end(question, int(sign))}"
            return EXTRA_WORDS.get(question.extras[status - 1], str(status))
        if mechanism == "duchi":
            return _end(question, int(report))
        if mechanism == "discrete_laplace":
            assert question.lo is not None and question.hi is not None
            grid = question.oracle.grid_size
            value = question.lo + (question.hi - question.lo) * int(report) / grid
            return f"{value:.6g} (your answer with noise added; it may fall outside the range)"
    elif isinstance(report, int):  # binary_rr, grr: one value
        return _label(question, report)
    elif mechanism == "option_sampling":
        index, bit = report
        return f"about “{_label(question, int(index))}” only: {'yes' if bit else 'no'}"
    elif mechanism == "binary_rr":  # a multiple choice: one bit per option
        return "; ".join(
            f"{_label(question, index)}: {'yes' if bit else 'no'}"
            for index, bit in enumerate(report)
        )
    elif mechanism == "subset":
        return "one of: " + ", ".join(_label(question, int(i)) for i in sorted(report))
    elif mechanism in ("oue", "sue"):
        marked = [_label(question, index) for index, bit in enumerate(report) if bit]
        return "marked: " + (", ".join(marked) or "none")
    elif mechanism == "hrr":
        column, sign = report
        return f"Hadamard column {column}, sign {'+' if sign > 0 else '−'}"
    elif mechanism == "olh":
        seed, bucket = report
        return f"hash seed {seed}, bucket {bucket} of {question.oracle.hash_range}"
    return f"the encoded report {payload}"


def _pick(options: Sequence[str], text: str) -> Any:
    try:
        number = int(text.strip())
    except ValueError:
        return text.strip()
    return options[number - 1] if 1 <= number <= len(options) else text


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
        survey = verified.survey
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
        for number, question in enumerate(survey.questions, 1):
            out.write(f"\n{number}. {terminal_text(question.text)}\n{explain(question)}\n")
            answers[question.id] = prompt_answer(question, read, out)
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
            for number, question in enumerate(survey.questions, 1):
                shown = shown_report(question, payloads[question.id])
                out.write(f"  {number}. {terminal_text(question.text)}: {shown}\n")
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
