-- Operator tokens limited to some surveys, and enrolment tokens that can be revoked.
ALTER TABLE operator_tokens ADD COLUMN surveys text;             -- JSON array of survey ids; NULL: all
ALTER TABLE enrolment_tokens ADD COLUMN revoked_at timestamptz;  -- set by `token revoke --survey`
