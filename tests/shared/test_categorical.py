"""Focused checks of the unary, local hashing, Hadamard and subset oracles and recommend().

The cross-mechanism suite (test_mechanisms.py) runs every oracle in the table;
this file pins what is specific to these modules: exact privacy including
non-default keywords, hash test vectors, the chunked/threaded OLH counts and
the FWHT counts against naive references, strict decoding of each wire
format, and the recommendation rule.  Random checks use fixed numpy seeds.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deniable.errors import InvalidParameter, InvalidReport, InvalidValue
from deniable.mechanisms import (
    CATEGORICAL,
    GRR,
    HRR,
    OLH,
    OUE,
    SUE,
    SubsetSelection,
    local_hashing,
    recommend,
    unary,
)
from deniable.mechanisms.hadamard import fwht
from deniable.mechanisms.local_hashing import bucket, buckets
from deniable.randomness import RESOLUTION, GeneratorSource

MINE = {
    "sue": lambda e, d: SUE(epsilon=e, domain_size=d),
    "oue": lambda e, d: OUE(epsilon=e, domain_size=d),
    "olh": lambda e, d: OLH(epsilon=e, domain_size=d),
    "blh": lambda e, d: OLH(epsilon=e, domain_size=d, hash_range=2),
    "olh_g7": lambda e, d: OLH(epsilon=e, domain_size=d, hash_range=7),
    "hrr": lambda e, d: HRR(epsilon=e, domain_size=d),
    "subset": lambda e, d: SubsetSelection(epsilon=e, domain_size=d),
    "subset_k2": lambda e, d: SubsetSelection(epsilon=e, domain_size=d, subset_size=min(2, d - 1)),
}
OLH_SEEDS = (0, 1, 2, 3, 7, 12345, 0xFFFFFFFF)


def worst_log_ratio(distributions: list[dict[str, float]]) -> float:
    outputs = set().union(*distributions)
    worst = 0.0
    for y in outputs:
        column = [d.get(y, 0.0) for d in distributions]
        assert min(column) > 0.0, "every output must be possible from every input"
        worst = max(worst, math.log(max(column) / min(column)))
    return worst


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.5])
@pytest.mark.parametrize("domain_size", [2, 3, 5])
@pytest.mark.parametrize("variant", sorted(MINE))
def test_exact_privacy(variant, domain_size, epsilon):
    mechanism = MINE[variant](epsilon, domain_size)
    keyword_sets = [{"seed": s} for s in OLH_SEEDS] if isinstance(mechanism, OLH) else [{}]
    worst = 0.0
    for keywords in keyword_sets:
        distributions = [mechanism.report_distribution(v, **keywords) for v in range(domain_size)]
        for distribution in distributions:
            assert math.fsum(distribution.values()) == pytest.approx(1.0, abs=1e-12)
            assert all(len(y) == mechanism.report_length for y in distribution)
        per_seed = worst_log_ratio(distributions)
        assert per_seed <= epsilon + 1e-9  # a seed may put two values in one bucket
        worst = max(worst, per_seed)
    assert worst == pytest.approx(epsilon, abs=1e-9)
    assert worst == pytest.approx(mechanism.epsilon_implemented, abs=1e-12)
    assert mechanism.epsilon_implemented == pytest.approx(epsilon, abs=1e-9)


@pytest.mark.parametrize("variant", sorted(MINE))
def test_distribution_agrees_with_p_and_q(variant):
    mechanism = MINE[variant](1.0, 5)
    if isinstance(mechanism, OLH):
        pytest.skip("olh's q* is an average over seeds")
    for x in range(5):
        distribution = mechanism.report_distribution(x)
        support = np.zeros(5)
        for text, probability in distribution.items():
            support += probability * mechanism.support_counts(mechanism.decode_many([text]))
        expected = np.full(5, mechanism.q_star)
        expected[x] = mechanism.p_star
        np.testing.assert_allclose(support, expected, atol=1e-12)


@pytest.mark.parametrize("variant", sorted(MINE))
@pytest.mark.parametrize("domain_size", [2, 5, 9, 64])
def test_round_trip_of_simulated_batches(variant, domain_size):
    mechanism = MINE[variant](1.0, domain_size)
    rng = np.random.default_rng(domain_size)
    batch = mechanism.randomize_many(rng.integers(0, domain_size, 500), rng)
    texts = mechanism.encode_many(batch)
    assert all(len(t) == mechanism.report_length for t in texts)
    np.testing.assert_array_equal(mechanism.decode_many(texts), batch)
    np.testing.assert_array_equal(
        mechanism.support_counts(mechanism.decode_many(texts)), mechanism.support_counts(batch)
    )
    # Single reports: Python types, CSPRNG by default.
    report = mechanism.randomize(domain_size - 1)
    assert isinstance(report, tuple) and all(type(part) is int for part in report)
    assert mechanism.decode(mechanism.encode(report)) == report
    assert mechanism.unstack(mechanism.stack([report])) == [report]
    assert mechanism.stack([]).shape[0] == 0


@pytest.mark.parametrize("variant", sorted(MINE))
def test_generic_decode_rejections(variant):
    mechanism = MINE[variant](1.0, 9)
    good = mechanism.encode(mechanism.randomize(3, rng=np.random.default_rng(1)))
    for bad in (good[:-2], good + "00", good.upper() if good.upper() != good else "G" + good[1:]):
        with pytest.raises(InvalidReport):
            mechanism.decode(bad)
    with pytest.raises(InvalidReport):
        mechanism.decode_many([good, 12])


def test_uppercase_is_rejected():
    mechanism = OUE(epsilon=1.0, domain_size=16)
    assert mechanism.decode("00ff")[8:] == (1,) * 8
    with pytest.raises(InvalidReport):
        mechanism.decode("00FF")


def test_unary_wire_is_little_endian_bits_with_zero_padding():
    mechanism = SUE(epsilon=1.0, domain_size=11)
    report = (1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1)  # bits 0, 9 and 10
    assert mechanism.encode(report) == "0106"
    assert mechanism.decode("0106") == report
    for padded in ("0108", "0186", "01f6"):
        with pytest.raises(InvalidReport):
            mechanism.decode(padded)
    with pytest.raises(InvalidReport):
        mechanism.encode((2,) + (0,) * 10)
    with pytest.raises(InvalidReport):
        mechanism.encode((1,) * 10)


def test_olh_wire_and_strict_decode():
    mechanism = OLH(epsilon=1.0, domain_size=10)  # g = 4
    assert mechanism.hash_range == 4
    assert mechanism.report_bytes == 5
    assert mechanism.encode((0xDEADBEEF, 3)) == "deadbeef03"
    assert mechanism.decode("deadbeef03") == (0xDEADBEEF, 3)
    with pytest.raises(InvalidReport):
        mechanism.decode("deadbeef04")  # y >= g
    with pytest.raises(InvalidReport):
        mechanism.encode((1 << 32, 0))


def test_hrr_wire_and_strict_decode():
    mechanism = HRR(epsilon=1.0, domain_size=300)  # K = 512: two index bytes
    assert mechanism.order == 512
    assert mechanism.encode((0x1FF, 1)) == "01ff01"
    assert mechanism.encode((5, -1)) == "000500"
    assert mechanism.decode("01ff00") == (0x1FF, -1)
    for bad in ("020000", "000502", "0005ff"):
        with pytest.raises(InvalidReport):
            mechanism.decode(bad)
    with pytest.raises(InvalidReport):
        mechanism.encode((5, 0))


def test_subset_wire_and_strict_decode():
    mechanism = SubsetSelection(epsilon=1.0, domain_size=300, subset_size=3)
    assert mechanism.report_bytes == 6
    assert mechanism.encode((1, 2, 299)) == "00010002012b"
    assert mechanism.decode("00010002012b") == (1, 2, 299)
    for bad in ("000100010002", "000200010003", "00010002012c", "0001000201ff"):
        with pytest.raises(InvalidReport):  # duplicate, unsorted, out of range
            mechanism.decode(bad)
    with pytest.raises(InvalidReport):
        mechanism.encode((2, 1, 5))


def test_olh_hash_test_vectors():
    # Pinned for other implementations (a browser client must reproduce these).
    assert local_hashing.fmix32(0x9E3779B1) == 0x11FD02EB
    assert bucket(0, 1, 4) == 3
    assert bucket(0, 0, 4) == 0
    assert bucket(1, 0, 4) == 3
    assert bucket(0xDEADBEEF, 7, 5) == 1
    assert bucket(123456789, 1023, 2) == 1
    assert bucket(0xFFFFFFFF, 65535, 65536) == 10062
    rng = np.random.default_rng(5)
    seeds = rng.integers(0, 1 << 32, 300, dtype=np.uint64)
    values = rng.integers(0, 4096, 300)
    for g in (2, 5, 4096):
        expected = [bucket(int(s), int(v), g) for s, v in zip(seeds, values, strict=True)]
        assert buckets(seeds, values, g).tolist() == expected


@pytest.mark.parametrize("hash_range", [2, 3, 4, 7, 1000])
def test_olh_collision_rate_is_one_over_g(hash_range):
    seeds = np.random.default_rng(hash_range).integers(0, 1 << 32, 400_000, dtype=np.uint64)
    n = seeds.size
    for v, x in [(0, 1), (1, 2), (0, 1023), (17, 4000)]:
        rate = float(np.mean(buckets(seeds, v, hash_range) == buckets(seeds, x, hash_range)))
        sd = math.sqrt((1 / hash_range) * (1 - 1 / hash_range) / n)
        assert abs(rate - 1 / hash_range) < 5.5 * sd  # false alarm ~4e-8 per pair


def naive_olh_counts(mechanism: OLH, batch: np.ndarray) -> np.ndarray:
    counts = np.zeros(mechanism.domain_size, dtype=np.int64)
    for seed, y in batch.tolist():
        for v in range(mechanism.domain_size):
            counts[v] += bucket(seed, v, mechanism.hash_range) == y
    return counts


@pytest.mark.parametrize("hash_range", [None, 2, 5])
def test_olh_chunked_threaded_counts_equal_naive(monkeypatch, hash_range):
    mechanism = OLH(epsilon=1.5, domain_size=37, hash_range=hash_range)
    rng = np.random.default_rng(11)
    batch = mechanism.randomize_many(rng.integers(0, 37, 301), rng)
    expected = naive_olh_counts(mechanism, batch)
    np.testing.assert_array_equal(mechanism.support_counts(batch), expected)
    # Force the thread pool and ragged chunks on this small batch.
    monkeypatch.setattr(local_hashing, "_PARALLEL_MIN_CELLS", 0)
    monkeypatch.setattr(local_hashing, "_CHUNK_ROWS", 7)
    np.testing.assert_array_equal(mechanism.support_counts(batch), expected)
    np.testing.assert_array_equal(mechanism.support_counts(batch[:0]), np.zeros(37))


@pytest.mark.parametrize("hash_range", [2, 3, 4, 5, 7, 8, 1000])
def test_olh_counts_equal_reference_bucket_for_any_chunking(monkeypatch, hash_range):
    # Power-of-two g reduces with a mask, others with a remainder.  With 1-row
    # chunks 600 reports make more than 255 chunks, so the uint8 tallies are
    # summed mid-batch; at g = 2 a missed sum would wrap cells (~300 hits) past 255.
    mechanism = OLH(epsilon=1.0, domain_size=37, hash_range=hash_range)
    rng = np.random.default_rng(hash_range)
    seeds = rng.integers(0, 1 << 32, 600, dtype=np.uint64).astype(np.int64)
    seeds[:2] = [0, (1 << 32) - 1]
    batch = np.stack([seeds, rng.integers(0, hash_range, 600)], axis=1)
    expected = naive_olh_counts(mechanism, batch)
    buffer = np.getbufsize()
    for rows in (1, 7, 64):
        monkeypatch.setattr(local_hashing, "_CHUNK_ROWS", rows)
        np.testing.assert_array_equal(mechanism.support_counts(batch), expected)
        monkeypatch.setattr(local_hashing, "_PARALLEL_MIN_CELLS", 0)
        np.testing.assert_array_equal(mechanism.support_counts(batch), expected)
        monkeypatch.setattr(local_hashing, "_PARALLEL_MIN_CELLS", 1 << 40)
    assert np.getbufsize() == buffer  # counting restores numpy's ufunc buffer size


class _FixedSeed(GeneratorSource):
    """Draws everything from a numpy generator except the OLH seed."""

    def __init__(self, generator: np.random.Generator, seed: int) -> None:
        super().__init__(generator)
        self.seed = seed

    def token_bytes(self, count: int) -> bytes:
        return self.seed.to_bytes(count, "big")


def test_olh_randomize_follows_per_seed_distribution():
    mechanism = OLH(epsilon=1.0, domain_size=6, hash_range=5)
    rng = np.random.default_rng(3)
    n = 20000
    for seed, value in ((7, 2), (12345, 5)):
        source = _FixedSeed(rng, seed)
        expected = mechanism.report_distribution(value, seed=seed)
        texts = mechanism.encode_many(
            mechanism.stack([mechanism.randomize(value, rng=source) for _ in range(n)])
        )
        for text, probability in expected.items():
            hits = texts.count(text)
            sd = math.sqrt(n * probability * (1 - probability))
            assert abs(hits - n * probability) < 5.5 * sd


def test_hrr_fwht_counts_equal_naive():
    mechanism = HRR(epsilon=0.7, domain_size=13)  # K = 16
    rng = np.random.default_rng(4)
    batch = mechanism.randomize_many(rng.integers(0, 13, 999), rng)
    hadamard = np.array(
        [[(-1) ** (r & j).bit_count() for j in range(16)] for r in range(16)], dtype=np.int64
    )
    naive = np.array([sum(hadamard[v + 1, j] == b for j, b in batch.tolist()) for v in range(13)])
    np.testing.assert_array_equal(mechanism.support_counts(batch), naive)
    vector = rng.integers(-50, 50, 16)
    np.testing.assert_array_equal(fwht(vector), hadamard @ vector)
    assert mechanism.support_counts(batch[:0]).tolist() == [0] * 13


def test_unary_simulation_bits_are_exact_bernoulli():
    rng = np.random.default_rng(8)
    # The top byte of this threshold ties with probability 1/256; the tie is
    # then decided by the low 45 bits (here: exactly half of them).
    limit = (77 << 45) + (1 << 44)
    out = np.empty((2000, 1000), dtype=np.uint8)
    unary._bernoulli_rows(rng, out, limit)
    n, p = out.size, limit / RESOLUTION
    assert abs(int(out.sum()) - n * p) < 5.5 * math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("cls", [SUE, OUE])
def test_unary_simulation_rates(cls):
    mechanism = cls(epsilon=1.0, domain_size=40)
    rng = np.random.default_rng(9)
    n = 50000
    batch = mechanism.randomize_many(np.full(n, 3), rng)
    assert batch.dtype == np.uint8 and batch.shape == (n, 40)
    counts = mechanism.support_counts(batch)
    for v, p in ((3, mechanism.p_star), (0, mechanism.q_star), (39, mechanism.q_star)):
        assert abs(counts[v] - n * p) < 5.5 * math.sqrt(n * p * (1 - p))


def test_subset_samplers_match_the_distribution():
    mechanism = SubsetSelection(epsilon=0.8, domain_size=5, subset_size=2)
    expected = mechanism.report_distribution(1)
    rng = np.random.default_rng(10)
    n = 20000
    many = mechanism.encode_many(mechanism.randomize_many(np.full(n, 1), rng))
    single = mechanism.encode_many(
        mechanism.stack([mechanism.randomize(1, rng=rng) for _ in range(n)])
    )
    for texts in (many, single):
        for text, probability in expected.items():
            sd = math.sqrt(n * probability * (1 - probability))
            assert abs(texts.count(text) - n * probability) < 5.5 * sd


def test_parameters_rebuild_and_validation():
    for mechanism in (
        OLH(epsilon=1.0, domain_size=9),
        OLH(epsilon=1.0, domain_size=9, hash_range=2),
        SubsetSelection(epsilon=1.0, domain_size=9),
        SubsetSelection(epsilon=1.0, domain_size=9, subset_size=4),
        HRR(epsilon=1.0, domain_size=9),
        SUE(epsilon=1.0, domain_size=9),
    ):
        rebuilt = type(mechanism)(**mechanism.parameters())
        assert rebuilt == mechanism and rebuilt.parameters() == mechanism.parameters()
    assert OLH(epsilon=1.0, domain_size=9) == OLH(epsilon=1.0, domain_size=9, hash_range=4)
    assert SubsetSelection(epsilon=1.0, domain_size=9).subset_size == 2
    assert OLH(epsilon=20.0, domain_size=9).hash_range == 1 << 16
    for bad in (1, 0, 1 << 17, 2.5, True):
        with pytest.raises(InvalidParameter, match="hash_range"):
            OLH(epsilon=1.0, domain_size=9, hash_range=bad)
    for bad in (0, 9, 10, 1.0):
        with pytest.raises(InvalidParameter, match="subset_size"):
            SubsetSelection(epsilon=1.0, domain_size=9, subset_size=bad)
    with pytest.raises(InvalidParameter, match="domain_size"):
        OUE(epsilon=1.0, domain_size=4097)
    with pytest.raises(InvalidParameter, match="seed"):
        OLH(epsilon=1.0, domain_size=9).report_distribution(0, seed=-1)
    for name in ("sue", "oue", "olh", "hrr", "subset"):
        mechanism = CATEGORICAL[name](epsilon=1.0, domain_size=4)
        for bad in (4, -1, True, 1.0, "1"):
            with pytest.raises(InvalidValue):
                mechanism.randomize(bad)


def test_hrr_and_subset_geometry():
    assert [HRR(epsilon=1.0, domain_size=d).order for d in (2, 3, 4, 7, 8, 1024)] == [
        4,
        4,
        8,
        8,
        16,
        2048,
    ]
    # k = 1 is GRR exactly.
    subset = SubsetSelection(epsilon=1.0, domain_size=3)
    grr = GRR(epsilon=1.0, domain_size=3)
    assert subset.subset_size == 1
    assert subset.p_star == pytest.approx(grr.p_star, rel=1e-15)
    assert subset.q_star == pytest.approx(grr.q_star, rel=1e-15)


# -- recommend() -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain_size", "epsilon"),
    [(2, 0.5), (2, 1.0), (2, 2.5), (3, 0.5), (3, 1.0), (3, 4.0), (5, 1.0), (5, 2.5), (8, 5.0)],
)
def test_recommend_grr_for_small_domains(domain_size, epsilon):
    result = recommend(domain_size, epsilon)
    assert result.mechanism == "grr"
    assert result.candidates[0].mechanism == "grr"
    assert "binary_rr" not in {c.mechanism for c in result.candidates}


@pytest.mark.parametrize(("domain_size", "epsilon"), [(1024, 1.0), (64, 2.5), (16, 0.5)])
def test_recommend_is_the_smallest_variance_bound(domain_size, epsilon):
    result = recommend(domain_size=domain_size, epsilon=epsilon, criterion="worst_case")
    best = min(c.variance_bound for c in result.candidates)
    chosen = result.candidates[0]
    assert chosen.mechanism == result.mechanism
    assert chosen.variance_bound <= best * (1 + 1e-12)
    built = CATEGORICAL[result.mechanism](epsilon=epsilon, domain_size=domain_size)
    assert built.variance_bound(1) == chosen.variance_bound


def test_recommend_at_1024_and_ties(monkeypatch):
    result = recommend(1024, 1.0, criterion="worst_case")
    table = {c.mechanism: c for c in result.candidates}
    # The worst-case bound: SUE's is symmetric in f, OUE's peaks at f = 1; HRR ties OUE.
    assert result.mechanism == "sue"
    assert table["oue"].variance_bound == pytest.approx(table["hrr"].variance_bound, rel=1e-12)
    assert table["oue"].variance_bound == pytest.approx(((math.e + 1) / (math.e - 1)) ** 2)
    # Approximate (f = 0) variances, the papers' ranking: OUE's is 4e^ε/(e^ε-1)², below SUE's.
    oue, sue = OUE(epsilon=1.0, domain_size=1024), SUE(epsilon=1.0, domain_size=1024)
    assert oue.approximate_variance(1) == pytest.approx(4 * math.e / (math.e - 1) ** 2)
    assert oue.approximate_variance(1) < sue.approximate_variance(1)
    # Without SUE and subset selection, OUE and HRR tie at the best: the 3-byte report wins.
    monkeypatch.delitem(CATEGORICAL, "sue")
    monkeypatch.delitem(CATEGORICAL, "subset")
    result = recommend(1024, 1.0, criterion="worst_case")
    assert [c.mechanism for c in result.candidates[:2]] == ["hrr", "oue"]


def test_recommend_candidates_cover_the_table():
    names = {c.mechanism for c in recommend(1024, 1.0).candidates}
    assert names == set(CATEGORICAL) - {"binary_rr"}
    assert {c.mechanism for c in recommend(5000, 1.0).candidates} == {"grr", "olh", "hrr"}
    for d, e in itertools.product((2, 9, 200), (0.3, 3.0)):
        assert recommend(d, e).candidates[0].mechanism == recommend(d, e).mechanism


@pytest.mark.parametrize(("domain_size", "epsilon"), [(1024, 1.0), (64, 2.5), (16, 0.5), (4, 1.0)])
def test_recommend_by_default_minimises_the_summed_error_at_uniform(domain_size, epsilon):
    result = recommend(domain_size, epsilon)
    assert result.criterion == "uniform"
    best = min(c.expected_squared_error for c in result.candidates)
    assert result.candidates[0].expected_squared_error <= best * (1 + 1e-12)
    built = CATEGORICAL[result.mechanism](epsilon=epsilon, domain_size=domain_size)
    uniform = np.full(domain_size, 1.0 / domain_size)
    assert result.candidates[0].expected_squared_error == pytest.approx(
        built.variance(uniform, 1).sum(), rel=1e-12
    )
    for candidate in result.candidates:
        assert candidate.worst_case_squared_error >= candidate.expected_squared_error * (1 - 1e-12)


def test_recommend_ranks_by_the_papers_rule_at_1024():
    """At f = 1/d OUE beats SUE (the papers' ranking), unlike by the worst-case bound."""
    table = {c.mechanism: c for c in recommend(1024, 1.0).candidates}
    assert table["oue"].expected_squared_error < table["sue"].expected_squared_error
    assert table["oue"].worst_case_squared_error > table["sue"].worst_case_squared_error


@pytest.mark.parametrize(
    ("options", "epsilon", "expected"),
    [(16, 1.0, "option_sampling"), (64, 4.0, "option_sampling"), (2, 8.0, "binary_rr")],
)
def test_recommend_multiple_choice(options, epsilon, expected):
    result = recommend(options, epsilon, multiple=True)
    assert result.mechanism == expected
    assert {c.mechanism for c in result.candidates} == {"option_sampling", "binary_rr"}
    first, second = result.candidates
    assert first.expected_squared_error <= second.expected_squared_error


def test_recommend_rejects_an_unknown_criterion():
    with pytest.raises(InvalidParameter, match="criterion"):
        recommend(4, 1.0, criterion="median")
