-- Submissions (issue 20): the reports of one submission (one respondent's
-- answers) share a server-assigned key, so two questions' answers can be joined
-- for a crosstab.  SQLite assigns a submission the seq of its first report
-- (storage/sqlite.py); rows stored before this migration, or sent as loose
-- reports, have none, and a survey holding any cannot be crosstabbed.
ALTER TABLE reports ADD COLUMN submission INTEGER;

-- A crosstab reads two questions' reports: this index visits only theirs (half the
-- rows of a two-question survey, far fewer in a survey of many questions).  Its
-- entries for one (survey, question) grow in seq order: appends, not scattered writes.
CREATE INDEX reports_by_question ON reports (survey_id, question_id);

-- Counting a survey's unjoinable reports reads only them.
CREATE INDEX reports_unjoinable ON reports (survey_id) WHERE submission IS NULL;

-- Folded crosstab statistics per ordered pair of questions: every submission
-- with a report of both questions and seqs up to through_seq is counted.
CREATE TABLE crosstab_statistics (
    survey_id        TEXT NOT NULL REFERENCES surveys (id),
    rows_question    TEXT NOT NULL,
    columns_question TEXT NOT NULL,
    through_seq      INTEGER NOT NULL,
    statistics       TEXT NOT NULL,          -- JSON: n, rows, columns, joint
    PRIMARY KEY (survey_id, rows_question, columns_question)
);
