-- Enrolment tokens (Sybil control): a survey may require one one-time token per submission.
ALTER TABLE surveys ADD COLUMN require_enrolment boolean NOT NULL DEFAULT false;

CREATE TABLE enrolment_tokens (
    token_hash   text PRIMARY KEY,           -- SHA-256 hex; the plaintext is never stored
    survey_id    text NOT NULL REFERENCES surveys (id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    spent_at     timestamptz,                -- set in the transaction that stores the batch
    batch_digest text,                       -- SHA-256 hex of the batch that spent it
    CHECK ((spent_at IS NULL) = (batch_digest IS NULL))
);

CREATE INDEX enrolment_tokens_by_survey ON enrolment_tokens (survey_id);
