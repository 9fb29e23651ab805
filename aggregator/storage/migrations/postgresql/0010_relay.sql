-- Relayed surveys (docs/relay.md): relay credentials and forwarded batches.
-- A relay credential is stored as its SHA-256 only, with the relay URL it may
-- forward for: a batch is accepted only from the credential of the relay that
-- the survey's signed definition names.
CREATE TABLE relay_credentials (
    digest      text PRIMARY KEY,             -- SHA-256 hex; the plaintext is never stored
    relay_url   text NOT NULL,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);

-- One row per batch stored: a batch id is stored once (a resend with the same
-- sealed blobs is acknowledged again, any other content under that id is refused).
-- ``digest`` is SHA-256 over the batch's sealed blobs in sorted order, so a resend in
-- another random order is the same batch.  ``dropped`` counts blobs that did not open
-- or opened to an invalid report; they are never stored.
CREATE TABLE relay_batches (
    survey_id    text NOT NULL REFERENCES surveys (id),
    batch_id     text NOT NULL,
    unit         text NOT NULL,
    digest       text NOT NULL,
    size         bigint NOT NULL,
    stored       bigint NOT NULL,
    dropped      bigint NOT NULL,
    received_at  timestamptz NOT NULL,
    PRIMARY KEY (survey_id, batch_id)
);

-- A report's time is its transaction's, as SQLite stores it: every report of one stored
-- batch (a relay's batch of many respondents) shares one time, so no row carries a time
-- of its own (clock_timestamp() gave each row of a batch its own microseconds).
ALTER TABLE reports ALTER COLUMN received_at SET DEFAULT now();
