package dev.holdfast.jdbc;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.util.Assert;

/**
 * The resource side of fencing: makes an SQL write to a row conditional on the writer's fencing
 * token, so that a holder whose lease was lost (a long GC pause, a network partition) cannot
 * overwrite the work of a later holder.
 * <p>
 * The guarded table keeps, per row, the highest fencing token that wrote to it. A write runs
 * <pre class="code">
 * UPDATE account SET balance = ?, fence = :token WHERE id = ? AND (fence IS NULL OR fence &lt;= :token)
 * </pre>
 * and is accepted only if no higher token has written the row before. Equal tokens are accepted,
 * so one holder may write several times under one lease. The write joins the caller's
 * transaction, as any {@link JdbcOperations} call does.
 * <pre class="code">
 * JdbcFencingGuard guard = new JdbcFencingGuard(jdbcTemplate, "account", "id", "fence");
 * boolean accepted = guard.update(accountId, lease.fencingToken(), Map.of("balance", newBalance));
 * </pre>
 */
public final class JdbcFencingGuard {

	private static final Pattern PLAIN = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

	private static final Pattern QUALIFIED = Pattern
		.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

	private final JdbcOperations jdbc;

	private final String table;

	private final String idColumn;

	private final String fenceColumn;

	/**
	 * A guard for writes to {@code table}.
	 * @param jdbc runs the writes
	 * @param table the guarded table, an SQL identifier optionally qualified by a schema
	 * @param idColumn the column that identifies a row
	 * @param fenceColumn a {@code BIGINT} column that holds the highest token that wrote the row
	 * @throws IllegalArgumentException if a name is not a plain SQL identifier
	 */
	public JdbcFencingGuard(JdbcOperations jdbc, String table, String idColumn, String fenceColumn) {
		Assert.notNull(jdbc, "'jdbc' must not be null");
		this.jdbc = jdbc;
		this.table = identifier(table, "Table", QUALIFIED);
		this.idColumn = column(idColumn);
		this.fenceColumn = column(fenceColumn);
	}

	/**
	 * Sets {@code values} (column name to value) and the fence column on the row {@code id},
	 * unless a higher token wrote it before.
	 * @return whether the write was accepted; {@code false} when a later holder wrote the row or
	 * when no row has that id
	 */
	public boolean update(Object id, long fencingToken, Map<String, ?> values) {
		Assert.notNull(id, "'id' must not be null");
		StringBuilder sql = new StringBuilder("UPDATE ").append(this.table).append(" SET ");
		List<Object> args = new ArrayList<>();
		for (Map.Entry<String, ?> value : values.entrySet()) {
			sql.append(column(value.getKey())).append(" = ?, ");
			args.add(value.getValue());
		}
		sql.append(this.fenceColumn)
			.append(" = ? WHERE ")
			.append(this.idColumn)
			.append(" = ? AND (")
			.append(this.fenceColumn)
			.append(" IS NULL OR ")
			.append(this.fenceColumn)
			.append(" <= ?)");
		args.add(fencingToken);
		args.add(id);
		args.add(fencingToken);
		return this.jdbc.update(sql.toString(), args.toArray()) > 0;
	}

	private static String column(String name) {
		return identifier(name, "Column", PLAIN);
	}

	private static String identifier(String name, String what, Pattern pattern) {
		if (name == null || !pattern.matcher(name).matches()) {
			throw new IllegalArgumentException(what + " name '" + name + "' is not a plain SQL identifier: use letters,"
					+ " digits and underscores, not starting with a digit" + ((pattern == QUALIFIED)
							? ", optionally qualified by a schema name" : ""));
		}
		return name;
	}

}
