-- Ingest writes one pending row per stored batch instead of one per report: a
-- batch of 1,000 reports made 1,000 heap and 2,000 index inserts into pending,
-- about a fifth of the database's work per batch.  ``seqs`` names the batch's
-- reports (identity values commit out of order, so a fold still cannot use a
-- seq watermark); ``first_seq`` is the smallest, which bounds a survey's backlog.
CREATE TABLE pending_batches (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    survey_id text NOT NULL,
    first_seq bigint NOT NULL,
    seqs      bigint[] NOT NULL
);
CREATE INDEX pending_batches_by_survey ON pending_batches (survey_id, id);

INSERT INTO pending_batches (survey_id, first_seq, seqs)
    SELECT survey_id, MIN(seq), array_agg(seq ORDER BY seq) FROM pending GROUP BY survey_id;
DROP TABLE pending;

-- The report id leads the unique key: random UUIDs almost never share a prefix,
-- so each index descent compares 16 bytes instead of the survey id's text first.
ALTER TABLE reports ADD CONSTRAINT reports_report_id_survey_id_key UNIQUE (report_id, survey_id);
ALTER TABLE reports DROP CONSTRAINT reports_survey_id_report_id_key;

COMMENT ON TABLE reports IS
    'append-only; (report_id, survey_id) is unique; seq orders the log; survey_id names a row of surveys locked FOR SHARE by the inserting transaction';
