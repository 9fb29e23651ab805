"""The servers a benchmark starts on loopback: a free port, health, start and stop, the
command lines that prepare their databases (run in this process), and the CPU time their
process trees spend (Linux's /proc).  Shared by benchmarks/ingest.py, relay.py,
relay_noise.py and soak.py.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def wait_healthy(
    port: int, process: subprocess.Popen, log: Path, health: str = "/api/v1/health"
) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited early:\n{log.read_text()[-3000:]}")
        try:
            connection = http.client.HTTPConnection(HOST, port, timeout=2)
            connection.request("GET", health)
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"server on port {port} did not become healthy")


def cli(module: str, args: list[str], environment: dict[str, str]) -> str:
    """A command line's main() in this process (its own settings from ``environment``)."""
    from deniable.aggregator import cli as aggregator_cli
    from deniable.relay import cli as relay_cli

    main = {"aggregator": aggregator_cli.main, "relay": relay_cli.main}[module]
    saved, out = dict(os.environ), io.StringIO()
    try:
        os.environ.update(environment)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            status = main(args)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if status:
        raise SystemExit(f"{module} {' '.join(args)}: exit {status}")
    return out.getvalue()


def serve(
    command: list[str],
    environment: dict[str, str],
    port: int,
    log: Path,
    health: str = "/api/v1/health",
) -> subprocess.Popen:
    process = subprocess.Popen(
        command, stdout=log.open("w"), stderr=subprocess.STDOUT, env={**os.environ, **environment}
    )
    wait_healthy(port, process, log, health)
    return process


def serve_program(
    program: str, port: int, environment: dict[str, str], log: Path, *, workers: int = 2
) -> subprocess.Popen:
    """``deniable-aggregator serve`` or ``deniable-relay serve`` (``program``: "aggregator"
    or "relay", as for :func:`cli`) on HOST:``port`` with ``workers`` workers, once healthy."""
    module = {"aggregator": "deniable.aggregator.cli", "relay": "deniable.relay.cli"}[program]
    command = [sys.executable, "-m", module, "serve", "--bind", f"{HOST}:{port}"]
    return serve([*command, "--workers", str(workers)], environment, port, log)


def key_document(port: int) -> dict[str, Any]:
    """The aggregator's key document (GET /api/v1/key): its signing and encryption keys."""
    connection = http.client.HTTPConnection(HOST, port, timeout=30)
    connection.request("GET", "/api/v1/key")
    return json.loads(connection.getresponse().read())


def relay_surveys(
    aggregator_port: int,
    survey_ids: Iterable[str],
    credential_file: Path,
    key: dict[str, Any],
    relay_environment: dict[str, str],
) -> None:
    """``deniable-relay add-survey`` for each of ``survey_ids`` of the aggregator on
    ``aggregator_port``, pinned to ``key`` (its key document)."""
    for survey_id in survey_ids:
        cli(
            "relay",
            ["add-survey", f"http://{HOST}:{aggregator_port}", survey_id]
            + ["--credential-file", str(credential_file)]
            + ["--aggregator-key", key["public_key"]],
            relay_environment,
        )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def process_tree(root: int) -> dict[int, tuple[int, float, bool]]:
    """``root`` and every process under it: pid -> (parent pid, CPU seconds, whether it is a
    decryption process, i.e. a multiprocessing spawn child).  Empty without Linux's /proc."""
    ticks, table = os.sysconf("SC_CLK_TCK"), {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            # After the command name's ")": state, ppid, ... utime (14th field), stime (15th).
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            spawned = b"spawn_main" in (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        table[int(entry.name)] = (
            int(fields[1]),
            (int(fields[11]) + int(fields[12])) / ticks,
            spawned,
        )
    tree, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        if pid in table:
            tree[pid] = table[pid]
            frontier.extend(child for child, (parent, _, _) in table.items() if parent == pid)
    return tree


def warmed(tree: dict[int, tuple[int, float, bool]], root: int) -> bool:
    """Whether every serving process (a child of ``root``) has its decryption processes."""
    serving = [pid for pid, (parent, _, spawned) in tree.items() if parent == root and not spawned]
    return all(
        any(parent == pid and spawned for parent, _, spawned in tree.values()) for pid in serving
    )


def cpu_spent(before: dict, after: dict) -> tuple[float, float]:
    """CPU seconds spent between two :func:`process_tree` readings: (decryption, serving)."""
    decrypting = serving = 0.0
    for pid, (_, cpu, spawned) in after.items():
        spent = cpu - before.get(pid, (0, 0.0, False))[1]
        if spawned:
            decrypting += spent
        else:
            serving += spent
    return decrypting, serving
