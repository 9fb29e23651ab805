-- Issue 18: a spent enrolment token stays linked to the sealed units it admitted only until
-- they are forwarded and acknowledged (relay/storage/held.py).  ``admitted`` holds that
-- link, one row per held unit, while the unit is held (keyed by digests: no arrival order);
-- once none is left, ``enrolment_digests.spent_by`` says 'delivered' (or 'discarded': its
-- survey closed first) instead of the submission's digest.
CREATE TABLE admitted (
    survey_id  text NOT NULL,
    held_id    bytea NOT NULL,
    digest     text NOT NULL,
    PRIMARY KEY (survey_id, held_id, digest)
);
CREATE INDEX admitted_by_digest ON admitted (survey_id, digest);
-- Links from before this migration cannot be told held from forwarded: all are forgotten
-- now (a retry with such a token is answered "already delivered", which clients take as such).
UPDATE enrolment_digests SET spent_by = 'delivered' WHERE spent_by IS NOT NULL;
