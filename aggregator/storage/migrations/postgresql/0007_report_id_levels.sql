-- SQLite moved its report id index into report_ids plus memory (0007 there): a
-- unique index over random ids rewrote a page per report at every commit.
-- PostgreSQL logs index inserts as small WAL records, so (survey_id, report_id)
-- stays the reports table's unique key here.
--
-- The foreign key from reports to surveys goes: its per-row check took 5.3 ms of
-- a 22 ms insert of 1,000 reports.  Every insert runs in a transaction that has
-- locked its survey's row FOR SHARE (storage/postgres.py, _add_reports), and no
-- code path deletes a survey, so the key held nothing the lock does not.
ALTER TABLE reports DROP CONSTRAINT reports_survey_id_fkey;

COMMENT ON TABLE reports IS
    'append-only; (survey_id, report_id) is unique; seq orders the log; survey_id names a row of surveys locked FOR SHARE by the inserting transaction';
