/**
 * The JDBC backend: locks in a table of the application's own database, on the database's
 * clock ({@link dev.holdfast.jdbc.JdbcLockBackend}), and the resource-side fencing guard
 * ({@link dev.holdfast.jdbc.JdbcFencingGuard}).
 */
@NullMarked
package dev.holdfast.jdbc;

import org.jspecify.annotations.NullMarked;
