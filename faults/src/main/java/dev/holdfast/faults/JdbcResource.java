package dev.holdfast.faults;

import java.util.List;
import java.util.Map;

import com.zaxxer.hikari.HikariDataSource;
import dev.holdfast.jdbc.JdbcFencingGuard;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The resource of the JDBC runs: the two counters as rows of a table in the lock database, as an
 * application keeps its data beside its locks; database faults therefore hit the resource too.
 * The fenced counter is written through Holdfast's {@link JdbcFencingGuard} ({@code ... WHERE
 * fence IS NULL OR fence <= ?}). Its read is fenced as well, with the guard's condition: one
 * statement claims the row with the holder's token and returns its value, so that once a later
 * holder has read, an earlier one can no longer write what it read before. A guard on writes
 * alone would let a resumed holder's write land between a later holder's read and write, and
 * lose an update without any write being stale.
 */
final class JdbcResource extends SharedResource {

	/** The counters' table and rows (PostgreSQL). */
	static final String SCHEMA = """
			CREATE TABLE IF NOT EXISTS faults_counter (
				id VARCHAR(16) NOT NULL PRIMARY KEY,
				counter_value BIGINT NOT NULL,
				fence BIGINT
			);
			INSERT INTO faults_counter (id, counter_value)
				VALUES ('plain', 0), ('fenced', 0), ('tick-plain', 0), ('tick-fenced', 0)
				ON CONFLICT DO NOTHING
			""";

	private final HikariDataSource pool;

	private final JdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	private final JdbcFencingGuard guard;

	private JdbcResource(HikariDataSource pool) {
		this.pool = pool;
		this.jdbc = new JdbcTemplate(pool);
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(pool));
		this.guard = new JdbcFencingGuard(this.jdbc, "faults_counter", "id", "fence");
	}

	static JdbcResource connect(String jdbcUrl) {
		return new JdbcResource(PostgresNode.clientPool(jdbcUrl, "faults-resource", 2));
	}

	@Override
	Resource.Read read(String counter, long token, boolean guarded) {
		if (!guarded) {
			return unguarded(counter, token, false, 0);
		}
		List<Long> value = this.jdbc.queryForList(
				"UPDATE faults_counter SET fence = ? WHERE id = ? AND (fence IS NULL OR fence <= ?) RETURNING counter_value",
				Long.class, token, counter, token);
		return value.isEmpty() ? new Resource.Read("rejected", -1) : new Resource.Read("ok", value.get(0));
	}

	@Override
	String write(String counter, long token, long value, boolean guarded) {
		if (!guarded) {
			return unguarded(counter, token, true, value).result();
		}
		return this.guard.update(counter, token, Map.of("counter_value", value)) ? "ok" : "rejected";
	}

	@Override
	long value(String counter) {
		Long value = this.jdbc.queryForObject("SELECT counter_value FROM faults_counter WHERE id = ?", Long.class,
				counter);
		return (value != null) ? value : 0;
	}

	@Override
	public void close() {
		this.pool.close();
	}

	/**
	 * Reads (and writes) the row whatever the token, in one transaction; records the token as the
	 * highest seen unless a higher one was, and then reports {@code stale}.
	 */
	private Resource.Read unguarded(String counter, long token, boolean write, long value) {
		return this.transactions.execute((status) -> {
			Map<String, Object> row = this.jdbc
				.queryForMap("SELECT counter_value, fence FROM faults_counter WHERE id = ? FOR UPDATE", counter);
			long current = ((Number) row.get("counter_value")).longValue();
			Number seen = (Number) row.get("fence");
			boolean stale = seen != null && token < seen.longValue();
			this.jdbc.update("UPDATE faults_counter SET counter_value = ?, fence = ? WHERE id = ?",
					write ? value : current, stale ? seen.longValue() : token, counter);
			return new Resource.Read(stale ? "stale" : "ok", current);
		});
	}

}
