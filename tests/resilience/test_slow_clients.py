"""Slow clients (slowloris) against the real server: they hold sockets, never the app.

Regression: ``serve`` ran gunicorn's sync workers, so W connections
that trickled their headers or body held all W workers until the 60 s worker
timeout and ``/health`` took 60.7 s.  Here 100 such connections stay open (half
stop inside the headers, half announce a body and trickle it a byte every 5 s)
while ``/health`` and honest single submissions must each be answered within a
5 s client timeout; the latencies are printed (benchmarks/ingest.py prints the
slow-client row with p50/p99 and the honest rate against the unloaded one).
"""

from __future__ import annotations

import socket
import threading
import time

import requests

from .conftest import HOST, demo_survey_dict, random_reports

SLOW_CONNECTIONS = 100
TRICKLE_SECONDS = 5.0
PATIENCE = 5.0  # the client timeout each honest request must beat (the old failure: 60 s)


class SlowClients:
    """``count`` connections: half stalled inside the headers, half trickling a body."""

    def __init__(self, port: int, count: int, path: str) -> None:
        self.sockets: list[socket.socket] = []
        self.stop = threading.Event()
        for index in range(count):
            connection = socket.create_connection((HOST, port), timeout=10)
            if index % 2:
                connection.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\n".encode())
            else:
                connection.sendall(
                    f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    "application/json\r\nContent-Length: 100000\r\n\r\n{".encode()
                )
            self.sockets.append(connection)
        self.thread = threading.Thread(target=self._trickle, daemon=True)
        self.thread.start()

    def _trickle(self) -> None:
        while not self.stop.wait(TRICKLE_SECONDS):
            for index, connection in enumerate(self.sockets):
                try:
                    connection.sendall(b"X" if index % 2 else b" ")
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for connection in self.sockets:
            connection.close()


def test_slow_connections_hold_no_worker(make_server, tmp_path):
    definition = demo_survey_dict("slow")
    server = make_server(str(tmp_path / "slow.sqlite3"), [definition], workers=2)
    url = f"{server.url}/api/v1/surveys/slow/reports"
    slow = SlowClients(server.port, SLOW_CONNECTIONS, "/api/v1/surveys/slow/reports")
    health, posts = [], []
    try:
        time.sleep(1.0)  # every slow connection accepted and parked
        with requests.Session() as session:
            for report in random_reports(definition, 40, seed=5):
                started = time.perf_counter()
                response = session.get(f"{server.url}/api/v1/health", timeout=PATIENCE)
                health.append(time.perf_counter() - started)
                assert response.status_code == 200
                started = time.perf_counter()
                response = session.post(url, json=report, timeout=PATIENCE)
                posts.append(time.perf_counter() - started)
                assert response.status_code == 201, response.text
                time.sleep(0.1)  # ~6 s in all: each trickling connection sends a byte or two
        # The slow connections are still open: none was answered, none was dropped early.
        alive = 0
        for connection in slow.sockets:
            connection.setblocking(False)
            try:
                alive += connection.recv(1) == b""  # b"": closed by the server
            except BlockingIOError:
                alive += 0
        assert alive == 0, f"{alive} slow connections were closed while still sending"
    finally:
        slow.close()
    health.sort()
    posts.sort()
    print(
        f"\n/health with {SLOW_CONNECTIONS} slow connections: p50 "
        f"{1000 * health[len(health) // 2]:.1f} ms, max {1000 * health[-1]:.1f} ms; "
        f"single POST p50 {1000 * posts[len(posts) // 2]:.1f} ms"
    )
    assert len(server.export("slow")) == 40
    assert server.worker_pids(), "the workers are still serving"
