-- Relay noise (the survey's signed relay.noise; relay/noise.py, docs/relay.md).
-- The aggregator's encryption public keys this relay verified, by key id: a noised batch's
-- dummies are sealed to the key its real units were sealed to (a batch holds one key's).
CREATE TABLE encryption_public (
    survey_id   TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    public_key  bytea NOT NULL,
    PRIMARY KEY (survey_id, key_id)
);

-- Dummy sealed units, drawn and sealed once when their batch is formed (in the same
-- transaction), so a resend after a crash carries exactly the same blobs.  Deleted with
-- their batch.  The key is SHA-256 of (survey, unit, sealed bytes), as in held.
CREATE TABLE dummies (
    id         bytea PRIMARY KEY,
    survey_id  TEXT NOT NULL,
    batch_id   TEXT NOT NULL,
    sealed     bytea NOT NULL
);
CREATE INDEX dummies_by_batch ON dummies (batch_id);

-- How many of a batch's blobs are respondents' units when it carries dummies; NULL when
-- it carries none (every blob is real, and the batch is sent without real_units).
ALTER TABLE batches ADD COLUMN real_units INTEGER;
