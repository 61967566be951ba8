package dev.holdfast.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The JDBC backend under faults ({@code ./mvnw -B -Pfaults verify -pl faults -am}): clients in
 * their own JVMs lock through {@code JdbcLockBackend} on a HikariCP pool, and update counters in
 * the same PostgreSQL database, the fenced one through {@code JdbcFencingGuard}. The unsafe
 * control run comes first, and the run set is invalid unless the checker catches its violations.
 * Each run's row is printed and written to {@code target/faults/JdbcFaultMatrixTest.md}; the
 * guarantees of the design are asserted after all runs, so that a failure still leaves the whole
 * table.
 */
@Tag("faults")
class JdbcFaultMatrixTest {

	private static final Duration FAULT = Duration.ofSeconds(3);

	/**
	 * Work of a holder that is paused: long enough that the pause, which starts a few
	 * milliseconds after the holder is seen acquiring, lands before its writes.
	 */
	private static final long PAUSED_WORK_MS = 200;

	/**
	 * Lease of the runs that measure recovery: a call whose outcome the caller never learnt (a
	 * connection killed after the commit, a statement run when the database resumed) can leave
	 * the lock to an owner that is gone, until this expires.
	 */
	private static final long TTL_MS = 1000;

	private final List<Checker.Report> reports = new ArrayList<>();

	private final Map<String, Steps> steps = new HashMap<>();

	private final StringBuilder stepFigures = new StringBuilder();

	private final SoftAssertions softly = new SoftAssertions();

	@Test
	void jdbcFaultMatrix() throws Exception {
		Checker.Report control = run(FaultRun.named("control-jdbc-client-paused-no-fencing").jdbc(true)
			.workMs(PAUSED_WORK_MS)
			.fault((context) -> context.pauseHolder(FAULT)), (report) -> {
			});
		assertThat(control.overlaps()).as("control run: overlapping holders must be detected").isPositive();
		assertThat(control.plain().staleAccepted()).as("control run: stale writes accepted must be detected")
			.isPositive();

		run(FaultRun.named("jdbc-client-paused-fenced").jdbc(true)
			.workMs(PAUSED_WORK_MS)
			.fault((context) -> context.pauseHolder(FAULT)), (report) -> {
				Guarantees.fencingHolds(this.softly, report);
				this.softly.assertThat(report.fenced().rejected())
					.as(report.name() + ": the resumed holder's writes are rejected")
					.isPositive();
			});
		run(FaultRun.named("jdbc-client-connections-killed").jdbc(true).ttlMs(TTL_MS)
			.fault(this::killClientConnections), (report) -> {
				Guarantees.mutualExclusionHolds(this.softly, report);
				recoversWithin(report, 2 * TTL_MS);
			});
		run(FaultRun.named("jdbc-database-paused").jdbc(true).ttlMs(TTL_MS).fault(this::pauseDatabase), (report) -> {
			Guarantees.mutualExclusionHolds(this.softly, report);
			recoversWithin(report, 2 * TTL_MS);
		});
		run(killedDatabase("jdbc-database-killed-synchronous-commit", true), (report) -> {
			Guarantees.mutualExclusionHolds(this.softly, report);
			this.softly.assertThat(report.lostLeases()).as(report.name() + ": leases lost across the restart")
				.isZero();
		});
		// Documented unsafe: the database loses the commits of its last seconds, acquisitions and
		// the counters' writes alike. Asserted is only what does not rest on those commits: tokens
		// come from the database clock, and the guard rejects the writes of a holder whose lease
		// vanished.
		run(killedDatabase("jdbc-database-killed-asynchronous-commit", false), (report) -> {
			this.softly.assertThat(report.tokenRegressions()).as(report.name() + ": token regressions").isZero();
			this.softly.assertThat(report.fenced().staleAccepted()).as(report.name() + ": fenced stale accepted")
				.isZero();
		});

		String table = Checker.table(this.reports)
				+ "\n| run | errors | last error after the fault healed ms | longest step of a client ms |\n"
				+ "|---|---|---|---|\n" + this.stepFigures;
		System.out.println(table);
		Files.writeString(FaultSuite.reportDir().resolve("JdbcFaultMatrixTest.md"), table);
		this.softly.assertAll();
	}

	/**
	 * Two clients, leases longer than the database's downtime and than the holder's work: the
	 * database is killed a few milliseconds after an acquisition, and mutual exclusion holds if
	 * that lease survives the restart.
	 */
	private FaultRun killedDatabase(String name, boolean synchronousCommit) {
		return FaultRun.named(name).jdbc(synchronousCommit).clients(2).ttlMs(5000).workMs(3500)
			.fault(this::killDatabase);
	}

	/**
	 * Ends every client connection every 100 ms for {@link #FAULT}, from a moment when a client
	 * holds the lock: holders, waiters and renewals lose their connections in every phase.
	 */
	private void killClientConnections(FaultContext context) throws Exception {
		context.awaitHolder();
		context.mark("FAULT terminate-client-connections");
		int terminated = 0;
		long end = System.nanoTime() + FAULT.toNanos();
		try {
			while (System.nanoTime() < end) {
				terminated += context.postgres().terminateClientConnections();
				RedisNode.sleep(100);
			}
		}
		finally {
			context.mark("HEAL terminate-client-connections " + terminated);
		}
	}

	/** Stops the whole database with SIGSTOP for {@link #FAULT} while a client holds the lock. */
	private void pauseDatabase(FaultContext context) throws Exception {
		PostgresNode postgres = context.postgres();
		context.awaitHolder();
		context.mark("FAULT pause-database");
		postgres.pause();
		try {
			RedisNode.sleep(FAULT.toMillis());
		}
		finally {
			postgres.resume();
			context.mark("HEAL resume-database");
		}
	}

	/**
	 * Kills the database with SIGKILL while a client that acquired the lock a moment before
	 * sleeps in its critical section (it has claimed and read the fenced counter), and starts it
	 * again on the same data at once.
	 */
	private void killDatabase(FaultContext context) throws Exception {
		PostgresNode postgres = context.postgres();
		postgres.awaitNewFence(Resource.FENCED, Duration.ofSeconds(15));
		// the holder's last read, the counter's value, follows its claim
		RedisNode.sleep(20);
		context.mark("FAULT kill-database");
		try {
			postgres.kill();
		}
		finally {
			postgres.start();
			context.mark("HEAL restart-database");
		}
	}

	private Checker.Report run(FaultRun run, Consumer<Checker.Report> expectations) throws Exception {
		Checker.Report report = run.run(FaultSuite.reportDir());
		this.reports.add(report);
		Steps steps = Steps.read(FaultSuite.reportDir().resolve(report.name()));
		this.steps.put(report.name(), steps);
		this.stepFigures.append(String.format(Locale.ROOT, "| %s | %d | %s | %.0f |%n", report.name(),
				report.errors(), Double.isNaN(steps.lastErrorAfterHealMs()) ? "none"
						: String.format(Locale.ROOT, "%.0f", steps.lastErrorAfterHealMs()),
				steps.longestStepMs()));
		System.out.println(Checker.table(List.of(report)));
		expectations.accept(report);
		return report;
	}

	/**
	 * The lock is granted again within {@code maxMs} of the fault healing; errors stop within a
	 * second (a connection the fault broke fails one statement at most before the pool drops it);
	 * no client waits longer in one step than its wait time plus the pool's and the network's
	 * timeouts (2 s + 2 s + 1 s).
	 */
	private void recoversWithin(Checker.Report report, long maxMs) {
		Steps steps = this.steps.get(report.name());
		this.softly.assertThat(report.recoveryMs()).as(report.name() + ": recovery ms").isLessThan(maxMs);
		this.softly.assertThat(Double.isNaN(steps.lastErrorAfterHealMs()) ? 0 : steps.lastErrorAfterHealMs())
			.as(report.name() + ": last error after the fault healed, ms")
			.isLessThan(1000);
		this.softly.assertThat(steps.longestStepMs()).as(report.name() + ": longest step of a client, ms")
			.isLessThan(5000);
	}

	/**
	 * What the clients' logs say beyond the checker's report.
	 * @param lastErrorAfterHealMs from the last {@code HEAL} to the last {@code ERR} after it, NaN
	 * if there is none
	 * @param longestStepMs the longest time between two successive events of one client: how long
	 * a call blocked it, at most
	 */
	record Steps(double lastErrorAfterHealMs, double longestStepMs) {

		static Steps read(Path dir) throws IOException {
			long heal = Long.MAX_VALUE;
			long lastError = Long.MIN_VALUE;
			long longestStep = 0;
			try (var files = Files.list(dir)) {
				for (Path file : files.filter((f) -> f.toString().endsWith(".log")).toList()) {
					long previous = Long.MIN_VALUE;
					for (String line : Files.readAllLines(file)) {
						if (line.isBlank()) {
							continue;
						}
						Checker.Event event = Checker.Event.parse(line);
						switch (event.type()) {
							case "HEAL" -> heal = event.nanos();
							case "ERR" -> lastError = Math.max(lastError, event.nanos());
							default -> {
							}
						}
						if (event.pid() != 0 && previous != Long.MIN_VALUE) {
							longestStep = Math.max(longestStep, event.nanos() - previous);
						}
						previous = event.nanos();
					}
				}
			}
			return new Steps((lastError > heal) ? (lastError - heal) / 1e6 : Double.NaN, longestStep / 1e6);
		}

	}

}
