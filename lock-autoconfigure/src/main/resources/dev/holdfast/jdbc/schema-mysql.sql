-- Holdfast lock table for MySQL. Times are microseconds since the Unix epoch on the database clock.
CREATE TABLE IF NOT EXISTS holdfast_lock (
	lock_key VARCHAR(255) NOT NULL PRIMARY KEY,
	owner_token VARCHAR(255) NOT NULL,
	fence BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	acquired_at BIGINT NOT NULL,
	holder VARCHAR(255) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
