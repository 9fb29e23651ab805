-- Operator tokens limited to some surveys, and enrolment tokens that can be revoked.
ALTER TABLE operator_tokens ADD COLUMN surveys TEXT;      -- JSON array of survey ids; NULL: all
ALTER TABLE enrolment_tokens ADD COLUMN revoked_at TEXT;  -- set by `token revoke --survey`
