-- Deniable aggregator schema, PostgreSQL.  See aggregator/storage/base.py.
CREATE TABLE surveys (
    id             text PRIMARY KEY,
    definition     text NOT NULL,            -- resolved, canonical JSON
    results_public boolean NOT NULL,
    status         text NOT NULL CHECK (status IN ('open', 'closed')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    closed_at      timestamptz
);

CREATE TABLE question_statistics (
    survey_id   text NOT NULL REFERENCES surveys (id),
    question_id text NOT NULL,
    position    integer NOT NULL,
    n           bigint NOT NULL DEFAULT 0,
    statistics  bigint[] NOT NULL,
    PRIMARY KEY (survey_id, question_id)
);

CREATE TABLE reports (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    survey_id   text NOT NULL REFERENCES surveys (id),
    report_id   uuid NOT NULL,
    question_id text NOT NULL,
    payload     text NOT NULL,
    digest      text NOT NULL,               -- SHA-256 hex of the canonical report
    received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (survey_id, report_id)
);

CREATE FUNCTION deniable_reports_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'reports are append-only';
END;
$$;

CREATE TRIGGER reports_append_only BEFORE UPDATE OR DELETE ON reports
    FOR EACH ROW EXECUTE FUNCTION deniable_reports_append_only();

-- No foreign key to reports: a key check would lock the report row for share.
CREATE TABLE pending (
    seq         bigint PRIMARY KEY,
    survey_id   text NOT NULL,
    question_id text NOT NULL,
    payload     text NOT NULL
);

CREATE INDEX pending_by_survey ON pending (survey_id);

CREATE TABLE operator_tokens (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash text NOT NULL UNIQUE,         -- SHA-256 hex; the plaintext is never stored
    label      text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
