-- Enrolment tokens (Sybil control): a survey may require one one-time token per submission.
ALTER TABLE surveys ADD COLUMN require_enrolment INTEGER NOT NULL DEFAULT 0
    CHECK (require_enrolment IN (0, 1));

CREATE TABLE enrolment_tokens (
    token_hash   TEXT PRIMARY KEY,           -- SHA-256 hex; the plaintext is never stored
    survey_id    TEXT NOT NULL REFERENCES surveys (id),
    created_at   TEXT NOT NULL,
    spent_at     TEXT,                       -- set in the transaction that stores the batch
    batch_digest TEXT,                       -- SHA-256 hex of the batch that spent it
    CHECK ((spent_at IS NULL) = (batch_digest IS NULL))
);

CREATE INDEX enrolment_tokens_by_survey ON enrolment_tokens (survey_id);
