"""What the terminal shows a respondent: a question's privacy and a randomized report in plain
words, and server-supplied text made safe to print.

``deniable answer`` (:mod:`deniable.client.cli`) prints :func:`explain` under each question
before it is answered, and :func:`shown_report` for each report before asking whether to send
them; every title, question and error detail it prints goes through :func:`terminal_text`.
"""

from __future__ import annotations

import math
import re

from deniable.mechanisms.base import FrequencyOracle
from deniable.mechanisms.discrete_laplace import DiscreteLaplace
from deniable.mechanisms.duchi import Duchi
from deniable.mechanisms.hadamard import HRR
from deniable.mechanisms.local_hashing import OLH
from deniable.mechanisms.longitudinal import LongitudinalGRR
from deniable.mechanisms.option_sampling import OptionSampling
from deniable.mechanisms.optionwise import OptionwiseRR
from deniable.mechanisms.subset import SubsetSelection
from deniable.mechanisms.unary import UnaryEncoding
from deniable.survey import Question
from deniable.survey_checks import CONTROL

from .policy import question_cost

__all__ = ["explain", "shown_report", "terminal_text"]


# Terminal escape sequences (CSI, OSC, other ESC), then any C0/C1 control character left
# (CONTROL: the core's, which survey texts are checked against).
ESCAPE_SEQUENCE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\\\)?|[@-_]?)")


def terminal_text(text: str, *, newlines: bool = False) -> str:
    """Server-supplied text made safe to print: escape sequences and control characters go.

    Why: a survey title or an error detail is written by someone else; on a terminal,
    ESC sequences could recolour, retitle, hide earlier lines or fake a prompt.
    """
    text = ESCAPE_SEQUENCE.sub("", text)
    if newlines:
        return "\n".join(CONTROL.sub("", line) for line in text.split("\n"))
    return CONTROL.sub("", text)


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
    if question.optional:
        lines.append(
            "If you prefer not to say, a randomized report is sent all the same, like any "
            "other, so the server cannot tell."
        )
    lines.append(
        f"Privacy cost ε = {cost:.2f}: whatever the server sees, it is at most {ratio:.1f}× "
        "more likely under your true answer than under any other, so the report alone can "
        "never prove what you answered."
    )
    return "\n".join("    " + line for line in lines)


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
    oracle = question.oracle
    if question.type == "numeric":
        if isinstance(report, tuple | list) and len(report) == 2:  # status, then sign
            status, sign = report
            if status == 0:
                return f"answered; {_end(question, int(sign))}"
            return EXTRA_WORDS.get(question.extras[status - 1], str(status))
        if isinstance(oracle, Duchi):
            return _end(question, int(report))
        if isinstance(oracle, DiscreteLaplace):
            assert question.lo is not None and question.hi is not None
            grid = question.oracle.grid_size
            value = question.lo + (question.hi - question.lo) * int(report) / grid
            return f"{value:.6g} (your answer with noise added; it may fall outside the range)"
    elif isinstance(report, int):  # binary_rr, grr: one value
        return _label(question, report)
    elif isinstance(oracle, OptionSampling):
        index, bit = report
        return f"about “{_label(question, int(index))}” only: {'yes' if bit else 'no'}"
    elif isinstance(oracle, OptionwiseRR):  # a multiple choice: one bit per option
        return "; ".join(
            f"{_label(question, index)}: {'yes' if bit else 'no'}"
            for index, bit in enumerate(report)
        )
    elif isinstance(oracle, SubsetSelection):
        return "one of: " + ", ".join(_label(question, int(i)) for i in sorted(report))
    elif isinstance(oracle, UnaryEncoding):
        marked = [_label(question, index) for index, bit in enumerate(report) if bit]
        return "marked: " + (", ".join(marked) or "none")
    elif isinstance(oracle, HRR):
        column, sign = report
        return f"Hadamard column {column}, sign {'+' if sign > 0 else '−'}"
    elif isinstance(oracle, OLH):
        seed, bucket = report
        return f"hash seed {seed}, bucket {bucket} of {question.oracle.hash_range}"
    return f"the encoded report {payload}"
