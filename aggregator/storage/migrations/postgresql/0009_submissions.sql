-- Submissions (issue 20): the reports of one submission (one respondent's
-- answers) share a server-assigned key from submission_keys, so two questions'
-- answers can be joined for a crosstab.  Rows stored before this migration, or
-- sent as loose reports, have none, and a survey holding any cannot be
-- crosstabbed.
CREATE SEQUENCE submission_keys AS bigint;

ALTER TABLE reports ADD COLUMN submission bigint;

CREATE INDEX reports_unjoinable ON reports (survey_id) WHERE submission IS NULL;

-- Folded crosstab statistics per ordered pair of questions: every submission
-- with a report of both questions and seqs up to through_seq is counted.
CREATE TABLE crosstab_statistics (
    survey_id        text NOT NULL REFERENCES surveys (id),
    rows_question    text NOT NULL,
    columns_question text NOT NULL,
    through_seq      bigint NOT NULL,
    statistics       text NOT NULL,
    PRIMARY KEY (survey_id, rows_question, columns_question)
);
