package dev.holdfast.faults;

/**
 * What lock holders update: a plain counter and one behind the fencing guard, each remembering
 * the highest fencing token that read or wrote it. A guarded operation with a lower token is
 * rejected; an unguarded one is carried out and reported as {@code stale}, so that the checker
 * can count the stale writes that a resource without the guard accepts.
 */
abstract class SharedResource implements AutoCloseable {

	/** Reads {@code counter}: {@code ok}, {@code stale} (unguarded, lower token) or {@code rejected}. */
	abstract Resource.Read read(String counter, long token, boolean guarded);

	/** Writes {@code value} to {@code counter}: {@code ok}, {@code stale} or {@code rejected}. */
	abstract String write(String counter, long token, long value, boolean guarded);

	/** The counter's value, for the end of a run. */
	abstract long value(String counter);

	@Override
	public abstract void close();

	/** The resource at {@code uri}: {@code jdbc:...} is a {@link JdbcResource}, else a Redis {@link Resource}. */
	static SharedResource connect(String uri) {
		return uri.startsWith("jdbc:") ? JdbcResource.connect(uri) : Resource.connect(uri);
	}

}
