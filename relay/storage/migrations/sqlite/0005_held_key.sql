-- The aggregator's encryption key id each held unit was sealed to (as its device said).
-- A batch takes units of one key only: an aggregator that handed one device a key of
-- its own would otherwise find that device's unit as the one blob its key opens.
ALTER TABLE held ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
