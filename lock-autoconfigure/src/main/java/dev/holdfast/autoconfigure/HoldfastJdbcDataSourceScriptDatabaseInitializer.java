package dev.holdfast.autoconfigure;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

import org.springframework.boot.jdbc.init.PropertiesBasedDataSourceScriptDatabaseInitializer;
import org.springframework.core.io.ByteArrayResource;
import org.springframework.core.io.Resource;

import dev.holdfast.jdbc.JdbcLockBackend;

/**
 * Creates Holdfast's lock table from the schema script of the database in use, as
 * {@code holdfast.jdbc.initialize-schema} says. With the shipped scripts and a
 * {@code holdfast.jdbc.table-name} other than {@value JdbcLockBackend#DEFAULT_TABLE_NAME}, the
 * scripts create the configured table (the name is validated as an SQL identifier first); a
 * script of the application's own ({@code holdfast.jdbc.schema}) runs as written. Define a bean
 * of this type to replace it.
 */
public class HoldfastJdbcDataSourceScriptDatabaseInitializer
		extends PropertiesBasedDataSourceScriptDatabaseInitializer<HoldfastJdbcProperties> {

	private final String tableName;

	private final boolean shippedScripts;

	/**
	 * An initializer of the lock table in {@code dataSource}.
	 */
	public HoldfastJdbcDataSourceScriptDatabaseInitializer(DataSource dataSource, HoldfastJdbcProperties properties) {
		super(dataSource, properties);
		this.tableName = JdbcLockBackend.validateTableName(properties.getTableName());
		this.shippedScripts = JdbcLockBackend.SCHEMA_LOCATION.equals(properties.getSchema());
	}

	@Override
	protected void runScripts(Scripts scripts) {
		if (!this.shippedScripts || JdbcLockBackend.DEFAULT_TABLE_NAME.equals(this.tableName)) {
			super.runScripts(scripts);
			return;
		}
		List<Resource> renamed = new ArrayList<>();
		for (Resource script : scripts) {
			try {
				String sql = script.getContentAsString(
						(scripts.getEncoding() != null) ? scripts.getEncoding() : StandardCharsets.UTF_8);
				renamed.add(new ByteArrayResource(sql.replace(JdbcLockBackend.DEFAULT_TABLE_NAME, this.tableName)
					.getBytes(StandardCharsets.UTF_8), script.getDescription()));
			}
			catch (IOException ex) {
				throw new UncheckedIOException("Could not read the lock table's schema script " + script, ex);
			}
		}
		super.runScripts(new Scripts(renamed).continueOnError(scripts.isContinueOnError())
			.separator(scripts.getSeparator())
			.encoding(StandardCharsets.UTF_8));
	}

}
