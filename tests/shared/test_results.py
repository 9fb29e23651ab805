"""The privacy figures a relayed question publishes (deniable.results.privacy_figures)."""

from __future__ import annotations

import pytest

from deniable.dummies import calibrate, epsilon_for
from deniable.results import privacy_figures
from deniable.shuffle import central_epsilon
from deniable.survey_relay import RelayNoise

LAW = calibrate(1.0, 1e-6).law
NOISE = RelayNoise(epsilon=1.0, delta=1e-6, law=LAW)


def test_without_noise_two_figures_and_the_shuffle_bound() -> None:
    figures = privacy_figures(local_epsilon=4.0, delta=1e-6, smallest_batch=10_000)
    assert [f["name"] for f in figures["figures"]] == ["local", "shuffle"]
    assert figures["central_epsilon"] == central_epsilon(4.0, 10_000, 1e-6)
    assert "noised_epsilon" not in figures


def test_every_batch_plausible_gives_the_better_of_the_two_bounds() -> None:
    figures = privacy_figures(
        local_epsilon=8.0,
        delta=1e-6,
        smallest_batch=100,
        noise=NOISE,
        batches=3,
        plausible_batches=3,
        noised_batches=3,
        smallest_plausible=100,
    )
    assert figures["noised_epsilon"] == pytest.approx(epsilon_for(LAW, 1e-6))
    assert figures["central_epsilon"] == figures["noised_epsilon"] <= 1.0
    assert figures["shuffle_epsilon"] == pytest.approx(8.0, rel=1e-6)  # 100 people at ε0 = 8
    words = [f["words"] for f in figures["figures"]]
    assert "even if the relay colludes" in words[0]
    assert "does not collude" in words[1] and "does not collude" in words[2]
    assert "noise_note" not in figures


def test_a_shuffle_only_batch_sets_the_figure_and_is_said() -> None:
    figures = privacy_figures(
        local_epsilon=2.0,
        delta=1e-6,
        smallest_batch=500,
        noise=NOISE,
        batches=4,
        plausible_batches=2,
        noised_batches=3,
        smallest_plausible=800,
        smallest_shuffle_only=500,
    )
    assert figures["noised_epsilon"] == max(
        min(epsilon_for(LAW, 1e-6), central_epsilon(2.0, 800, 1e-6)),
        central_epsilon(2.0, 500, 1e-6),
    )
    assert figures["noise_note"] == (
        "2 of 4 batches were published with the shuffle bound only (1 without dummies, "
        "1 whose dummies were not plausible)."
    )


def test_no_plausible_batch_falls_back_to_the_shuffle_bound() -> None:
    figures = privacy_figures(
        local_epsilon=2.0,
        delta=1e-6,
        smallest_batch=50,
        noise=NOISE,
        batches=1,
        noised_batches=1,
        smallest_shuffle_only=50,
    )
    assert figures["noised_epsilon"] == figures["shuffle_epsilon"]
