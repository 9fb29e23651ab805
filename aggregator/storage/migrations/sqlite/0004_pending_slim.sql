-- pending holds only what a fold needs to find its reports: the payload and the
-- question are read from reports (joined on seq) at fold time, so ingest writes
-- each payload once.
CREATE TABLE pending_slim (
    seq       INTEGER PRIMARY KEY REFERENCES reports (seq),
    survey_id TEXT NOT NULL
);

INSERT INTO pending_slim (seq, survey_id) SELECT seq, survey_id FROM pending;

DROP TABLE pending;

ALTER TABLE pending_slim RENAME TO pending;

CREATE INDEX pending_by_survey ON pending (survey_id, seq);
