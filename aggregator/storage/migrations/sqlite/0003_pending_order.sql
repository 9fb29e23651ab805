-- SQLite has indexed pending by (survey_id, seq) since 0001; this version keeps the
-- two backends' schema versions in step with PostgreSQL's 0003.
CREATE INDEX IF NOT EXISTS pending_by_survey ON pending (survey_id, seq);
