-- pending holds only what a fold needs to find its reports: the payload and the
-- question are read from reports (joined on seq) at fold time, so ingest writes
-- each payload once.
ALTER TABLE pending DROP COLUMN payload, DROP COLUMN question_id;
