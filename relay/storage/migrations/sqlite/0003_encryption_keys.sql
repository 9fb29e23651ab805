-- The aggregator's encryption key ids this relay verified in its signed key document,
-- newest first, space-separated: the current one and the few it retired since (which it
-- still opens).  A submission sealed to any other key is refused (relay/api.py).
ALTER TABLE relayed_surveys ADD COLUMN encryption_keys TEXT NOT NULL DEFAULT '';
