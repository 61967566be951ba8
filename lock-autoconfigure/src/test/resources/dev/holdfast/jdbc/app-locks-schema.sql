-- A lock table under another name, for the tests.
CREATE TABLE IF NOT EXISTS app_locks (
	lock_key VARCHAR(255) NOT NULL PRIMARY KEY,
	owner_token VARCHAR(255) NOT NULL,
	fence BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	acquired_at BIGINT NOT NULL,
	holder VARCHAR(255) NOT NULL
);
