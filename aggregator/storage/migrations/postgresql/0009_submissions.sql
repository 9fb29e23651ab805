-- Placeholder on the relay branch only: the crosstab branch's 0009_submissions.sql
-- replaces this file at merge (take theirs).  Migrations must be numbered 1..n.
SELECT 1;
