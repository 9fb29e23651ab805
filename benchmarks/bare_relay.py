"""The relay's intake baseline in benchmarks/relay.py: a Flask app that parses a sealed
submission, decodes its units and inserts the blobs into SQLite, and nothing else (no
validation, no rate limit, no enrolment).  Served by gunicorn as ``bare_relay:bare_app()``
with ``BARE_DATABASE`` in the environment.
"""

from __future__ import annotations

import base64
import json
import os
import threading


def bare_app():
    """The intake baseline: parse the body, decode the units, insert the blobs; nothing else."""
    import sqlite3

    from flask import Flask, request

    app = Flask("bare-relay")
    local = threading.local()
    database = os.environ["BARE_DATABASE"]

    def connection() -> sqlite3.Connection:
        if getattr(local, "connection", None) is None:
            local.connection = sqlite3.connect(
                database, isolation_level=None, check_same_thread=False
            )
            local.connection.execute("PRAGMA journal_mode = WAL")
            local.connection.execute("PRAGMA synchronous = FULL")
            local.connection.execute("PRAGMA busy_timeout = 30000")
            local.connection.execute(
                "CREATE TABLE IF NOT EXISTS held (id BLOB PRIMARY KEY, "
                "survey_id TEXT, unit TEXT, sealed BLOB) WITHOUT ROWID"
            )
        return local.connection

    @app.post("/api/v1/surveys/<survey_id>/sealed")
    def sealed(survey_id: str):
        import hashlib

        body = json.loads(request.get_data())
        db = connection()
        db.execute("BEGIN IMMEDIATE")
        for unit in body["units"]:
            blob = base64.urlsafe_b64decode(unit["sealed"] + "=" * (-len(unit["sealed"]) % 4))
            db.execute(
                "INSERT INTO held VALUES (?, ?, ?, ?)",
                (hashlib.sha256(blob).digest(), survey_id, unit["unit"], blob),
            )
        db.execute("COMMIT")
        return {"held": len(body["units"])}, 202

    @app.get("/api/v1/health")
    def health():
        return {"status": "ok"}

    return app
