package dev.holdfast.faults;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import com.zaxxer.hikari.HikariDataSource;
import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.jdbc.JdbcLockBackend;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.redlock.RedlockLockBackend;
import dev.holdfast.redlock.RedlockSettings;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.zookeeper.ZooKeeperLockBackend;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * One client of a fault run, started as its own JVM by {@link Cluster}. It uses Holdfast through
 * its public API ({@link DefaultLockTemplate} over a backend) and loops until its deadline:
 * acquire, log {@code ACQ}, read-sleep-write on two counters of the {@link Resource} (one plain,
 * one behind the fencing guard), log {@code REL}, release. Every line starts with
 * {@link System#nanoTime()}, the monotonic clock that all processes on one Linux host share, and
 * is flushed at once, so that a client stopped with SIGKILL or SIGSTOP has logged everything it
 * did.
 * <p>
 * Arguments are {@code key=value}: {@code backend} ({@code redis}, {@code redlock}, {@code jdbc}
 * or {@code zookeeper}), {@code nodes} (comma-separated {@code redis://127.0.0.1:port}, the
 * database's {@code jdbc:postgresql://...}, or ZooKeeper's {@code 127.0.0.1:port,...}), {@code resource} ({@code redis://...} or {@code jdbc:...} of
 * the resource), {@code lock}, {@code ttlMs}, {@code workMs}, {@code durationMs} (hard limit),
 * {@code stopFile} (stops the loop once it exists), {@code log}.
 */
public final class FaultClient {

	private FaultClient() {
	}

	public static void main(String[] args) throws Exception {
		Map<String, String> arguments = parse(args);
		String backendType = arguments.get("backend");
		List<String> nodes = Arrays.asList(arguments.get("nodes").split(","));
		Duration ttl = Duration.ofMillis(Long.parseLong(arguments.get("ttlMs")));
		long workMs = Long.parseLong(arguments.get("workMs"));
		long deadline = System.nanoTime() + Duration.ofMillis(Long.parseLong(arguments.get("durationMs"))).toNanos();
		String lock = arguments.get("lock");
		Path stopFile = Path.of(arguments.get("stopFile"));
		long pid = ProcessHandle.current().pid();
		try (PrintWriter log = new PrintWriter(Files.newBufferedWriter(Path.of(arguments.get("log")),
				StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND));
				SharedResource resource = SharedResource.connect(arguments.get("resource"))) {
			Events events = new Events(log, pid);
			Backend backend = backend(backendType, nodes);
			try (DefaultLockTemplate template = new DefaultLockTemplate(backend.backend(),
					LockSettings.defaults().withPollInterval(Duration.ofMillis(50)))) {
				events.log("START " + backendType);
				LockOptions options = LockOptions.defaults().waitTime(Duration.ofSeconds(2)).leaseTime(ttl);
				while (System.nanoTime() < deadline && !Files.exists(stopFile)) {
					runOnce(template, lock, options, resource, workMs, events);
					Thread.sleep(ThreadLocalRandom.current().nextLong(1, 10));
				}
				events.log("STOP");
			}
			finally {
				backend.close();
			}
		}
		// Lettuce and Redisson leave non-daemon threads behind; the log is closed, so leave now.
		System.exit(0);
	}

	private static void runOnce(DefaultLockTemplate template, String lock, LockOptions options,
			SharedResource resource, long workMs, Events events) throws InterruptedException {
		Lease lease;
		try {
			lease = template.acquire(lock, null, options);
		}
		catch (LockNotAcquiredException ex) {
			events.log("TIMEOUT");
			return;
		}
		catch (LockBackendException ex) {
			events.log("ERR " + oneLine(ex));
			Thread.sleep(50);
			return;
		}
		try {
			long token = lease.fencingToken();
			events.log("ACQ " + token);
			Resource.Read plain = resource.read(Resource.PLAIN, token, false);
			Resource.Read fenced = resource.read(Resource.FENCED, token, true);
			Thread.sleep(workMs);
			String plainResult = resource.write(Resource.PLAIN, token, plain.value() + 1, false);
			events.log("WR plain " + token + " " + (plain.value() + 1) + " " + plainResult);
			if (fenced.accepted()) {
				String fencedResult = resource.write(Resource.FENCED, token, fenced.value() + 1, true);
				events.log("WR fenced " + token + " " + (fenced.value() + 1) + " " + fencedResult);
			}
			else {
				events.log("WR fenced " + token + " - rejected");
			}
			// Logged before the release is sent: the interval [ACQ, REL] lies inside the time the
			// backend counted this client as the holder, so an overlap of two intervals is real.
			events.log("REL " + token + " " + (lease.isValid() ? "valid" : "lost"));
		}
		catch (RuntimeException ex) {
			// Logged before the lease is closed (the release sent, in finally), as REL
			// is: the catch of a try-with-resources ran after close(), and with a handoff
			// faster than the logging the next holder's ACQ came before this ERR (a 0.6 ms
			// "overlap" in jdbc-client-connections-killed that was the log's order, not the lock's).
			events.log("ERR " + oneLine(ex));
		}
		finally {
			lease.close();
		}
	}

	private static String oneLine(Throwable ex) {
		String message = ex.getClass().getSimpleName() + ": " + ex.getMessage();
		Throwable cause = NestedExceptionUtils.getMostSpecificCause(ex);
		if (cause != ex) {
			message += " <- " + cause.getClass().getSimpleName() + ": " + cause.getMessage();
		}
		return message.replace('\n', ' ').replace('\r', ' ');
	}

	/** The backend of {@code type} on {@code nodes}, as the auto-configuration builds it, with the suite's timeouts. */
	static Backend backend(String type, List<String> nodes) {
		switch (type) {
			case "redis": {
				java.net.URI uri = java.net.URI.create(nodes.get(0));
				ClientResources resources = ClientResources.builder()
					.reconnectDelay(Delay.constant(Duration.ofMillis(50)))
					.build();
				LettuceClientConfiguration configuration = LettuceClientConfiguration.builder()
					.commandTimeout(Duration.ofMillis(500))
					.clientResources(resources)
					.clientOptions(ClientOptions.builder().autoReconnect(true).build())
					.build();
				LettuceConnectionFactory factory = new LettuceConnectionFactory(
						new RedisStandaloneConfiguration(uri.getHost(), uri.getPort()), configuration);
				factory.afterPropertiesSet();
				factory.start();
				// As the auto-configuration builds it.
				RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
				return new Backend(backend, () -> {
					backend.close();
					factory.destroy();
					resources.shutdown();
				});
			}
			case "redlock": {
				RedlockLockBackend backend = RedlockLockBackend.connect(nodes, null, null, Duration.ofMillis(500),
						RedlockSettings.defaults());
				return new Backend(backend, backend::close);
			}
			case "jdbc": {
				// As the auto-configuration builds it: the application's pool, then the table check.
				HikariDataSource pool = PostgresNode.clientPool(nodes.get(0), "faults-locks", 4);
				JdbcLockBackend backend = new JdbcLockBackend(pool, JdbcLockBackend.DEFAULT_TABLE_NAME,
						Duration.ofSeconds(1));
				// Explicit, as the auto-configuration's holdfast.jdbc.fair-handoff (and the default).
				backend.setFairHandoff(true);
				backend.checkTable();
				return new Backend(backend, pool::close);
			}
			case "zookeeper": {
				// Sessions of 3 s: a client cut off or stopped longer than that loses its session.
				CuratorFramework client = CuratorFrameworkFactory.builder()
					.connectString(String.join(",", nodes))
					.sessionTimeoutMs(3000)
					.connectionTimeoutMs(1000)
					.retryPolicy(new ExponentialBackoffRetry(50, 2, 200))
					.build();
				client.start();
				ZooKeeperLockBackend backend = ZooKeeperLockBackend.owning(client, "/holdfast");
				return new Backend(backend, backend::close);
			}
			default:
				throw new IllegalArgumentException("Unknown backend " + type);
		}
	}

	static Map<String, String> parse(String[] args) {
		Map<String, String> map = new HashMap<>();
		for (String arg : args) {
			int eq = arg.indexOf('=');
			map.put(arg.substring(0, eq), arg.substring(eq + 1));
		}
		return map;
	}

	record Backend(LockBackend backend, Runnable closer) {

		void close() {
			try {
				this.closer.run();
			}
			catch (RuntimeException ex) {
				// Shutting down after the run: nothing left to protect.
			}
		}

	}

	/** Appends one flushed line per event, stamped with {@link System#nanoTime()}. */
	static final class Events {

		private final PrintWriter out;

		private final long pid;

		Events(PrintWriter out, long pid) {
			this.out = out;
			this.pid = pid;
		}

		synchronized void log(String event) {
			log(System.nanoTime(), event);
		}

		/** Appends {@code event} with a stamp taken by the caller (e.g. before a check it reports). */
		synchronized void log(long nanos, String event) {
			this.out.println(nanos + " " + this.pid + " " + event);
			this.out.flush();
		}

	}

}
