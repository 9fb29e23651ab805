"""The fast wire decoders agree with the reference decoder, and refuse what it refuses.

The reference is the straightforward decoder: one check per payload (type,
length, lowercase hex), then ``bytes.fromhex`` and the mechanism's strict
unpacking.  ``decode_many`` and ``wire_statistics`` (chunked, counted from
packed rows) must give the same batch and statistics on random and edge-case
payloads, and raise InvalidReport on exactly the same inputs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.errors import InvalidReport
from deniable.mechanisms import CATEGORICAL, base

from .conftest import ALL_NAMES, make_numeric

_HEX = re.compile(r"[0-9a-f]*")


def reference_decode(mechanism, payloads):
    width = mechanism.report_length
    for payload in payloads:
        if not isinstance(payload, str) or len(payload) != width:
            raise InvalidReport("bad payload")
    text = "".join(payloads)
    if not _HEX.fullmatch(text):
        raise InvalidReport("not lowercase hex")
    data = np.frombuffer(bytes.fromhex(text), dtype=np.uint8)
    return mechanism._unpack_many(data.reshape(len(payloads), mechanism.report_bytes))


def outcome(function, *args):
    try:
        return "ok", np.asarray(function(*args))
    except InvalidReport:
        return "invalid", None


def assert_agree(mechanism, payloads) -> None:
    expected_kind, expected = outcome(reference_decode, mechanism, payloads)
    kind, batch = outcome(mechanism.decode_many, payloads)
    assert kind == expected_kind, payloads
    stats_kind, stats = outcome(mechanism.wire_statistics, payloads)
    assert stats_kind == expected_kind, payloads
    if expected_kind == "ok":
        np.testing.assert_array_equal(batch, expected)
        np.testing.assert_array_equal(stats, mechanism.statistics(expected))


def build(name: str, domain_size: int):
    if name in CATEGORICAL:
        cls = CATEGORICAL[name]
        if name == "binary_rr":
            return cls(epsilon=1.0)
        return cls(epsilon=1.0, domain_size=domain_size)
    return make_numeric(name, 1.0)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A few reports per chunk, so chunk boundaries and offsets are exercised."""
    monkeypatch.setattr(base, "_CHUNK_TEXT", 40)


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("domain_size", [2, 13, 300])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fast_decoders_agree_with_the_reference_on_random_payloads(
    name: str, domain_size: int, data: st.DataObject
) -> None:
    mechanism = build(name, domain_size)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    size = mechanism.domain_size if name in CATEGORICAL else None
    values = rng.integers(0, size, 12) if size else rng.uniform(mechanism.lo, mechanism.hi, 12)
    payloads = mechanism.encode_many(mechanism.randomize_many(values, rng))
    # Some payloads replaced by random bytes of the right size (often out of domain).
    for index in data.draw(st.lists(st.integers(0, 11), max_size=3)):
        payloads[index] = data.draw(
            st.binary(min_size=mechanism.report_bytes, max_size=mechanism.report_bytes)
        ).hex()
    assert_agree(mechanism, payloads)
    assert_agree(mechanism, payloads[: data.draw(st.integers(0, 12))])


EDGE_TEXT = [
    lambda p: p.upper(),
    lambda p: p[:-1],
    lambda p: p + "0",
    lambda p: "",
    lambda p: "  " + p[2:],
    lambda p: p[:-2] + "\n\t",
    lambda p: "g" + p[1:],
    lambda p: "é" + p[1:],
    lambda p: "\u0661" + p[1:],  # ARABIC-INDIC DIGIT ONE: a digit, but not hex
    lambda p: p[:-1] + "F",
    lambda p: None,
    lambda p: p.encode(),
    lambda p: 7,
]


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("edit", range(len(EDGE_TEXT)))
def test_malformed_text_is_refused_wherever_it_sits(name: str, edit: int, small_chunks) -> None:
    mechanism = build(name, 13)
    rng = np.random.default_rng(edit)
    size = getattr(mechanism, "domain_size", None)
    values = rng.integers(0, size, 9) if size else rng.uniform(mechanism.lo, mechanism.hi, 9)
    payloads = mechanism.encode_many(mechanism.randomize_many(values, rng))
    assert_agree(mechanism, payloads)
    for position in (0, 4, 8):
        broken = list(payloads)
        broken[position] = EDGE_TEXT[edit](broken[position])
        if broken[position] == payloads[position]:
            continue  # e.g. upper() of a payload without letters
        with pytest.raises(InvalidReport) as caught:
            mechanism.decode_many(broken)
        with pytest.raises(InvalidReport):
            mechanism.wire_statistics(broken)
        if not isinstance(broken[position], str) or len(broken[position]) != len(payloads[0]):
            assert f"report {position}:" in str(caught.value)  # the error names the report
        assert_agree(mechanism, broken)


def out_of_domain(name: str, mechanism) -> list[str]:
    """Well-formed hex that the mechanism must refuse."""
    if name in ("grr", "binary_rr"):
        return [
            mechanism.domain_size.to_bytes(mechanism.report_bytes, "big").hex(),
            "ff" * mechanism.report_bytes,
        ]
    if name in ("sue", "oue"):
        return ["00" * (mechanism.report_bytes - 1) + "e0"]  # padding bits set (d = 13)
    if name == "olh":
        return ["00000000" + mechanism.hash_range.to_bytes(1, "big").hex()]
    if name == "hrr":
        return ["0002", f"{mechanism.order:02x}01"]
    if name == "subset":
        k = mechanism.subset_size
        return [
            "00" * k,  # duplicates
            bytes(range(k - 1, -1, -1)).hex(),  # decreasing
            bytes([*range(k - 1), 13]).hex(),  # 13 is outside [0, 13)
        ]
    if name == "duchi":
        return ["02", "ff"]
    low, high = mechanism.plausible_range
    return [
        (high + 1).to_bytes(8, "big", signed=True).hex(),
        (low - 1).to_bytes(8, "big", signed=True).hex(),
    ]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_out_of_domain_reports_are_refused_by_every_decoder(name: str, small_chunks) -> None:
    mechanism = build(name, 13)
    rng = np.random.default_rng(1)
    size = getattr(mechanism, "domain_size", None)
    values = rng.integers(0, size, 9) if size else rng.uniform(mechanism.lo, mechanism.hi, 9)
    payloads = mechanism.encode_many(mechanism.randomize_many(values, rng))
    for bad in out_of_domain(name, mechanism):
        assert len(bad) == mechanism.report_length
        for position in (0, 8):
            broken = list(payloads)
            broken[position] = bad
            for decoder in (mechanism.decode_many, mechanism.wire_statistics):
                with pytest.raises(InvalidReport):
                    decoder(broken)


@pytest.mark.parametrize("name", ["sue", "oue"])
@pytest.mark.parametrize("domain_size", [8, 13, 1024])
def test_unary_lane_counts_hold_past_255_rows(name: str, domain_size: int) -> None:
    # All ones in every row: each byte lane reaches 255 within one block of rows,
    # and the counts must still be exact over many blocks.
    mechanism = CATEGORICAL[name](epsilon=1.0, domain_size=domain_size)
    ones = np.ones((1000, domain_size), dtype=np.uint8)
    payloads = mechanism.encode_many(ones)
    np.testing.assert_array_equal(mechanism.wire_statistics(payloads), np.full(domain_size, 1000))
    np.testing.assert_array_equal(mechanism.wire_statistics([]), np.zeros(domain_size))


@pytest.mark.parametrize("options", [2, 13, 64])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_option_sampling_fast_decoders_agree_with_the_reference(options: int, data) -> None:
    from deniable.mechanisms import MECHANISMS

    mechanism = MECHANISMS["option_sampling"](epsilon=1.0, options=options)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    payloads = mechanism.encode_many(
        mechanism.randomize_many(rng.integers(0, 2, (12, options)), rng)
    )
    for index in data.draw(st.lists(st.integers(0, 11), max_size=3)):
        payloads[index] = data.draw(
            st.binary(min_size=mechanism.report_bytes, max_size=mechanism.report_bytes)
        ).hex()
    assert_agree(mechanism, payloads)
    broken = list(payloads)
    broken[data.draw(st.integers(0, 11))] = data.draw(st.sampled_from(["", "zz", None]))
    assert_agree(mechanism, broken)
