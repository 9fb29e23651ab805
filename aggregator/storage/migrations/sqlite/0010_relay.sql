-- Relayed surveys (docs/relay.md): relay credentials and forwarded batches.
-- A relay credential is stored as its SHA-256 only, with the relay URL it may
-- forward for: a batch is accepted only from the credential of the relay that
-- the survey's signed definition names.
CREATE TABLE relay_credentials (
    digest      TEXT PRIMARY KEY,             -- SHA-256 hex; the plaintext is never stored
    relay_url   TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);

-- One row per batch stored: a batch id is stored once (a resend with the same
-- sealed blobs is acknowledged again, any other content under that id is refused).
-- ``digest`` is SHA-256 over the batch's sealed blobs in sorted order, so a resend in
-- another random order is the same batch.  ``dropped`` counts blobs that did not open
-- or opened to an invalid report; they are never stored.
CREATE TABLE relay_batches (
    survey_id    TEXT NOT NULL REFERENCES surveys (id),
    batch_id     TEXT NOT NULL,
    unit         TEXT NOT NULL,
    digest       TEXT NOT NULL,
    size         INTEGER NOT NULL,
    stored       INTEGER NOT NULL,
    dropped      INTEGER NOT NULL,
    received_at  TEXT NOT NULL,
    PRIMARY KEY (survey_id, batch_id)
);
