-- SQLite replaces its pending table with a watermark per survey.  One writer at
-- a time appends reports in seq order and folds take the oldest first, so a
-- survey's unfolded reports are exactly its reports after surveys.folded_through;
-- one pending row per report was an insert at ingest and a delete at fold, about
-- a tenth of the work of a batch.  (PostgreSQL's 0008 keeps pending reports per
-- batch instead: its identity values commit out of order.)
ALTER TABLE surveys ADD COLUMN folded_through INTEGER NOT NULL DEFAULT 0;

UPDATE surveys SET folded_through = COALESCE(
    (SELECT MIN(seq) - 1 FROM pending WHERE pending.survey_id = surveys.id),
    (SELECT MAX(seq) FROM reports),
    0
);

DROP TABLE pending;
