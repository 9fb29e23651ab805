"""The CSPRNG path: never Python's ``random`` or ``numpy.random``; per-thread, per-process bytes."""

from __future__ import annotations

import gc
import os
import random
import threading

import numpy as np
import pytest
from scipy import stats

from deniable import randomness
from deniable.randomness import SYSTEM, as_source, threshold

from .conftest import ALL_NAMES, make_any, sample_values

FALSE_ALARM = 1e-6


class Forbidden(AssertionError):
    pass


def _forbid(name: str):
    def forbidden(*args, **kwargs):
        raise Forbidden(f"the CSPRNG path called {name}")

    return forbidden


def _public_callables(module) -> list[str]:
    return [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))]


def _live_numpy_generators() -> list[object]:
    kinds = (np.random.Generator, np.random.RandomState)
    return [obj for obj in gc.get_objects() if isinstance(obj, kinds)]


@pytest.fixture
def no_pseudo_randomness(monkeypatch):
    """Make every entry point of ``random`` and ``numpy.random`` raise.

    Generators created before the test (say, a module-level ``default_rng()``)
    cannot be patched, so their states are compared before and after instead;
    the same for the hidden instance behind ``random``'s module functions.
    """
    python_state = random.getstate()
    generators = _live_numpy_generators()
    states = [
        g.bit_generator.state if isinstance(g, np.random.Generator) else g.get_state()
        for g in generators
    ]
    for cls in (random.Random, random.SystemRandom):
        for name in _public_callables(cls):
            monkeypatch.setattr(cls, name, _forbid(f"{cls.__name__}.{name}"), raising=False)
    for name in _public_callables(random):
        monkeypatch.setattr(random, name, _forbid(f"random.{name}"))
    for name in _public_callables(np.random):
        monkeypatch.setattr(np.random, name, _forbid(f"numpy.random.{name}"))
    yield
    monkeypatch.undo()
    assert random.getstate() == python_state, "random's hidden generator was used"
    for generator, state in zip(generators, states, strict=True):
        now = (
            generator.bit_generator.state
            if isinstance(generator, np.random.Generator)
            else generator.get_state()
        )
        assert str(now) == str(state), "a pre-existing numpy generator was used"


def test_the_patch_really_forbids(no_pseudo_randomness):
    for call in (
        lambda: random.random(),  # noqa: S311 - must raise
        lambda: random.randrange(3),  # noqa: S311 - must raise
        lambda: random.Random(1),  # noqa: S311 - must raise
        lambda: random.SystemRandom(),
        lambda: np.random.default_rng(),
        lambda: np.random.Generator(np.random.PCG64()),
        lambda: np.random.RandomState(1),
        lambda: np.random.rand(),
    ):
        with pytest.raises(Forbidden):
            call()


@pytest.mark.parametrize("name", ALL_NAMES)
def test_csprng_path_never_touches_pseudo_randomness(name, no_pseudo_randomness):
    mechanism = make_any(name, epsilon=1.0, domain_size=5)
    for value in sample_values(mechanism):
        for _ in range(20):
            report = mechanism.randomize(value)
            assert len(mechanism.encode(report)) == mechanism.report_length


def test_system_source_is_the_default_and_secure():
    assert as_source(None) is SYSTEM
    assert SYSTEM.secure
    assert not as_source(np.random.default_rng(0)).secure


def test_threads_get_different_bytes():
    count = 6
    barrier = threading.Barrier(count)
    results: list[bytes] = [b""] * count
    buffers: list[bytes] = [b""] * count

    def work(index: int) -> None:
        barrier.wait()
        results[index] = SYSTEM.token_bytes(32)
        buffers[index] = randomness._local.stream.getvalue()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == count
    # Each thread filled its own block: no thread's bytes come from another's buffer.
    assert len({id(b) for b in buffers}) == count and len(set(buffers)) == count
    for i in range(count):
        for j in range(count):
            if i != j:
                assert results[i] not in buffers[j]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_does_not_replay_parent_bytes():
    SYSTEM.token_bytes(16)  # the parent's buffer now holds unread bytes
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(read)
            os.write(write, SYSTEM.token_bytes(64))
        finally:
            os._exit(0)
    os.close(write)
    child = b""
    while len(child) < 64:
        chunk = os.read(read, 64 - len(child))
        if not chunk:
            break
        child += chunk
    os.close(read)
    os.waitpid(pid, 0)
    parent = SYSTEM.token_bytes(64)
    assert len(child) == 64
    assert child != parent


@pytest.mark.parametrize("upper", [1, 2, 3, 5, 6, 7, 10, 13, 200, 256, 257])
def test_randbelow_is_uniform(upper):
    draws = 40 * upper + 20000
    counts = np.bincount([SYSTEM.randbelow(upper) for _ in range(draws)], minlength=upper)
    assert counts.size == upper  # nothing out of range
    if upper == 1:
        assert counts[0] == draws
        return
    statistic = float(((counts - draws / upper) ** 2).sum() / (draws / upper))
    # Pearson χ² with upper - 1 degrees of freedom: false alarm 1e-6.
    assert statistic <= stats.chi2.isf(FALSE_ALARM, upper - 1)


def test_uniform53_range_and_threshold_bernoulli():
    values = [SYSTEM.uniform53() for _ in range(20000)]
    assert min(values) >= 0 and max(values) < 1 << 53
    # Top bit set half the time: binomial, 5.5 standard deviations (< 1e-7).
    high = sum(v >> 52 for v in values)
    assert abs(high - 10000) <= 5.5 * 70.72
    array = SYSTEM.uniform53_array(20000)
    assert array.dtype == np.uint64 and int(array.max()) < 1 << 53
    limit = threshold(0.3)
    hits = int((array < limit).sum())
    assert abs(hits - 6000) <= 5.5 * (20000 * 0.3 * 0.7) ** 0.5


def test_randbelow_rejects_bad_bounds():
    from deniable.errors import InvalidParameter

    for upper in (0, -1):
        with pytest.raises(InvalidParameter):
            SYSTEM.randbelow(upper)
