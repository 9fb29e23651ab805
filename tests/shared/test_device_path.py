"""The device path: pure Python, no numpy, and byte for byte the reference path.

* In a fresh interpreter, building every mechanism and survey question type,
  randomizing and encoding never imports numpy.
* For the same byte stream, the pure-Python ``randomize`` + ``encode`` give
  exactly the report of the reference path: docs/protocol.md's unary draw
  written out bit by bit (unary encodings) and the vectorized ``encode_many``.
* ``encode`` refuses what the vectorized path refuses.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.errors import InvalidReport
from deniable.mechanisms import CATEGORICAL, MECHANISMS, FrequencyOracle
from deniable.mechanisms.unary import UnaryEncoding
from deniable.randomness import ByteStreamSource
from deniable.survey import Survey

from .conftest import ALL_NAMES, CATEGORICAL_NAMES, make_numeric, sample_values

ROOT = Path(__file__).resolve().parents[2]


class StreamSource(ByteStreamSource):
    """A deterministic byte stream: SHA-256 in counter mode over a label."""

    def __init__(self, label: str) -> None:
        self.label = label.encode()
        self.counter = 0
        self.buffer = b""

    def token_bytes(self, count: int) -> bytes:
        while len(self.buffer) < count:
            block = hashlib.sha256(self.label + self.counter.to_bytes(8, "big")).digest()
            self.buffer += block
            self.counter += 1
        out, self.buffer = self.buffer[:count], self.buffer[count:]
        return out


class FixedSource(ByteStreamSource):
    """Exactly these bytes, then IndexError."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def token_bytes(self, count: int) -> bytes:
        if count > len(self.data):
            raise IndexError("byte stream exhausted")
        out, self.data = self.data[:count], self.data[count:]
        return out


def reference_unary(mechanism, value, source: ByteStreamSource) -> tuple[int, ...]:
    """docs/protocol.md §4, bit by bit: u_v = top byte · 2**45 + (a tie's uniform45)."""
    true = mechanism.check_value(value)
    top = source.token_bytes(mechanism.domain_size)
    bits = []
    for v in range(mechanism.domain_size):
        limit = mechanism._one_if_true if v == true else mechanism._one_if_other
        uniform = top[v] << 45
        if top[v] == limit >> 45:  # a tie: the low 45 bits decide
            uniform += int.from_bytes(source.token_bytes(6), "little") >> 3
        bits.append(int(uniform < limit))
    return tuple(bits)


def reference_report(mechanism, value, source: ByteStreamSource):
    """The reference draw: unary encodings as the protocol spells it out; others as they are."""
    if isinstance(mechanism, UnaryEncoding):
        return reference_unary(mechanism, value, source)
    return mechanism.randomize(value, rng=source)


def reference_encode(mechanism, report) -> str:
    return mechanism.encode_many(mechanism.stack([report]))[0]


def build(name: str, domain_size: int, epsilon: float):
    if name in CATEGORICAL:
        cls = CATEGORICAL[name]
        if name == "binary_rr":
            return cls(epsilon=epsilon)
        return cls(epsilon=epsilon, domain_size=min(domain_size, cls.max_domain_size))
    return make_numeric(name, epsilon)


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize(("domain_size", "epsilon"), [(3, 0.5), (16, 1.0), (1024, 4.0)])
def test_pure_path_is_the_reference_path_for_the_same_byte_stream(
    name: str, domain_size: int, epsilon: float
) -> None:
    mechanism = build(name, domain_size, epsilon)
    values = sample_values(mechanism)
    if isinstance(mechanism, FrequencyOracle) and len(values) > 24:
        values = values[:8] + values[-8:] + values[len(values) // 2 : len(values) // 2 + 8]
    label = f"{name}-{domain_size}-{epsilon}"
    pure, reference = StreamSource(label), StreamSource(label)
    for _ in range(12):
        for value in values:
            text = mechanism.encode(mechanism.randomize(value, rng=pure))
            expected = reference_encode(mechanism, reference_report(mechanism, value, reference))
            assert text == expected
            assert len(text) == mechanism.report_length
    assert pure.counter == reference.counter and pure.buffer == reference.buffer


@pytest.mark.parametrize("name", ["sue", "oue"])
def test_unary_ties_on_the_top_byte_are_settled_by_the_low_bits(name: str) -> None:
    # A stream whose top bytes (the first d bytes of each report) all equal the top
    # byte of the "other" threshold, so every other bit goes through the tie path.
    mechanism = CATEGORICAL[name](epsilon=1.0, domain_size=64)
    top = mechanism._one_if_other >> 45

    class Ties(StreamSource):
        def token_bytes(self, count: int) -> bytes:
            data = super().token_bytes(count)
            return bytes([top]) * count if count == mechanism.domain_size else data

    pure, reference = Ties("ties"), Ties("ties")
    ones = 0
    for value in range(64):
        report = mechanism.randomize(value, rng=pure)
        assert report == reference_unary(mechanism, value, reference)
        ones += sum(report)
    assert pure.counter == reference.counter and pure.buffer == reference.buffer
    assert 0 < ones < 64 * 64  # both outcomes of the tie occur


@pytest.mark.parametrize("name", ["sue", "oue"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
def test_unary_bits_are_bernoulli_of_the_thresholds(name: str, epsilon: float) -> None:
    # Every (top byte, low bits) pair at once: over all 256 top bytes, with the tie's
    # low bits just below and at the threshold's, the draw gives 1 exactly for u < t.
    mechanism = CATEGORICAL[name](epsilon=epsilon, domain_size=2)
    for limit, value in ((mechanism._one_if_true, 0), (mechanism._one_if_other, 1)):
        low = limit & ((1 << 45) - 1)
        for byte in range(256):
            for candidate in {max(low - 1, 0), low, min(low + 1, (1 << 45) - 1)}:
                stream = bytes([byte, byte]) + (candidate << 3).to_bytes(6, "little") * 2
                bit = mechanism.randomize(value, rng=FixedSource(stream))[0]
                assert bit == int((byte << 45) + candidate < limit)


@pytest.mark.parametrize("name", CATEGORICAL_NAMES)
def test_numpy_generators_still_draw_as_before(name: str) -> None:
    mechanism = build(name, 16, 1.0)
    first = [mechanism.randomize(3 % mechanism.domain_size, rng=np.random.default_rng(5))]
    again = [mechanism.randomize(3 % mechanism.domain_size, rng=np.random.default_rng(5))]
    assert first == again
    if isinstance(mechanism, UnaryEncoding):
        rng = np.random.default_rng(5)
        limits = np.full(16, mechanism._one_if_other, dtype=np.uint64)
        limits[3] = mechanism._one_if_true
        expected = rng.integers(0, 1 << 53, size=16, dtype=np.uint64) < limits
        assert first[0] == tuple(expected.astype(int).tolist())


def random_valid_report(mechanism, data):
    """A valid Python-level report drawn by hypothesis (any report, not only likely ones)."""
    name = mechanism.name
    if name in ("grr", "binary_rr"):
        return data.draw(st.integers(0, mechanism.domain_size - 1))
    if name in ("sue", "oue"):
        return tuple(
            data.draw(
                st.lists(
                    st.integers(0, 1),
                    min_size=mechanism.domain_size,
                    max_size=mechanism.domain_size,
                )
            )
        )
    if name == "olh":
        return (
            data.draw(st.integers(0, 2**32 - 1)),
            data.draw(st.integers(0, mechanism.hash_range - 1)),
        )
    if name == "hrr":
        return (data.draw(st.integers(0, mechanism.order - 1)), data.draw(st.sampled_from([1, -1])))
    if name == "subset":
        chosen = data.draw(
            st.sets(
                st.integers(0, mechanism.domain_size - 1),
                min_size=mechanism.subset_size,
                max_size=mechanism.subset_size,
            )
        )
        return tuple(sorted(chosen))
    if name == "duchi":
        return data.draw(st.sampled_from([1, -1]))
    low, high = mechanism.plausible_range
    return data.draw(st.integers(low, high))


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("domain_size", [2, 9, 300])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_encode_agrees_with_encode_many_on_every_valid_report(name, domain_size, data) -> None:
    mechanism = build(name, domain_size, 1.0)
    report = random_valid_report(mechanism, data)
    text = mechanism.encode(report)
    assert text == reference_encode(mechanism, report)
    assert mechanism.encode(mechanism.decode(text)) == text


INVALID_REPORTS = {
    "grr": [-1, 16, "3", 2.0, None, (1,)],
    "binary_rr": [-1, 2, "1", 0.5, None],
    "sue": [(1,) * 15, (1,) * 17, (0,) * 15 + (2,), (0,) * 15 + (-1,), 7, "0" * 16, None],
    "oue": [(1,) * 15, (0,) * 15 + (2,), (0.5,) * 16, 0],
    "olh": [(0,), (0, 0, 0), (-1, 0), (2**32, 0), (0, 10**6), (0, -1), 5, ("0", 0)],
    "hrr": [(0, 0), (0, 2), (-1, 1), (32, 1), (0,), 1, ("1", 1)],
    "subset": [(), (3, 2, 1, 0), (0, 0, 1, 2), (-1, 0, 1, 2), (0, 1, 2, 16), (0, 1, 2), "0123"],
    "duchi": [0, 2, -2, "1", None, (1,)],
    "discrete_laplace": [2**63, -(2**63) - 1, 1.5, "3", None],
    "option_sampling": [(16, 0), (-1, 1), (0, 2), (0, -1), (0,), 3, ("x", 1), None],
}


@pytest.mark.parametrize("name", ALL_NAMES)
def test_encode_refuses_invalid_reports(name: str) -> None:
    mechanism = build(name, 16, 1.0)
    if name == "subset":
        assert mechanism.subset_size == 4
    for report in INVALID_REPORTS[name]:
        with pytest.raises(InvalidReport):
            mechanism.encode(report)


def test_option_sampling_encode_refuses_invalid_reports() -> None:
    mechanism = MECHANISMS["option_sampling"](epsilon=1.0, options=16)
    for report in INVALID_REPORTS["option_sampling"]:
        with pytest.raises(InvalidReport):
            mechanism.encode(report)


def test_every_mechanism_has_invalid_report_cases() -> None:
    assert set(INVALID_REPORTS) == set(MECHANISMS)


EVERY_QUESTION = {
    "format": "deniable.survey/1",
    "id": "lean",
    "title": "Every question type and mechanism",
    "questions": [
        {"id": "yn", "type": "yes_no", "text": "?", "epsilon": 0.5},
        {
            "id": "memo",
            "type": "yes_no",
            "text": "?",
            "epsilon": 0.5,
            "mechanism": "binary_rr",
            "longitudinal": {"key": "memo", "instantaneous_epsilon": 1.0},
        },
        *(
            {
                "id": f"c-{name}",
                "type": "single_choice",
                "text": "?",
                "epsilon": 0.5,
                "mechanism": name,
                "options": [f"o{i}" for i in range(40)],
            }
            for name in CATEGORICAL_NAMES
            if name != "binary_rr"
        ),
        {
            "id": "weekly",
            "type": "single_choice",
            "text": "?",
            "epsilon": 0.5,
            "mechanism": "grr",
            "options": ["a", "b", "c"],
            "longitudinal": {"key": "weekly", "instantaneous_epsilon": 1.0},
        },
        {
            "id": "many",
            "type": "multiple_choice",
            "text": "?",
            "epsilon": 0.5,
            "options": ["x", "y", "z"],
            "mechanism": "binary_rr",
        },
        {
            "id": "sampled",
            "type": "multiple_choice",
            "text": "?",
            "epsilon": 0.5,
            "options": ["x", "y", "z"],
            "mechanism": "option_sampling",
        },
        {"id": "duchi", "type": "numeric", "text": "?", "epsilon": 0.5, "lo": 0, "hi": 10},
        {
            "id": "lap",
            "type": "numeric",
            "text": "?",
            "epsilon": 0.5,
            "lo": 0,
            "hi": 10,
            "mechanism": "discrete_laplace",
        },
    ],
}

EVERY_ANSWER = {
    "yn": True,
    "memo": False,
    "weekly": "b",
    "many": ["x", "z"],
    "sampled": ["y"],
    "duchi": 3.5,
    "lap": 7,
    **{f"c-{name}": "o17" for name in CATEGORICAL_NAMES if name != "binary_rr"},
}

DEVICE_SCRIPT = """
import json, os, sys
import deniable.client
from deniable.client.randomized import randomize_answers
from deniable.mechanisms import CATEGORICAL, NUMERIC
from deniable.survey import Survey
assert "numpy" not in sys.modules, "import"
for cls in CATEGORICAL.values():
    oracle = cls(epsilon=1.0) if cls.name == "binary_rr" else cls(epsilon=1.0, domain_size=16)
    for value in range(oracle.domain_size):
        assert len(oracle.encode(oracle.randomize(value))) == oracle.report_length
for cls in NUMERIC.values():
    oracle = cls(epsilon=1.0, lo=0.0, hi=1.0)
    assert len(oracle.encode(oracle.randomize(0.25))) == oracle.report_length
survey = Survey.from_json(sys.argv[1])
survey.canonical_bytes()
answers = json.loads(sys.argv[2])
checked = {q.id: q.check_answer(answers[q.id]) for q in survey.questions}
for question in survey.questions:
    question.randomize(answers[question.id])
randomized = randomize_answers(survey, checked, os.urandom(32), {})
print(json.dumps({"numpy": "numpy" in sys.modules, "payloads": randomized.payloads}))
"""


def test_the_device_path_never_imports_numpy() -> None:
    survey = Survey.from_dict(EVERY_QUESTION)
    assert {q.type for q in survey.questions} == {
        "yes_no",
        "single_choice",
        "multiple_choice",
        "numeric",
    }
    assert {q.mechanism for q in survey.questions} == set(MECHANISMS)
    result = subprocess.run(
        [sys.executable, "-c", DEVICE_SCRIPT, json.dumps(EVERY_QUESTION), json.dumps(EVERY_ANSWER)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["numpy"] is False
    for question in survey.questions:  # and the aggregator accepts every payload
        payload = output["payloads"][question.id]
        assert len(question.statistics([payload])) == question.statistics_size


@pytest.mark.parametrize("options", [2, 13, 64])
def test_option_sampling_pure_path_is_the_reference_path(options: int) -> None:
    mechanism = MECHANISMS["option_sampling"](epsilon=1.0, options=options)
    rng = np.random.default_rng(options)
    pure, reference = StreamSource(f"os-{options}"), StreamSource(f"os-{options}")
    for _ in range(200):
        answer = tuple(int(b) for b in rng.integers(0, 2, options))
        text = mechanism.encode(mechanism.randomize(answer, rng=pure))
        assert text == reference_encode(mechanism, reference_report(mechanism, answer, reference))
