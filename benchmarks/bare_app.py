"""The bare baseline of benchmarks/ingest.py: a Flask app that only inserts rows.

It parses JSON and inserts the same rows the real aggregator stores (reports
and pending), with no validation, no idempotency check and no folding, so the
benchmark's ratio real/bare measures what the aggregator does on top.  Served
by gunicorn as ``bare_app:bare_app()`` with ``BARE_DATABASE`` in the environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from typing import Any

BARE_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS bare_reports (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, survey_id TEXT NOT NULL, report_id TEXT NOT NULL,
    question_id TEXT NOT NULL, payload TEXT NOT NULL, digest TEXT NOT NULL,
    received_at TEXT NOT NULL, UNIQUE (survey_id, report_id));
CREATE TABLE IF NOT EXISTS bare_pending (
    seq INTEGER PRIMARY KEY, survey_id TEXT NOT NULL, question_id TEXT NOT NULL,
    payload TEXT NOT NULL);
"""
BARE_POSTGRES_SCHEMA = """
CREATE TABLE IF NOT EXISTS bare_reports (
    seq BIGSERIAL PRIMARY KEY, survey_id TEXT NOT NULL, report_id TEXT NOT NULL,
    question_id TEXT NOT NULL, payload TEXT NOT NULL, digest TEXT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL, UNIQUE (survey_id, report_id));
CREATE TABLE IF NOT EXISTS bare_pending (
    seq BIGINT PRIMARY KEY, survey_id TEXT NOT NULL, question_id TEXT NOT NULL,
    payload TEXT NOT NULL);
"""


def _digest(report: dict[str, Any]) -> str:
    body = json.dumps(report, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()


def bare_app():
    """A minimal Flask app: parse JSON, insert rows, nothing else (one connection per worker).

    SQLite uses the real storage's durability (WAL, synchronous=FULL), so the two
    differ only in what the aggregator does on top.
    """
    from datetime import UTC, datetime

    from flask import Flask, jsonify, request

    database = os.environ["BARE_DATABASE"]
    postgres = database.startswith("postgresql://")
    app = Flask("bare")
    local = threading.local()

    def connection():
        if getattr(local, "connection", None) is None:
            if postgres:
                import psycopg

                local.connection = psycopg.connect(database, autocommit=False)
            else:
                local.connection = sqlite3.connect(
                    database, isolation_level=None, check_same_thread=False
                )
                local.connection.execute("PRAGMA journal_mode = WAL")
                local.connection.execute("PRAGMA synchronous = FULL")
                local.connection.execute("PRAGMA busy_timeout = 30000")
        return local.connection

    def insert(survey_id: str, reports: list[dict[str, Any]]) -> None:
        now = datetime.now(UTC)
        rows = [
            (survey_id, r["id"], r["question"], r["payload"], _digest(r), now.isoformat())
            for r in reports
        ]
        db = connection()
        if postgres:
            with db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO bare_reports (survey_id, report_id, question_id, payload,"
                    " digest, received_at) VALUES (%s, %s, %s, %s, %s, %s) RETURNING seq",
                    rows,
                    returning=True,
                )
                seqs = []
                while True:
                    seqs.append(cursor.fetchone()[0])
                    if not cursor.nextset():
                        break
                cursor.executemany(
                    "INSERT INTO bare_pending VALUES (%s, %s, %s, %s)",
                    [(seq, row[0], row[2], row[3]) for seq, row in zip(seqs, rows, strict=True)],
                )
            db.commit()
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            (last,) = db.execute("SELECT COALESCE(MAX(seq), 0) FROM bare_reports").fetchone()
            db.executemany(
                "INSERT INTO bare_reports (survey_id, report_id, question_id, payload, digest,"
                " received_at) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            db.execute(
                "INSERT INTO bare_pending SELECT seq, survey_id, question_id, payload"
                " FROM bare_reports WHERE seq > ?",
                (last,),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @app.post("/api/v1/surveys/<survey_id>/reports")
    @app.post("/api/v1/surveys/<survey_id>/reports/bulk")  # the same inserts, for the bulk rows
    def reports(survey_id: str):
        body = request.get_json()
        items = body["reports"] if "reports" in body else [body]
        insert(survey_id, items)
        return jsonify(
            {"survey": survey_id, "received": len(items), "reports": [r["id"] for r in items]}
        ), 201

    @app.get("/api/v1/surveys/<survey_id>/results")
    def results(survey_id: str):
        marker = "%s" if postgres else "?"
        db = connection()
        rows = db.execute(
            f"SELECT payload, COUNT(*) FROM bare_reports WHERE survey_id = {marker}"
            " GROUP BY payload",
            (survey_id,),
        ).fetchall()
        if postgres:
            db.commit()
        return jsonify({"survey": survey_id, "n": sum(r[1] for r in rows), "distinct": len(rows)})

    @app.get("/api/v1/health")
    def health():
        return jsonify({"status": "ok"})

    return app


def setup_bare_tables(database: str) -> None:
    if database.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(database, autocommit=True) as connection:
            connection.execute(BARE_POSTGRES_SCHEMA)
        return
    connection = sqlite3.connect(database)
    connection.executescript(BARE_SQLITE_SCHEMA)
    connection.close()
