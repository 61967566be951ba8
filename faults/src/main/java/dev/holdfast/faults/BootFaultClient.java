package dev.holdfast.faults;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockContext;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.ScheduledTick;
import dev.holdfast.SingleInstanceScheduled;

/**
 * A client of a fault run that is a Spring Boot application: Holdfast comes from the starter's
 * auto-configuration, the backend from properties (for {@code jdbc}, Spring Boot's
 * {@code DataSource} on the run's PostgreSQL, which also holds the resource; Redis and Redlock
 * clients have no {@code DataSource}), and the application uses only the annotations.
 * {@link FaultRun} starts it as its own JVM, with the classpath and the {@code key=value}
 * arguments of {@link FaultClient}, plus:
 * <ul>
 * <li>{@code ticks}: {@code holdfast} for a {@link SingleInstanceScheduled} cron job,
 * {@code unsafe} for a plain {@link Scheduled} job without Holdfast (the control: every instance
 * runs every tick), {@code off} for none;</li>
 * <li>{@code tickWorkMs}, {@code lockAtMostForMs}, {@code lockAtLeastForMs} of the job.</li>
 * </ul>
 * Two workloads run at once and log to one file, each line stamped with
 * {@link System#nanoTime()} like {@link FaultClient}'s:
 * <ul>
 * <li><b>Mutex</b>: a loop calls a {@link DistributedLock} method that logs {@code ACQ token},
 * does the read-sleep-write of {@link FaultClient} on the plain and fenced counters with
 * {@link LockContext}'s fencing token, and logs {@code WR} and {@code REL}, so that
 * {@link Checker#check(String, Path)} applies as it does to {@link FaultClient}.</li>
 * <li><b>Ticks</b>: every second (configuration {@code boot-fault-client.properties}) the job
 * logs {@code TICK <nominal fire time, epoch ms>}, reads the tick counters, sleeps
 * {@code tickWorkMs}, writes them ({@code TWR}) and logs {@code TEND <tick> ok} (or
 * {@code failed <error>}). Its token for the resource is the tick's nominal fire time, which
 * {@link ScheduledTick} gives the job: it grows from tick to tick and is the same on every
 * instance. (The job lock's own fencing token is in {@link LockContext} too; the tick keeps
 * these runs comparable with the first measurements.)</li>
 * </ul>
 * The application also logs {@code READY <ms since the JVM started>} once it is ready.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class BootFaultClient {

	/** Counter the tick job writes without the guard. */
	static final String TICK_PLAIN = "tick-plain";

	/** Counter the tick job writes through the fencing guard. */
	static final String TICK_FENCED = "tick-fenced";

	public static void main(String[] args) throws Exception {
		Map<String, String> arguments = Arrays.stream(args)
			.map((argument) -> argument.split("=", 2))
			.collect(Collectors.toMap((pair) -> pair[0], (pair) -> pair[1]));
		if ("jdbc".equals(arguments.get("backend"))) {
			// Before the lock table is checked with the pool's 2 s timeouts.
			PostgresNode.warmUp(arguments.get("nodes"));
		}
		ConfigurableApplicationContext context = new SpringApplicationBuilder(BootFaultClient.class)
			.properties("spring.config.name=boot-fault-client")
			.properties(properties(arguments))
			.run();
		FaultClient.Events events = context.getBean(FaultClient.Events.class);
		events.log("READY " + ManagementFactory.getRuntimeMXBean().getUptime());
		events.log("START boot-" + arguments.get("backend"));
		Workloads work = context.getBean(Workloads.class);
		Path stopFile = Path.of(arguments.get("stopFile"));
		long deadline = System.nanoTime() + Duration.ofMillis(Long.parseLong(arguments.get("durationMs"))).toNanos();
		while (System.nanoTime() < deadline && !Files.exists(stopFile)) {
			try {
				work.holdAndWrite();
			}
			catch (LockNotAcquiredException ex) {
				events.log("TIMEOUT");
			}
			catch (LockBackendException ex) {
				events.log("ERR " + describe(ex));
				Thread.sleep(50);
			}
			Thread.sleep(ThreadLocalRandom.current().nextLong(1, 10));
		}
		events.log("STOP");
		context.close();
		// Lettuce leaves non-daemon threads behind; the log is closed, so leave now.
		System.exit(0);
	}

	/** The Spring properties that the run's {@code key=value} arguments stand for. */
	static Map<String, Object> properties(Map<String, String> arguments) {
		Map<String, Object> properties = new LinkedHashMap<>();
		String backend = arguments.get("backend");
		String nodes = arguments.get("nodes");
		properties.put("holdfast.backend", backend);
		switch (backend) {
			case "redis" -> properties.put("spring.data.redis.url", nodes.split(",")[0]);
			case "redlock" -> properties.put("holdfast.redlock.nodes", nodes);
			case "jdbc" -> properties.putAll(dataSource(nodes));
			default -> throw new IllegalArgumentException("Unknown backend " + backend + " (redis, redlock or jdbc)");
		}
		if (!backend.equals("jdbc")) {
			// The suite's classpath has a JDBC driver and HikariCP; a Redis or Redlock client has no database.
			properties.put("spring.autoconfigure.exclude", DataSourceAutoConfiguration.class.getName());
		}
		properties.put("faults.resource", arguments.get("resource"));
		properties.put("faults.log", arguments.get("log"));
		properties.put("faults.lock", arguments.get("lock"));
		properties.put("faults.ttl", arguments.get("ttlMs") + "ms");
		properties.put("faults.work", arguments.get("workMs") + "ms");
		properties.put("faults.ticks", arguments.getOrDefault("ticks", "holdfast"));
		properties.put("faults.tick.work", arguments.getOrDefault("tickWorkMs", "300") + "ms");
		properties.put("faults.tick.lock-at-most-for", arguments.getOrDefault("lockAtMostForMs", "2000") + "ms");
		properties.put("faults.tick.lock-at-least-for", arguments.getOrDefault("lockAtLeastForMs", "0") + "ms");
		return properties;
	}

	/**
	 * The application's {@code DataSource} on the run's PostgreSQL, set up as the JDBC suite's
	 * clients set theirs up ({@link PostgresNode#clientPool}): a pool of 4 with two seconds to
	 * wait for a connection or a socket read, {@link PostgresNode#CLIENT_APPLICATION} as its
	 * {@code application_name}, and lock statements that time out after one second.
	 */
	private static Map<String, Object> dataSource(String jdbcUrl) {
		Map<String, Object> properties = new LinkedHashMap<>();
		properties.put("spring.datasource.url",
				jdbcUrl + "?ApplicationName=" + PostgresNode.CLIENT_APPLICATION + "&socketTimeout=2");
		properties.put("spring.datasource.username", "postgres");
		properties.put("spring.datasource.hikari.maximum-pool-size", 4);
		properties.put("spring.datasource.hikari.minimum-idle", 0);
		properties.put("spring.datasource.hikari.connection-timeout", 2000);
		properties.put("spring.datasource.hikari.validation-timeout", 1000);
		properties.put("holdfast.jdbc.query-timeout", "1s");
		return properties;
	}

	private static String describe(Throwable ex) {
		return (ex.getClass().getSimpleName() + ": " + ex.getMessage()).replaceAll("\\s+", " ");
	}

	@Bean
	FaultClient.Events events(Environment environment) throws IOException {
		PrintWriter log = new PrintWriter(Files.newBufferedWriter(Path.of(environment.getRequiredProperty("faults.log")),
				StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND));
		return new FaultClient.Events(log, ProcessHandle.current().pid());
	}

	@Bean(destroyMethod = "close")
	SharedResource resource(Environment environment) {
		return SharedResource.connect(environment.getRequiredProperty("faults.resource"));
	}

	@Bean
	Workloads workloads(FaultClient.Events events, SharedResource resource, Environment environment) {
		return new Workloads(events, resource, environment.getRequiredProperty("faults.work", Duration.class),
				environment.getRequiredProperty("faults.tick.work", Duration.class));
	}

	@Bean
	@ConditionalOnProperty(name = "faults.ticks", havingValue = "holdfast")
	HoldfastTicks holdfastTicks(Workloads work) {
		return new HoldfastTicks(work);
	}

	/** The control: Spring's scheduling without Holdfast. */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnProperty(name = "faults.ticks", havingValue = "unsafe")
	@EnableScheduling
	static class UnsafeTicksConfiguration {

		@Bean
		UnsafeTicks unsafeTicks(Workloads work) {
			return new UnsafeTicks(work);
		}

	}

	/** The critical sections of both workloads. */
	static class Workloads {

		private final FaultClient.Events events;

		private final SharedResource resource;

		private final long workMs;

		private final long tickWorkMs;

		Workloads(FaultClient.Events events, SharedResource resource, Duration work, Duration tickWork) {
			this.events = events;
			this.resource = resource;
			this.workMs = work.toMillis();
			this.tickWorkMs = tickWork.toMillis();
		}

		/** The mutex workload, guarded by the annotation. */
		@DistributedLock(name = "${faults.lock}", waitTime = "2s", leaseTime = "${faults.ttl}")
		public void holdAndWrite() throws InterruptedException {
			Lease lease = LockContext.requireLease();
			long token = lease.fencingToken();
			this.events.log("ACQ " + token);
			try {
				readSleepWrite("WR", Resource.PLAIN, Resource.FENCED, token, this.workMs);
				// Logged before the method returns and the lock is released, as FaultClient does.
				this.events.log("REL " + token + " " + (lease.isValid() ? "valid" : "lost"));
			}
			catch (RuntimeException ex) {
				this.events.log("ERR " + describe(ex));
			}
		}

		/** One run of the tick job: the tick counters, with the tick as the token. */
		public void tick(long tick) {
			this.events.log("TICK " + tick);
			try {
				readSleepWrite("TWR", TICK_PLAIN, TICK_FENCED, tick, this.tickWorkMs);
				this.events.log("TEND " + tick + " ok");
			}
			catch (InterruptedException ex) {
				// The application is closing.
				Thread.currentThread().interrupt();
			}
			catch (RuntimeException ex) {
				this.events.log("TEND " + tick + " failed " + describe(ex));
			}
		}

		/**
		 * As {@link FaultClient}'s critical section: reads a plain and a fenced counter with
		 * {@code token}, sleeps, writes each value + 1 and logs
		 * {@code <type> plain|fenced <token> <value> <result>} per counter.
		 */
		private void readSleepWrite(String type, String plainCounter, String fencedCounter, long token, long sleepMs)
				throws InterruptedException {
			Map<String, Resource.Read> reads = new LinkedHashMap<>();
			reads.put(plainCounter, this.resource.read(plainCounter, token, false));
			reads.put(fencedCounter, this.resource.read(fencedCounter, token, true));
			Thread.sleep(sleepMs);
			reads.forEach((counter, read) -> {
				boolean guarded = counter.equals(fencedCounter);
				long value = read.value() + 1;
				String result = read.accepted() ? this.resource.write(counter, token, value, guarded) : "rejected";
				this.events.log(type + " " + (guarded ? "fenced" : "plain") + " " + token + " "
						+ (read.accepted() ? value : "-") + " " + result);
			});
		}

	}

	/** The job under test: one instance per tick. */
	static class HoldfastTicks {

		private final Workloads work;

		HoldfastTicks(Workloads work) {
			this.work = work;
		}

		@SingleInstanceScheduled(name = "${faults.lock}-tick", cron = "${faults.tick.cron}",
				lockAtMostFor = "${faults.tick.lock-at-most-for}", lockAtLeastFor = "${faults.tick.lock-at-least-for}")
		public void tick() {
			Instant tick = ScheduledTick.current()
				.orElseThrow(() -> new IllegalStateException("The tick job must be a cron job"));
			this.work.tick(tick.toEpochMilli());
		}

	}

	/** The unsafe control: every instance runs every tick. */
	static class UnsafeTicks {

		private final Workloads work;

		UnsafeTicks(Workloads work) {
			this.work = work;
		}

		/** A plain {@code @Scheduled} job does not know its nominal tick: the second it fired in. */
		@Scheduled(cron = "${faults.tick.cron}")
		public void tick() {
			long now = System.currentTimeMillis();
			this.work.tick(now - now % 1000);
		}

	}

}
