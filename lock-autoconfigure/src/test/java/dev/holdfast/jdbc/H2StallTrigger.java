package dev.holdfast.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

import org.h2.api.Trigger;

/**
 * An H2 trigger for the tests: an insert whose owner token starts with {@code stall:} first
 * updates the row of {@code holdfast_gate}, so it waits while a transaction holds that row.
 */
public class H2StallTrigger implements Trigger {

	@Override
	public void fire(Connection connection, Object[] oldRow, Object[] newRow) throws SQLException {
		if (newRow[1] instanceof String owner && owner.startsWith("stall:")) {
			try (Statement statement = connection.createStatement()) {
				statement.executeUpdate("UPDATE holdfast_gate SET n = n + 1");
			}
		}
	}

}
