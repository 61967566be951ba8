package dev.holdfast.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.UnaryOperator;

import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Scheduled ticks under faults ({@code ./mvnw -B -Pfaults verify -pl faults -am
 * -Dtest=TickFaultMatrixTest}): three Spring Boot client JVMs ({@link BootFaultClient}) each run a
 * {@code @SingleInstanceScheduled} job every second and a loop over a {@code @DistributedLock}
 * method, on Redis, on PostgreSQL (jdbc) and on Redlock over 5 nodes: with no fault, the runner
 * paused past {@code lockAtMostFor} or killed, the backend crashing, and one instance's clock late
 * by less than a period. The unsafe control run comes first (a plain {@code @Scheduled} job: every
 * instance runs every tick), and the matrix is invalid unless the checker catches its duplicate
 * ticks. Every
 * run's rows are printed and written to {@code target/faults/TickFaultMatrixTest.md}; the
 * guarantees are asserted after all runs, so that a failure still leaves the whole table.
 */
@Tag("faults")
class TickFaultMatrixTest {

	private static final Duration PERIOD = Duration.ofSeconds(1);

	private static final Duration LOCK_AT_MOST_FOR = Duration.ofSeconds(2);

	/** Missed ticks expected after a fault heals: the job lock of a stopped runner, plus a tick. */
	private static final Duration ALLOWANCE = LOCK_AT_MOST_FOR.plus(PERIOD);

	/** How long a majority of the Redlock nodes stays down. */
	private static final Duration MAJORITY_DOWN = Duration.ofSeconds(3);

	private final List<Checker.TickReport> tickReports = new ArrayList<>();

	private final List<Checker.Report> lockReports = new ArrayList<>();

	private final SoftAssertions softly = new SoftAssertions();

	@Test
	void tickMatrix() throws Exception {
		Checker.TickReport control = run(FaultRun.named("control-boot-plain-scheduled").bootClients("unsafe")
			.fault(ticksFor(Duration.ofSeconds(4))), (ticks, locks) -> {
			});
		assertThat(control.duplicates()).as("control run: ticks run by several instances must be detected")
			.isPositive();

		Backend redis = new Backend("boot-redis", (run) -> run.redis(false), false);
		Optional<String> noFakeClock = FakeClock.unavailable();
		runsOnEveryBackend(redis);
		run(redis.run("-restart-volatile").fault((context) -> {
			RedisNode node = context.nodes().get(0);
			context.mark("FAULT kill backend");
			node.kill();
			RedisNode.sleep(200);
			node.start();
			context.mark("HEAL restart backend");
		}), (ticks, locks) -> fencingHolds(locks));
		if (noFakeClock.isEmpty()) {
			skewedClocks(redis);
		}

		Backend jdbc = new Backend("boot-jdbc", (run) -> run.jdbc(true), false);
		runsOnEveryBackend(jdbc);
		// The lock table and the resource are in the database, with synchronous commit: claims and
		// job locks survive the crash. Runs in progress fail to write, and ticks are missed while
		// the database is down, never run twice.
		run(jdbc.run("-database-killed").fault((context) -> {
			PostgresNode postgres = context.postgres();
			context.awaitTickRunner();
			context.mark("FAULT kill-database");
			try {
				postgres.kill();
			}
			finally {
				postgres.start();
				context.mark("HEAL restart-database");
			}
		}), (ticks, locks) -> {
			eachTickAtMostOnce(ticks, jdbc);
			fencingHolds(locks);
		});
		if (noFakeClock.isEmpty()) {
			skewedClocks(jdbc);
		}

		Backend redlock = new Backend("boot-redlock5", (run) -> run.redlock(5, false), true);
		runsOnEveryBackend(redlock);
		// Without a quorum no tick is claimed (fail closed); the nodes come back empty, but every
		// instance's next claim is of a later tick.
		run(redlock.run("-majority-down").fault((context) -> {
			List<RedisNode> majority = context.nodes().subList(0, 3);
			context.awaitTickRunner();
			context.mark("FAULT kill 3 of 5 nodes");
			majority.forEach(RedisNode::kill);
			try {
				RedisNode.sleep(MAJORITY_DOWN.toMillis());
			}
			finally {
				for (RedisNode node : majority) {
					node.start();
				}
				context.mark("HEAL restart 3 of 5 nodes");
			}
		}), (ticks, locks) -> {
			eachTickOnce(ticks, redlock);
			this.softly.assertThat(runsStartedDuringFaults(ticks.name()))
				.as(ticks.name() + ": tick runs started without a quorum (fail closed)")
				.isZero();
			fencingHolds(locks);
		});
		if (noFakeClock.isEmpty()) {
			skewedClocks(redlock);
		}

		String table = Checker.tickTable(this.tickReports) + "\n" + Checker.table(this.lockReports);
		System.out.println(table);
		Files.writeString(FaultSuite.reportDir().resolve("TickFaultMatrixTest.md"), table);
		this.softly.assertAll();
		assumeTrue(noFakeClock.isEmpty(), () -> "Clock-jump runs skipped: " + noFakeClock.orElseThrow());
	}

	/**
	 * The runs that every backend must pass alike: no fault, the runner paused past
	 * {@code lockAtMostFor}, the runner killed inside the job.
	 */
	private void runsOnEveryBackend(Backend backend) throws Exception {
		run(backend.run("-no-fault")
			.fault(ticksFor(Duration.ofSeconds(6))), (ticks, locks) -> {
				eachTickOnce(ticks, backend);
				this.softly.assertThat(ticks.concurrentRuns()).as(ticks.name() + ": concurrent runs").isZero();
				this.softly.assertThat(locks.overlaps()).as(locks.name() + ": overlapping holders").isZero();
				this.softly.assertThat(locks.plain().lostUpdates()).as(locks.name() + ": lost updates").isZero();
				fencingHolds(locks);
			});
		run(backend.run("-tick-runner-paused")
			.fault((context) -> context.pauseTickRunner(LOCK_AT_MOST_FOR.multipliedBy(2))), (ticks, locks) -> {
				eachTickOnce(ticks, backend);
				// Past lockAtMostFor another instance runs the job while the paused one still does;
				// the tick as a token fences the paused one's late write.
				this.softly.assertThat(ticks.concurrentRuns()).as(ticks.name() + ": concurrent runs").isPositive();
				this.softly.assertThat(ticks.fenced().rejected()).as(ticks.name() + ": fenced stale rejected")
					.isPositive();
				this.softly.assertThat(ticks.fenced().staleAccepted()).as(ticks.name() + ": fenced stale accepted")
					.isZero();
				fencingHolds(locks);
			});
		run(backend.run("-tick-runner-killed")
			.fault((context) -> context.killTickRunner()), (ticks, locks) -> {
				eachTickOnce(ticks, backend);
				fencingHolds(locks);
			});
	}

	/**
	 * One instance's wall clock off by 2.5 s and by an hour, either way, and 400 ms late: the
	 * backend's clock decides which tick is due, so the skewed instance runs nothing while its clock
	 * is off and each tick runs once on the others. Jumps are not whole seconds, else the jumped
	 * instance would fire at the others' instants.
	 */
	private void skewedClocks(Backend backend) throws Exception {
		for (Duration jump : List.of(Duration.ofMillis(2500), Duration.ofMillis(-2500), Duration.ofMillis(3_600_300),
				Duration.ofMillis(-3_600_300), Duration.ofMillis(-400))) {
			String name = backend.prefix() + "-clock-" + ((jump.isNegative()) ? "behind-" : "ahead-")
					+ describe(jump.abs());
			run(clockJump(name, backend.on(), jump), (ticks, locks) -> {
				eachTickOnce(ticks, backend);
				fencingHolds(locks);
			});
		}
	}

	private static String describe(Duration duration) {
		return (duration.toMinutes() >= 60) ? "1h" : (duration.toMillis() % 1000 == 0) ? duration.toSeconds() + "s"
				: (duration.toMillis() < 1000) ? duration.toMillis() + "ms" : (duration.toMillis() / 100) / 10.0 + "s";
	}

	/**
	 * Client 0 runs on a {@link FakeClock}: its wall clock jumps by {@code jump} for eight seconds,
	 * then back; the others keep the host's clock.
	 */
	private static FaultRun clockJump(String name, UnaryOperator<FaultRun> backend, Duration jump)
			throws IOException {
		FakeClock clock = FakeClock.create(FaultSuite.reportDir().resolve(name + "-clock"));
		Map<String, String> environment = new HashMap<>(clock.environment());
		// Without it libfaketime 0.9.10 breaks a JVM's timed waits: Thread.sleep(1) took 46 ms and
		// Object.wait(1) returned at once (measured), and a Boot client took 70 s instead of 5 s to start.
		environment.put("FAKETIME_FORCE_MONOTONIC_FIX", "0");
		return backend.apply(FaultRun.named(name)).bootClients("holdfast").clientEnvironment(0, environment)
			.fault((context) -> {
				context.mark("FAULT clock-jump client0 " + jump);
				clock.jump(jump);
				RedisNode.sleep(8000);
				clock.jump(jump.negated());
				context.mark("HEAL clock-jump client0");
			});
	}

	/** No fault: the clients tick for {@code duration}. */
	private static FaultRun.Fault ticksFor(Duration duration) {
		return (context) -> RedisNode.sleep(duration.toMillis());
	}

	private Checker.TickReport run(FaultRun run, BiConsumer<Checker.TickReport, Checker.Report> expectations)
			throws Exception {
		Checker.Report locks = run.lockAtMostForMs(LOCK_AT_MOST_FOR.toMillis()).afterMs(5000)
			.run(FaultSuite.reportDir());
		Checker.TickReport ticks = Checker.checkTicks(locks.name(), FaultSuite.reportDir().resolve(locks.name()),
				PERIOD, ALLOWANCE);
		this.tickReports.add(ticks);
		this.lockReports.add(locks);
		System.out.println(Checker.tickTable(List.of(ticks)) + Checker.table(List.of(locks)));
		expectations.accept(ticks, locks);
		return ticks;
	}

	/** How many tick runs of run {@code name} started between a {@code FAULT} and its {@code HEAL}. */
	private static long runsStartedDuringFaults(String name) {
		List<Checker.Event> events;
		try {
			events = new ArrayList<>(Checker.read(FaultSuite.reportDir().resolve(name)));
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		events.sort(Comparator.comparingLong(Checker.Event::nanos));
		long runs = 0;
		boolean faulted = false;
		for (Checker.Event event : events) {
			switch (event.type()) {
				case "FAULT" -> faulted = true;
				case "HEAL" -> faulted = false;
				case "TICK" -> runs += faulted ? 1 : 0;
				default -> {
				}
			}
		}
		return runs;
	}

	/** No tick ran twice, none went missing outside the allowance after a fault, and no run failed. */
	private void eachTickOnce(Checker.TickReport ticks, Backend backend) {
		eachTickAtMostOnce(ticks, backend);
		this.softly.assertThat(ticks.errors()).as(ticks.name() + ": failed tick runs").isZero();
	}

	/**
	 * No tick ran twice, and none went missing outside the allowance after a fault, unless the
	 * backend's claims can split.
	 */
	private void eachTickAtMostOnce(Checker.TickReport ticks, Backend backend) {
		this.softly.assertThat(ticks.duplicates()).as(ticks.name() + ": duplicate ticks").isZero();
		if (!backend.splitClaimsMissTicks()) {
			this.softly.assertThat(ticks.missed()).as(ticks.name() + ": missed ticks outside the allowance").isZero();
		}
	}

	/**
	 * A backend of the matrix.
	 * @param prefix the start of its runs' names
	 * @param on sets a run up on the backend
	 * @param splitClaimsMissTicks whether simultaneous claims can leave a tick unclaimed, as on
	 * Redlock when they split the nodes so that none reaches a quorum (docs/decisions/0035): a
	 * missed tick is then allowed, a duplicate never
	 */
	private record Backend(String prefix, UnaryOperator<FaultRun> on, boolean splitClaimsMissTicks) {

		FaultRun run(String suffix) {
			return this.on.apply(FaultRun.named(this.prefix + suffix).bootClients("holdfast"));
		}

	}

	/** Tokens only grow, and the guarded counter accepts no stale write and loses no update. */
	private void fencingHolds(Checker.Report locks) {
		this.softly.assertThat(locks.tokenRegressions()).as(locks.name() + ": token regressions").isZero();
		this.softly.assertThat(locks.fenced().staleAccepted()).as(locks.name() + ": fenced stale accepted").isZero();
		this.softly.assertThat(locks.fenced().lostUpdates()).as(locks.name() + ": fenced lost updates").isZero();
	}

}
