package dev.holdfast.bench;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.redis.RedisLockBackend;

/**
 * Many held leases on one Redis: how many round trips renewal costs per tick, and how much client
 * heap each held lease takes. Leases live 3 s and renew every 1 s (Holdfast: a third of the lease
 * time; Redisson: watchdog timeout 3 s, renewed every third of it). Round trips are read from the
 * server ({@code INFO commandstats} after {@code CONFIG RESETSTAT}): top-level commands, that is,
 * scripts plus plain commands, without the commands that scripts call inside the server. Heap is
 * measured after full GCs, before and after acquiring, with the leases (and the client's lock
 * objects) kept reachable.
 */
final class HeldLeasesHarness {

	static final Duration LEASE = Duration.ofSeconds(3);

	record Result(String contender, int leases, double acquireSeconds, double roundTripsPerTick,
			double innerCommandsPerTick, double bytesPerLease, String error) {
	}

	private HeldLeasesHarness() {
	}

	static Result holdfast(int port, int count, Duration window) {
		LettuceConnectionFactory factory = Clients.connectionFactory(port);
		RedisLockBackend backend = new RedisLockBackend(factory);
		DefaultLockTemplate template = HoldfastClients.template(backend);
		List<Lease> leases = new ArrayList<>(count);
		try {
			template.acquire("warm", null, LockOptions.defaults()).close();
			long before = usedHeap();
			long start = System.nanoTime();
			LockOptions options = LockOptions.defaults().leaseTime(LEASE).waitTime(Duration.ZERO);
			for (int i = 0; i < count; i++) {
				leases.add(template.acquire("held-" + i, null, options));
			}
			double acquireSeconds = (System.nanoTime() - start) / 1e9;
			long after = usedHeap();
			return measure("redis-holdfast", port, count, acquireSeconds, window, (after - before) / (double) count);
		}
		catch (Throwable ex) {
			return new Result("redis-holdfast", count, 0, Double.NaN, Double.NaN, Double.NaN, String.valueOf(ex));
		}
		finally {
			leases.forEach(Lease::close);
			template.close();
			backend.close();
			factory.destroy();
		}
	}

	static Result redisson(int port, int count, Duration window) {
		Config config = new Config();
		config.setLockWatchdogTimeout(LEASE.toMillis());
		config.useSingleServer().setAddress("redis://127.0.0.1:" + port);
		RedissonClient redisson = Redisson.create(config);
		List<RLock> locks = new ArrayList<>(count);
		try {
			RLock warm = redisson.getLock("warm");
			warm.lock();
			warm.unlock();
			long before = usedHeap();
			long start = System.nanoTime();
			for (int i = 0; i < count; i++) {
				RLock lock = redisson.getLock("held-" + i);
				lock.lock();
				locks.add(lock);
			}
			double acquireSeconds = (System.nanoTime() - start) / 1e9;
			long after = usedHeap();
			return measure("redis-redisson", port, count, acquireSeconds, window, (after - before) / (double) count);
		}
		catch (Throwable ex) {
			return new Result("redis-redisson", count, 0, Double.NaN, Double.NaN, Double.NaN, String.valueOf(ex));
		}
		finally {
			for (RLock lock : locks) {
				try {
					lock.forceUnlock();
				}
				catch (RuntimeException ex) {
					// ignore at shutdown
				}
			}
			redisson.shutdown();
		}
	}

	private static Result measure(String contender, int port, int count, double acquireSeconds, Duration window,
			double bytesPerLease) throws InterruptedException {
		RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", port));
		try (StatefulRedisConnection<String, String> connection = client.connect()) {
			connection.sync().configResetstat();
			Thread.sleep(window.toMillis());
			Map<String, Long> calls = commandCalls(connection.sync().info("commandstats"));
			double ticks = window.toNanos() / (double) (LEASE.toNanos() / 3);
			long topLevel = 0;
			long inner = 0;
			for (Map.Entry<String, Long> entry : calls.entrySet()) {
				String command = entry.getKey();
				if (command.startsWith("eval") || command.startsWith("fcall")) {
					topLevel += entry.getValue();
				}
				else if (!command.equals("info") && !command.equals("config|resetstat")) {
					// Inside scripts or on their own: Redis does not tell which; both sides' renewals are scripts.
					inner += entry.getValue();
				}
			}
			return new Result(contender, count, acquireSeconds, topLevel / ticks, inner / ticks, bytesPerLease, null);
		}
		finally {
			client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
		}
	}

	/** {@code cmdstat_evalsha:calls=3,...} lines to call counts by command. */
	static Map<String, Long> commandCalls(String info) {
		Map<String, Long> calls = new HashMap<>();
		for (String line : info.split("\r?\n")) {
			if (line.startsWith("cmdstat_")) {
				String command = line.substring("cmdstat_".length(), line.indexOf(':'));
				int from = line.indexOf("calls=") + "calls=".length();
				int to = line.indexOf(',', from);
				calls.put(command, Long.parseLong(line.substring(from, to)));
			}
		}
		return calls;
	}

	static long usedHeap() throws InterruptedException {
		for (int i = 0; i < 3; i++) {
			System.gc();
			Thread.sleep(100);
		}
		return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
	}

}
