package dev.holdfast.autoconfigure;

import javax.sql.DataSource;

import org.springframework.boot.jdbc.init.PropertiesBasedDataSourceScriptDatabaseInitializer;

/**
 * Creates Holdfast's lock table from the schema script of the database in use, as
 * {@code holdfast.jdbc.initialize-schema} says. Define a bean of this type to replace it.
 */
public class HoldfastJdbcDataSourceScriptDatabaseInitializer
		extends PropertiesBasedDataSourceScriptDatabaseInitializer<HoldfastJdbcProperties> {

	/**
	 * An initializer of the lock table in {@code dataSource}.
	 */
	public HoldfastJdbcDataSourceScriptDatabaseInitializer(DataSource dataSource, HoldfastJdbcProperties properties) {
		super(dataSource, properties);
	}

}
