-- Deniable aggregator schema, SQLite.  See aggregator/storage/base.py.
CREATE TABLE surveys (
    id             TEXT PRIMARY KEY,
    definition     TEXT NOT NULL,            -- resolved, canonical JSON
    results_public INTEGER NOT NULL CHECK (results_public IN (0, 1)),
    status         TEXT NOT NULL CHECK (status IN ('open', 'closed')),
    created_at     TEXT NOT NULL,
    closed_at      TEXT
);

CREATE TABLE question_statistics (
    survey_id   TEXT NOT NULL REFERENCES surveys (id),
    question_id TEXT NOT NULL,
    position    INTEGER NOT NULL,
    n           INTEGER NOT NULL DEFAULT 0,
    statistics  TEXT NOT NULL,               -- JSON array of int64
    PRIMARY KEY (survey_id, question_id)
);

CREATE TABLE reports (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    survey_id   TEXT NOT NULL REFERENCES surveys (id),
    report_id   TEXT NOT NULL,               -- canonical lowercase UUID
    question_id TEXT NOT NULL,
    payload     TEXT NOT NULL,
    digest      TEXT NOT NULL,               -- SHA-256 hex of the canonical report
    received_at TEXT NOT NULL,
    UNIQUE (survey_id, report_id)
);

CREATE TRIGGER reports_no_update BEFORE UPDATE ON reports
BEGIN
    SELECT RAISE(ABORT, 'reports are append-only');
END;

CREATE TRIGGER reports_no_delete BEFORE DELETE ON reports
BEGIN
    SELECT RAISE(ABORT, 'reports are append-only');
END;

CREATE TABLE pending (
    seq         INTEGER PRIMARY KEY REFERENCES reports (seq),
    survey_id   TEXT NOT NULL,
    question_id TEXT NOT NULL,
    payload     TEXT NOT NULL
);

CREATE INDEX pending_by_survey ON pending (survey_id, seq);

CREATE TABLE operator_tokens (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    token_hash TEXT NOT NULL UNIQUE,         -- SHA-256 hex; the plaintext is never stored
    label      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
