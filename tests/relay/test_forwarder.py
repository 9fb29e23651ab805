"""The forwarder's shuffle (relay/forwarder.py ``permuted``): uniform, from the OS CSPRNG."""

from __future__ import annotations

import math
import random
import secrets
from collections import Counter
from itertools import permutations, product

from deniable.relay import forwarder

SAMPLES = 200_000
CELLS = 24  # the orders of 4 blobs
# Each cell's count is Binomial(SAMPLES, 1/24): by Hoeffding and a union bound over the
# cells, |count - SAMPLES/24| reaches BOUND with probability at most 1e-6.
BOUND = math.sqrt(SAMPLES * math.log(2 * CELLS / 1e-6) / 2)


def test_the_batch_order_is_a_uniform_permutation_from_the_os_generator():
    """All 24 orders of 4 blobs come out equally often (false-alarm rate 1e-6), drawn by
    ``secrets.SystemRandom`` and not by the random module's seeded generator."""
    blobs = [bytes([n]) for n in range(4)]
    counts = Counter(tuple(forwarder.permuted(blobs)) for _ in range(SAMPLES))
    assert set(counts) == set(permutations(blobs))
    assert max(abs(count - SAMPLES / CELLS) for count in counts.values()) < BOUND, counts
    assert isinstance(forwarder._random, secrets.SystemRandom)
    random.seed(7)
    first = forwarder.permuted(list(range(64)))
    random.seed(7)
    assert forwarder.permuted(list(range(64))) != first  # equal with probability 1/64!


def test_the_bound_catches_the_classic_fisher_yates_slip():
    """The test above has the power it claims: swapping with any position (j in 0..n-1
    rather than i..n-1) gives orders with probabilities 8/256 to 15/256, whose expected
    counts lie beyond BOUND by more than six standard deviations (computed exactly over
    all 4^4 draws, no sampling)."""
    counts: Counter = Counter()
    for draws in product(range(4), repeat=4):
        items = [0, 1, 2, 3]
        for i, j in enumerate(draws):
            items[i], items[j] = items[j], items[i]
        counts[tuple(items)] += 1
    share = max(counts.values()) / 4**4
    spread = math.sqrt(SAMPLES * share * (1 - share))
    assert SAMPLES * (share - 1 / CELLS) - BOUND > 6 * spread


def test_a_noised_batch_is_sent_whole_in_one_random_order_with_its_real_count(monkeypatch):
    """send() hands the aggregator every blob of the batch, real and dummy, permuted
    together by ``permuted`` (not real units first), and the batch's real_units."""
    from types import SimpleNamespace

    from deniable.relay.storage import Batch

    real = [bytes([1, n]) for n in range(5)]
    dummies = [bytes([2, n]) for n in range(60)]
    batch = Batch(batch_id="b" * 32, survey_id="s", unit="a", sealed=real + dummies, real_units=5)
    sent = []

    def put_batch(url, survey_id, batch_id, unit, sealed, credential, *, timeout, real_units):
        sent.append((list(sealed), real_units))
        return SimpleNamespace(acknowledged=True)

    acknowledged = []
    storage = SimpleNamespace(
        get_survey=lambda _: SimpleNamespace(aggregator_url="http://x", credential="c"),
        acknowledged=acknowledged.append,
    )
    monkeypatch.setattr(forwarder.upstream, "put_batch", put_batch)
    assert forwarder.send(storage, {"FORWARD_TIMEOUT": 1}, batch)
    ((order, real_units),) = sent
    assert real_units == 5 and sorted(order) == sorted(batch.sealed)
    # The 5 real units all first has probability 5! 60! / 65! < 1.3e-7.
    assert [blob[0] for blob in order[:5]] != [1] * 5
    assert acknowledged == [batch]
