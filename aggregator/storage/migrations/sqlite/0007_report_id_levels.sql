-- Report ids are random (UUID 4), so a unique index over them takes every
-- batch's inserts all over the file: at a million reports each commit of 1,000
-- reports rewrote about a thousand index pages.  Instead, report_ids indexes the
-- ids of reports up to report_id_merge.merged_through; the few after it are
-- looked up in reports by seq (each process keeps them in memory), and the batch
-- that takes them past RECENT_IDS_LIMIT merges them, sorted, into report_ids.
-- Ingest checks both under the write lock, so (survey_id, report_id) stays unique
-- (sqlite.py, RecentIds and _insert_reports).
CREATE TABLE reports_unindexed (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    survey_id   TEXT NOT NULL REFERENCES surveys (id),
    report_id   TEXT NOT NULL,               -- canonical lowercase UUID
    question_id TEXT NOT NULL,
    payload     TEXT NOT NULL,
    received_at TEXT NOT NULL
);

INSERT INTO reports_unindexed (seq, survey_id, report_id, question_id, payload, received_at)
    SELECT seq, survey_id, report_id, question_id, payload, received_at FROM reports ORDER BY seq;

-- pending references reports (seq): hold its rows aside while the table is swapped.
CREATE TEMP TABLE pending_saved AS SELECT seq, survey_id FROM pending;

DELETE FROM pending;

DROP TABLE reports;

ALTER TABLE reports_unindexed RENAME TO reports;

INSERT INTO pending (seq, survey_id) SELECT seq, survey_id FROM pending_saved ORDER BY seq;

DROP TABLE pending_saved;

-- (survey_id, seq) keys only ever grow within a survey: appends, not scattered writes.
CREATE INDEX reports_by_survey ON reports (survey_id);

CREATE TRIGGER reports_no_update BEFORE UPDATE ON reports
BEGIN
    SELECT RAISE(ABORT, 'reports are append-only');
END;

CREATE TRIGGER reports_no_delete BEFORE DELETE ON reports
BEGIN
    SELECT RAISE(ABORT, 'reports are append-only');
END;

CREATE TABLE report_ids (
    survey_id TEXT NOT NULL,
    report_id TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    PRIMARY KEY (survey_id, report_id)
) WITHOUT ROWID;

INSERT INTO report_ids (survey_id, report_id, seq)
    SELECT survey_id, report_id, seq FROM reports ORDER BY survey_id, report_id;

CREATE TABLE report_id_merge (
    merged_through INTEGER NOT NULL          -- report_ids holds every id with seq <= this
);

INSERT INTO report_id_merge (merged_through) SELECT COALESCE(MAX(seq), 0) FROM reports;
