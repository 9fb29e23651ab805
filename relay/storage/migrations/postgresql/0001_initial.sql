-- Deniable relay schema, PostgreSQL.  See relay/storage/__init__.py.
-- Nothing here holds a client address, a header or a per-report time.
CREATE TABLE relayed_surveys (
    survey_id          text PRIMARY KEY,
    aggregator_url     text NOT NULL,
    credential         text NOT NULL,   -- the relay credential this aggregator issued
    signing_key        text NOT NULL,   -- the aggregator's pinned Ed25519 key (base64)
    key_sequence       bigint,
    document           text NOT NULL,   -- the signed survey document last verified
    status             text NOT NULL CHECK (status IN ('open', 'closed')),
    min_batch          bigint NOT NULL CHECK (min_batch >= 1),
    shuffle_unit       text NOT NULL CHECK (shuffle_unit IN ('question', 'submission')),
    require_enrolment  boolean NOT NULL,
    refreshed_at       text NOT NULL,
    forwarded_batches  bigint NOT NULL DEFAULT 0,
    forwarded_reports  bigint NOT NULL DEFAULT 0,
    smallest_batch     bigint,
    discarded_reports  bigint NOT NULL DEFAULT 0
);

-- When the current window of one (survey, unit) opened: at the survey's addition,
-- then at each batch formed.  One time per unit, never one per report.
CREATE TABLE windows (
    survey_id  text NOT NULL REFERENCES relayed_surveys (survey_id) ON DELETE CASCADE,
    unit       text NOT NULL,
    opened_at  text NOT NULL,
    PRIMARY KEY (survey_id, unit)
);

-- Held sealed units.  The key is SHA-256 of (survey, unit, sealed bytes): a resend of
-- the same bytes is held once, and the table's order is unrelated to arrival order.
CREATE TABLE held (
    id         bytea PRIMARY KEY,
    survey_id  text NOT NULL,
    unit       text NOT NULL,
    sealed     bytea NOT NULL,
    batch_id   text
);
CREATE INDEX held_by_unit ON held (survey_id, unit, batch_id);

-- Batches formed and not yet acknowledged by the aggregator.
CREATE TABLE batches (
    batch_id      text PRIMARY KEY,
    survey_id     text NOT NULL,
    unit          text NOT NULL,
    size          bigint NOT NULL,
    attempts      bigint NOT NULL DEFAULT 0,
    leased_until  text,
    last_error    text
);

-- Enrolment token digests the aggregator handed over (SHA-256 hex); a spent one
-- records the digest of the submission it admitted, so that resend is admitted again.
CREATE TABLE enrolment_digests (
    survey_id  text NOT NULL REFERENCES relayed_surveys (survey_id) ON DELETE CASCADE,
    digest     text NOT NULL,
    spent_by   text,
    PRIMARY KEY (survey_id, digest)
);
