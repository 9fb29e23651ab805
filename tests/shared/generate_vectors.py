"""Write shared/vectors/protocol-vectors.json: the cross-language test vectors.

    python -m tests.shared.generate_vectors        # rewrite the file
    python -m tests.shared.generate_vectors --check  # exit 1 if the file is stale

Everything is deterministic: byte streams come from SHA-256 in counter mode over a
label, the Ed25519 key from a fixed seed.  Both the Python tests
(tests/shared/test_vectors.py) and the JavaScript tests (client/browser/test/) read
the file; docs/protocol.md §8 describes its layout.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from deniable.errors import InvalidReport
from deniable.mechanisms.local_hashing import bucket
from deniable.randomness import ByteStreamSource
from deniable.survey import (
    FORMAT,
    MAX_LABEL,
    MAX_MULTIPLE_OPTIONS,
    MAX_OPTIONS,
    MAX_QUESTIONS,
    MAX_TEXT,
    Question,
    Survey,
)

from .invalid_survey_vectors import invalid_surveys
from .questionnaire_vectors import (
    QUESTIONNAIRE_SURVEY,
    invalid_questionnaires,
    nonresponse_vectors,
    path_vectors,
)
from .signature_vectors import document_vectors, public_key_b64, rotation_vectors, signing_key
from .translation_vectors import TRANSLATED_SURVEY, invalid_translations
from .vector_questions import CASES, q, question_vectors, resolved

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "shared" / "vectors" / "protocol-vectors.json"


def stream(label: str, size: int = 4096) -> bytes:
    out = b""
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{label}/{counter}".encode()).digest()
        counter += 1
    return out[:size]


class StreamSource(ByteStreamSource):
    """A fixed byte stream that records how much was read (tests only)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def token_bytes(self, count: int) -> bytes:
        if self.position + count > len(self.data):
            raise IndexError("byte stream exhausted")
        out = self.data[self.position : self.position + count]
        self.position += count
        return out


def mechanism_vectors() -> list[dict[str, Any]]:
    vectors = []
    for definition, answers in CASES:
        question = Question.from_dict(definition, "question", FORMAT)
        for index, answer in enumerate(answers):
            data = stream(f"{question.id}/{index}")
            source = StreamSource(data)
            payload = question.randomize(answer, rng=source)
            vectors.append(
                {
                    "question": question.id,
                    "answer": answer,
                    "stream": data[: source.position].hex(),
                    "report": payload,
                }
            )
        if question.mechanism in ("sue", "oue"):
            vectors.append(unary_ties_vector(question, answers[0]))
    return vectors + crafted_vectors()


def crafted_vector(qid: str, answer: Any, prefix: bytes) -> dict[str, Any]:
    """A report from ``prefix`` (chosen bytes for the first draws), then the usual stream."""
    question = Question.from_dict(
        dict(next(d for d, _ in CASES if d["id"] == qid)), "question", FORMAT
    )
    data = prefix + stream(f"{qid}/crafted/{answer}")
    source = StreamSource(data)
    payload = question.randomize(answer, rng=source)
    return {
        "question": qid,
        "answer": answer,
        "stream": data[: source.position].hex(),
        "report": payload,
    }


def crafted_vectors() -> list[dict[str, Any]]:
    """Streams chosen so that a plausible misreading of §4 gives another report.

    HRR: the row is x + 1 (row 0 is all +1): j with popcount((x + 1) & j) and
    popcount(x & j) of different parity.  Discrete Laplace: the step up from k is
    taken if uniform53() < round-half-to-even((u - k) * 2**53); u = 1/4 + 2**-54 and
    1/4 + 3 * 2**-54 put that product at n + 1/2 with n even and odd, and the draw is
    exactly n, so floor, round-half-up and round-half-to-even each disagree with one.
    """
    n_even, n_odd = 2**51, 2**51 + 1
    # Duchi at x = 4e307 on [-5e307, 5e307]: the draw equals the threshold of t = 0.8, so the
    # report is -1; evaluated as 2 * (x - lo) / (hi - lo), t overflows to +1 and gives +1.
    wide = Question.from_dict(
        resolved(next(d for d, _ in CASES if d["id"] == "duchi_wide")), "question", FORMAT
    ).oracle
    tau = wide._threshold(4e307)
    return [
        crafted_vector("duchi_wide", 4e307, (tau << 3).to_bytes(7, "little")),
        crafted_vector("hrr", "Car", bytes([0b001])),  # x + 1 = 1, x = 0: j = 1
        crafted_vector("hrr300", "17", (0b10).to_bytes(2, "little")),  # 18 & 2 vs 17 & 2
        crafted_vector("laplace_round", 0.25 + 2**-54, (n_even << 3).to_bytes(7, "little")),
        crafted_vector("laplace_round", 0.25 + 3 * 2**-54, (n_odd << 3).to_bytes(7, "little")),
    ]


def unary_ties_vector(question: Question, answer: Any) -> dict[str, Any]:
    """Every top byte equal to its threshold's: every bit is settled by its low 45 bits."""
    oracle = question.oracle
    true = question.check_answer(answer)
    limits = [
        oracle._one_if_true if v == true else oracle._one_if_other
        for v in range(oracle.domain_size)
    ]
    data = bytes(limit >> 45 for limit in limits) + stream(f"{question.id}/ties")
    source = StreamSource(data)
    payload = question.randomize(answer, rng=source)
    assert source.position == oracle.domain_size * 7  # d top bytes, 6 bytes per tie
    return {
        "question": question.id,
        "answer": answer,
        "stream": data[: source.position].hex(),
        "report": payload,
    }


def bad_payloads(question: Question) -> list[str]:
    width = question.oracle.report_length
    good = "0" * width
    candidates = ["", good + "00", good[:-2], "0A" + good[2:], "zz" + good[2:], "ff" * (width // 2)]
    name = question.oracle.name
    if question.type == "multiple_choice":
        candidates.append("02" + good[2:])
    if name == "hrr":
        candidates.append(good[:-2] + "02")
    if name == "subset" and question.oracle.subset_size > 1:
        candidates.append(good)  # equal values: not strictly increasing
    if name in ("sue", "oue") and question.domain_size % 8:
        candidates.append(good[:-2] + "80")  # a padding bit set
    if name == "discrete_laplace":
        candidates.append("7fffffffffffffff")
    out = []
    for payload in candidates:
        try:
            question.oracle.decode(payload)
        except InvalidReport:
            out.append(payload)
    return out


def decode_vectors(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    vectors = []
    questions = question_vectors()
    for vector in reports:
        qid = vector["question"]
        if qid in seen:
            continue
        seen.add(qid)
        question = Question.from_dict(questions[qid], "question", FORMAT)
        vectors.append({"question": qid, "payload": vector["report"], "valid": True})
        for payload in bad_payloads(question):
            vectors.append({"question": qid, "payload": payload, "valid": False})
    return vectors


TRICKY_SURVEY = {
    "format": FORMAT,
    "id": "tricky-ünïcode"[:6] + "-1",
    "title": 'Überstunden — 残業 🕐 "quoted" \\ back\u2028slash',
    # Control characters other than a line feed are refused in survey text.
    "description": 'Line\nfeed, quote " and backslash \\, e\u0301 (combining), 𝄞, \u00e9, <script>',
    "questions": [
        q("tiny", "numeric", 0.001, lo=-1e-6, hi=1e21),
        q("third", "numeric", 0.30000000000000004, lo=5e-324, hi=0.1, mechanism="duchi"),
        q("big", "single_choice", 20.0, options=["α", "β", "🙂", "A", "a", "\u00e9", "e\u0301"]),
        q(
            "grid",
            "numeric",
            1e-3,
            lo=-1.5e300,
            hi=1.5e300,
            mechanism="discrete_laplace",
            parameters={"grid_size": 1000000},
        ),
    ],
}


# Every limit of §2.2 at once, each at its largest valid value.  Lengths are counted in Unicode
# code points (a JavaScript string's .length counts UTF-16 units): the texts here are at their
# limit in code points, and twice that in UTF-16.  One more of anything is an invalid_surveys
# vector.
LONG_ID = "l" + "-" * 62 + "9"  # 64 characters: [a-z0-9][a-z0-9_-]{0,63}
LIMITS_SURVEY = {
    "format": FORMAT,
    "id": "limits" + "_" * 57 + "0",
    "title": "🕐" * MAX_LABEL,
    "description": "𝄞" * MAX_TEXT,
    "questions": [
        q(
            LONG_ID,
            "single_choice",
            1.0,
            mechanism="grr",
            text="𝄞" * MAX_TEXT,
            options=["🙂" * MAX_LABEL, *map(str, range(1, MAX_OPTIONS))],
        ),
        q(
            "multiple",
            "multiple_choice",
            20.0,
            mechanism="binary_rr",
            options=[f"o{i}" for i in range(MAX_MULTIPLE_OPTIONS)],
        ),
        q("least", "yes_no", 0.001, longitudinal={"key": "k" * 64, "instantaneous_epsilon": 20.0}),
        q(
            "finest",
            "numeric",
            0.001,
            lo=0,
            hi=1,
            mechanism="discrete_laplace",
            parameters={"grid_size": 10**6},
        ),
        q(
            "widest_hash",
            "single_choice",
            20.0,
            options=["a", "b"],
            mechanism="olh",
            parameters={"hash_range": 65536},
        ),
        # JCS writes 1e16 as 10000000000000000: an integer literal beyond 2**53 that a parser
        # must read as the double it is (Python's reads an int).
        q("huge", "numeric", 1.0, lo=-1e16, hi=1e16),
        *(q(f"q{i:02d}", "yes_no", 1.0, text=f"{i}") for i in range(MAX_QUESTIONS - 6)),
    ],
}
assert len(LIMITS_SURVEY["questions"]) == MAX_QUESTIONS and len(LONG_ID) == 64


def spelled_as_floats(definition: dict[str, Any]) -> dict[str, Any]:
    """The definition with every integral parameter written as a float (``5.0`` for ``5``)."""
    out = json.loads(json.dumps(definition))
    for question in out["questions"]:
        question["parameters"] = {
            k: float(v) if type(v) is int else v for k, v in question["parameters"].items()
        }
    return out


# The demo questions, titled with invisible characters around visible ones (not blank: §2.2),
# and written with 5.0 where JCS writes 5 (a number's value counts, not its spelling).
SPELLING_SURVEY = {
    "format": FORMAT,
    "id": "spelling",
    "title": "\ufeffInvisible edges\u200b",
    "questions": [
        *json.loads((ROOT / "aggregator" / "demo_survey.json").read_text("utf-8"))["questions"],
        q(
            "grid",
            "numeric",
            1.0,
            lo=0,
            hi=10,
            mechanism="discrete_laplace",
            parameters={"grid_size": 4},
        ),
    ],
}


def survey_vectors(named: tuple[tuple[str, dict[str, Any]], ...] = ()) -> list[dict[str, Any]]:
    demo = json.loads((ROOT / "aggregator" / "demo_survey.json").read_text("utf-8"))
    key = signing_key()
    out = []
    for name, definition in named or (
        ("demo", demo),
        ("tricky", TRICKY_SURVEY),
        ("limits", LIMITS_SURVEY),
        ("spelling", SPELLING_SURVEY),
    ):
        survey = Survey.from_dict(definition).upgraded()
        canonical = survey.canonical_bytes()
        written = survey.to_dict() if name != "spelling" else spelled_as_floats(survey.to_dict())
        out.append(
            {
                "name": name,
                "definition": written,
                "canonical": canonical.decode("utf-8"),
                "canonical_sha256": hashlib.sha256(canonical).hexdigest(),
                "signature": base64.b64encode(key.sign(canonical)).decode(),
            }
        )
    return out


# True answers a client must refuse (§7.7), never coerce: (question id in questions{}, answer).
INVALID_ANSWERS: list[tuple[str, Any]] = [
    ("yes", "yes"),
    ("yes", 1),
    ("yes", 0),
    ("yes", None),
    ("yes", [True]),
    ("grr5", "car"),
    ("grr5", 0),
    ("grr5", ["Car"]),
    ("grr5", None),
    ("grr5", ""),
    ("tools", "Email"),
    ("tools", ["Email", "Fax"]),
    ("tools", [0]),
    ("tools", None),
    ("tools", {"Email": True}),
    ("duchi", "3"),
    ("duchi", True),
    ("duchi", 20.000000000000004),
    ("duchi", -1e-300),
    ("duchi", None),
    ("duchi", [3]),
    ("laplace", 6.000000000000001),
    ("laplace", False),
]


# The ends of every range of §2.2's "not blank" lists, and the code points just outside them
# (control characters aside: they are refused for another reason).
BLANK_RANGES = [
    (0x09, 0x0D),
    (0x20, 0x20),
    (0x85, 0x85),
    (0xA0, 0xA0),
    (0xAD, 0xAD),
    (0x34F, 0x34F),
    (0x61C, 0x61C),
    (0x115F, 0x1160),
    (0x1680, 0x1680),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2000, 0x200F),
    (0x2028, 0x202F),
    (0x205F, 0x206F),
    (0x3000, 0x3000),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]


def blank_vectors() -> list[dict[str, Any]]:
    """Single code points: blank or not (§2.2), at and next to every range end."""
    inside = {c for lo, hi in BLANK_RANGES for c in range(lo, hi + 1)}
    points = {c for lo, hi in BLANK_RANGES for c in (lo - 1, lo, hi, hi + 1)}
    points |= {ord("a"), 0x2800, 0x1F600}  # a letter, the braille blank, an emoji: not blank
    control = set(range(0x20)) | set(range(0x7F, 0xA0))
    return [
        {"text": chr(c), "code_point": f"U+{c:04X}", "blank": c in inside}
        for c in sorted(points)
        if c in inside or c not in control
    ]


def relay_url_vectors() -> list[dict[str, Any]]:
    """A relay's ``url`` (§10, "The relay member") and its serialized origin, or null: refused
    (the member's reason ``relay``).  Both clients and the aggregator's page parse it alike."""
    accepted = [
        ("https://relay.example", "https://relay.example"),
        ("https://Relay.EXAMPLE:443/in", "https://relay.example"),
        ("HTTPS://relay.example:8443/a/b", "https://relay.example:8443"),
        ("https://xn--bcher-kva.example/%C3%BC", "https://xn--bcher-kva.example"),
        ("https://192.0.2.7:8100", "https://192.0.2.7:8100"),
        ("https://[2001:db8::5]:8100", "https://[2001:db8::5]:8100"),
        ("https://[2001:DB8:0:0:0:0:0:5]:8100/r", "https://[2001:db8::5]:8100"),
        ("https://[2001:db8:0:0:1:0:0:1]", "https://[2001:db8::1:0:0:1]"),
        ("https://[::ffff:192.0.2.1]", "https://[::ffff:c000:201]"),
        ("http://localhost:8100", "http://localhost:8100"),
        ("http://127.0.0.1:80", "http://127.0.0.1"),
        ("http://127.8.9.10:8100", "http://127.8.9.10:8100"),
        ("http://[::1]:8100", "http://[::1]:8100"),
        ("http://[0:0:0:0:0:0:0:1]:8100", "http://[::1]:8100"),
    ]
    refused = [
        "http://[2001:db8::5]:8100",
        "http://relay.example",
        "http://192.0.2.7",
        "http://[::ffff:127.0.0.1]",
        "http://localhost.example",
        "ftp://relay.example",
        "https://relay.example/",
        "https://relay.example?x=1",
        "https://relay.example#f",
        "https://user@relay.example",
        "https://user:pw@relay.example",
        "https://[fe80::1%25eth0]",
        "https://[fe80::1%eth0]",
        "https://[2001:db8::5",
        "https://2001:db8::5",
        "https://[g::1]",
        "https://[1:2:3:4:5:6:7:8:9]",
        "https://relay.example:0",
        "https://relay.example:65536",
        "https://relay.example:",
        "https://relay.example:+80",
        "https://relay..example",
        "https://-relay.example",
        "https://relay_1.example",
        "https://bücher.example",
        "https://relay.example/a b",
        "https://relay.example\\a",
        "https://relay.example//a",
        "https://relay.example/a/../b",
        "https://relay.example/./b",
        "https://relay.example/%zz",
        "https://relay.example/a@b",
        "https://1.2.3",
        "https://0x7f.1",
        "https://256.0.0.1",
        "https://01.2.3.4",
        "https://relay.example.",
        "relay.example",
        "https://",
        "https:///relay.example",
        " https://relay.example",
    ]
    return [{"url": url, "origin": origin} for url, origin in accepted] + [
        {"url": url, "origin": None} for url in refused
    ]


def olh_vectors() -> list[dict[str, int]]:
    cases = [(0, 1, 4), (0, 0, 2), (0xFFFFFFFF, 65535, 65536), (123456789, 42, 7), (1, 1023, 21)]
    data = stream("olh-hash", 64)
    for i in range(0, 48, 4):
        cases.append((int.from_bytes(data[i : i + 4], "big"), i * 997 % 65536, 2 + i))
    return [
        {"seed": s, "value": v, "hash_range": g, "bucket": bucket(s, v, g)} for s, v, g in cases
    ]


def draw_vectors() -> dict[str, Any]:
    data = stream("draws", 64)
    source = StreamSource(data)
    uniform = [source.uniform53() for _ in range(3)]
    below = [(upper, source.randbelow(upper)) for upper in (1, 2, 3, 255, 256, 257, 65536, 1000003)]
    return {
        "stream": data[: source.position].hex(),
        "uniform53": uniform,
        "randbelow": [{"upper": u, "value": v} for u, v in below],
    }


def build() -> dict[str, Any]:
    surveys = survey_vectors()
    reports = mechanism_vectors()
    return {
        "format": "deniable.vectors/1",
        "generator": "python -m tests.shared.generate_vectors",
        "resolution_bits": 53,
        "public_key": public_key_b64(),
        "surveys": surveys,
        "invalid_surveys": invalid_surveys(surveys[0]["definition"]),
        "draws": draw_vectors(),
        "olh_hash": olh_vectors(),
        "questions": question_vectors(),
        "reports": reports,
        "decode": decode_vectors(reports),
        "invalid_answers": [{"question": qid, "answer": answer} for qid, answer in INVALID_ANSWERS],
        "blank": blank_vectors(),
        "documents": document_vectors(surveys[0]["definition"]),
        "key_rotation": rotation_vectors(),
        "relay_urls": relay_url_vectors(),
        # Optional and conditional questions, help text, scales (§5.5-5.6; §8 "questionnaire").
        "questionnaire": {
            # and a survey's language and translations (§5.7).
            "surveys": survey_vectors(
                (("questionnaire", QUESTIONNAIRE_SURVEY), ("translated", TRANSLATED_SURVEY))
            ),
            "invalid_surveys": [*invalid_questionnaires(), *invalid_translations()],
            "nonresponse": nonresponse_vectors(stream, StreamSource),
            "paths": path_vectors(),
        },
    }


def render() -> str:
    return json.dumps(build(), ensure_ascii=False, indent=1) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = PATH.read_text("utf-8") if PATH.exists() else ""
        if current != text:
            print(f"{PATH} is stale: run python -m tests.shared.generate_vectors", file=sys.stderr)
            return 1
        return 0
    PATH.parent.mkdir(parents=True, exist_ok=True)
    PATH.write_text(text, "utf-8")
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
