-- Deniable relay schema, SQLite.  See relay/storage/__init__.py.
-- Nothing here holds a client address, a header or a per-report time.
CREATE TABLE relayed_surveys (
    survey_id          TEXT PRIMARY KEY,
    aggregator_url     TEXT NOT NULL,
    credential         TEXT NOT NULL,   -- the relay credential this aggregator issued
    signing_key        TEXT NOT NULL,   -- the aggregator's pinned Ed25519 key (base64)
    key_sequence       INTEGER,
    document           TEXT NOT NULL,   -- the signed survey document last verified
    status             TEXT NOT NULL CHECK (status IN ('open', 'closed')),
    min_batch          INTEGER NOT NULL CHECK (min_batch >= 1),
    shuffle_unit       TEXT NOT NULL CHECK (shuffle_unit IN ('question', 'submission')),
    require_enrolment  INTEGER NOT NULL CHECK (require_enrolment IN (0, 1)),
    refreshed_at       TEXT NOT NULL,
    forwarded_batches  INTEGER NOT NULL DEFAULT 0,
    forwarded_reports  INTEGER NOT NULL DEFAULT 0,
    smallest_batch     INTEGER,
    discarded_reports  INTEGER NOT NULL DEFAULT 0
);

-- When the current window of one (survey, unit) opened: at the survey's addition,
-- then at each batch formed.  One time per unit, never one per report.
CREATE TABLE windows (
    survey_id  TEXT NOT NULL REFERENCES relayed_surveys (survey_id) ON DELETE CASCADE,
    unit       TEXT NOT NULL,
    opened_at  TEXT NOT NULL,
    PRIMARY KEY (survey_id, unit)
);

-- Held sealed units.  The key is SHA-256 of (survey, unit, sealed bytes): a resend of
-- the same bytes is held once, and the table's order is unrelated to arrival order.
CREATE TABLE held (
    id         BLOB PRIMARY KEY,
    survey_id  TEXT NOT NULL,
    unit       TEXT NOT NULL,
    sealed     BLOB NOT NULL,
    batch_id   TEXT
) WITHOUT ROWID;
CREATE INDEX held_by_unit ON held (survey_id, unit, batch_id);

-- Batches formed and not yet acknowledged by the aggregator.
CREATE TABLE batches (
    batch_id      TEXT PRIMARY KEY,
    survey_id     TEXT NOT NULL,
    unit          TEXT NOT NULL,
    size          INTEGER NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    leased_until  TEXT,
    last_error    TEXT
);

-- Enrolment token digests the aggregator handed over (SHA-256 hex); a spent one
-- records the digest of the submission it admitted, so that resend is admitted again.
CREATE TABLE enrolment_digests (
    survey_id  TEXT NOT NULL REFERENCES relayed_surveys (survey_id) ON DELETE CASCADE,
    digest     TEXT NOT NULL,
    spent_by   TEXT,
    PRIMARY KEY (survey_id, digest)
);
