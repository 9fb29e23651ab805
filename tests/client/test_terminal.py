"""The shared progress bar: counts from many threads, lines off a terminal."""

from __future__ import annotations

import io
import threading

from deniable.terminal import Progress


def test_advance_from_many_threads_loses_no_count_and_ends_at_the_total() -> None:
    # Regression: advance() read the count outside the lock, so two senders could both
    # write the same next value and the bar never reached its total (or its last line).
    threads, per_thread = 8, 2_000
    stream = io.StringIO()
    progress = Progress(threads * per_thread, "sending", stream=stream)
    barrier = threading.Barrier(threads)

    def send() -> None:
        barrier.wait()
        for _ in range(per_thread):
            progress.advance()

    workers = [threading.Thread(target=send) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert progress.done == threads * per_thread
    lines = stream.getvalue().splitlines()
    assert lines[-1].startswith("sending [" + "#" * 30 + "] 16,000/16,000")
    assert len(lines) == 4  # off a terminal: one line at each quarter


def test_no_stream_draws_nothing_but_still_counts() -> None:
    progress = Progress(3, "quiet", stream=None)
    progress.advance(2)
    progress.update(3)
    assert progress.done == 3
