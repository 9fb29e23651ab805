-- Relay noise (docs/relay-epsilon.md, "Noise added by the relay"): a relay that adds
-- dummy reports tells each batch's real count, never which blobs are dummies.
-- ``real_units`` is that count (NULL: the relay added no dummies, every blob is real).
-- ``plausible`` is computed once at intake: 1 when the batch's dummies (stored minus
-- real_units) are consistent with the survey's signed law (deniable.dummies.plausible),
-- 0 when too few or too many, NULL for a batch without dummies.  Only a plausible
-- batch is published with the dummies' central epsilon; the others with the shuffle
-- bound alone.
ALTER TABLE relay_batches ADD COLUMN real_units INTEGER;
ALTER TABLE relay_batches ADD COLUMN plausible INTEGER;
