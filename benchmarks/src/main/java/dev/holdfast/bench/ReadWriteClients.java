package dev.holdfast.bench;

import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;

/**
 * The contenders of issue 31's read-write measurements ({@code -Dbench.only=readwrite}): a read
 * hold ({@code LockMode.READ}) against the exclusive lock ({@code LockMode.WRITE}) and against the
 * floor, on Redis and PostgreSQL. {@code -read} and {@code -write} lock the thread's own key with
 * one attempt, as {@code redis-holdfast} does; {@code -read-shared} and {@code -write-shared}
 * lock one key that every thread of the client instance shares, waiting up to a minute: readers
 * hold it together, writers one after the other. {@code -shared-work} holds it for
 * {@value #WORK_NANOS} ns of work each time (parked), so that readers can overlap where writers wait.
 */
final class ReadWriteClients {

	/** Per backend: the floor, the exclusive and the read lease on own keys, then on one shared key. */
	static final List<String> CONTENDERS = List.of("redis-floor", "redis-holdfast-write", "redis-holdfast-read",
			"redis-holdfast-write-shared", "redis-holdfast-read-shared", "redis-holdfast-write-shared-work",
			"redis-holdfast-read-shared-work", "jdbc-floor", "jdbc-holdfast-write", "jdbc-holdfast-read",
			"jdbc-holdfast-write-shared", "jdbc-holdfast-read-shared", "jdbc-holdfast-write-shared-work",
			"jdbc-holdfast-read-shared-work");

	/** How long a {@code -shared-work} contender holds the lock each time: 1 ms. */
	static final long WORK_NANOS = 1_000_000;

	static final GroupTable.Spec TABLE = new GroupTable.Spec("readwrite",
			"Read lock against exclusive lock (issue 31), ops/s over all threads",
			"`-read`, `-write`: each thread takes and releases a lease of a key of its own with one attempt "
					+ "(`LockMode.READ` or `LockMode.WRITE`). `-shared`: every thread of the instance takes the same "
					+ "key, waiting for it (readers overlap, writers take turns); `-shared-work` holds it for 1 ms of "
					+ "work (parked) each time. × floor: to `<backend>-floor` "
					+ "(SET NX PX and compare-and-delete; upsert and DELETE), own keys, same run.",
			"× floor", CONTENDERS,
			Map.of("-holdfast-read", List.of("-holdfast-write"), "-holdfast-write-shared", List.of("-holdfast-write"),
					"-holdfast-read-shared", List.of("-holdfast-write-shared", "-holdfast-read"),
					"-holdfast-read-shared-work", List.of("-holdfast-write-shared-work")));

	private ReadWriteClients() {
	}

	/** Contender {@code id} of {@link #CONTENDERS} that {@link Clients} does not build itself. */
	static LockClient create(String id) throws Exception {
		HoldfastClients.Closing closing = switch (id.substring(0, id.indexOf('-'))) {
			case "redis" -> HoldfastClients.redisBackendTemplate(Clients.connectionFactory(Clients.redisPort()));
			case "jdbc" -> HoldfastJdbcClients.template(Clients.dataSource());
			default -> throw new IllegalArgumentException("Unknown contender " + id);
		};
		DefaultLockTemplate template = closing.template();
		boolean shared = id.contains("-shared");
		long work = id.endsWith("-work") ? WORK_NANOS : 0;
		LockMode mode = id.contains("-holdfast-read") ? LockMode.READ : LockMode.WRITE;
		LockOptions options = (shared ? HoldfastClients.WAIT : HoldfastClients.ONE_ATTEMPT).mode(mode);
		String sharedKey = "shared-" + id;
		return new LockClient() {

			@Override
			public void lockUnlock(String key) {
				template.executeLocked(shared ? sharedKey : key, null, options, () -> {
					if (work > 0) {
						LockSupport.parkNanos(work);
					}
					return null;
				});
			}

			@Override
			public void close() throws Exception {
				template.close();
				closing.onClose().close();
			}

		};
	}

}
