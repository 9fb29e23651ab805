-- Secrets every relay process sharing this database must share: the key that turns a
-- client address into a pseudonym before the rate limiter counts it (relay/api.py), so
-- neither memory nor a shared Redis ever holds an address.
CREATE TABLE relay_secrets (
    name   text PRIMARY KEY,
    value  bytea NOT NULL
);
