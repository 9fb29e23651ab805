-- The aggregator's flush requests counted per survey, against the relay's FLUSH_LIMIT
-- (relay/flushing.py): each answer tells the aggregator how many units wait right then.
ALTER TABLE relayed_surveys ADD COLUMN flushes INTEGER NOT NULL DEFAULT 0;
-- The held count the aggregator may read (relay/held_count.py): respondents waiting for a
-- batch as of held_counted_at, renewed at most every HELD_COUNT_SECONDS, so the count
-- cannot time each arrival.  One number and one time per survey, never one per report.
ALTER TABLE relayed_surveys ADD COLUMN held_waiting INTEGER;
ALTER TABLE relayed_surveys ADD COLUMN held_counted_at TEXT;
