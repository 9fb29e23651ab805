-- Folds take pending rows in seq order per survey: index exactly that, so a fold
-- walks the index instead of scanning a table full of rows earlier folds deleted.
CREATE INDEX pending_by_survey_seq ON pending (survey_id, seq);
DROP INDEX pending_by_survey;
