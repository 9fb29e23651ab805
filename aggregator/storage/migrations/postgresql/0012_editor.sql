-- The survey editor (docs/operations.md, "Authoring in the browser").
-- A draft is the survey definition in progress, as JSON (it may not validate yet), with
-- the settings it will be published with; ``preview_seed`` is the Ed25519 seed of the key
-- that signs its previews (never the aggregator's key) and ``preview_token`` the secret
-- in its preview's URL.  Times are Unix seconds.
CREATE TABLE editor_drafts (
    id             text PRIMARY KEY,
    document       text NOT NULL,
    preview_seed   text NOT NULL,
    preview_token  text NOT NULL,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL
);

-- One row per signed-in browser: the SHA-256 of its session cookie, the operator token it
-- signed in with (a revoked token ends the session), its CSRF token and when it expires.
CREATE TABLE editor_sessions (
    digest      text PRIMARY KEY,
    token_id    bigint NOT NULL,
    csrf        text NOT NULL,
    created_at  bigint NOT NULL,
    expires_at  bigint NOT NULL
);
