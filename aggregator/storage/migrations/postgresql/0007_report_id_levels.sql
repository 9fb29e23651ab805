-- SQLite moved its report id index into two tables (0007 there): a unique index
-- over random ids rewrote a page per report at every commit.  PostgreSQL logs
-- index inserts as small WAL records, so (survey_id, report_id) stays the
-- reports table's unique key here; this migration only records that.
COMMENT ON TABLE reports IS
    'append-only; (survey_id, report_id) is unique; seq orders the log';
