-- Holdfast lock table for PostgreSQL. Times are microseconds since the Unix epoch on the database clock.
-- Every acquisition and release updates a lock's row in place (HOT: no indexed column changes); at
-- fillfactor 25 a page is pruned once a quarter of it is used, so a key's chain of dead row
-- versions, which every statement on the key walks, stays a few versions long (docs/decisions/0027).
CREATE TABLE IF NOT EXISTS holdfast_lock (
	lock_key VARCHAR(255) NOT NULL PRIMARY KEY,
	owner_token VARCHAR(255) NOT NULL,
	fence BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	acquired_at BIGINT NOT NULL,
	holder VARCHAR(255) NOT NULL
) WITH (fillfactor = 25);
