package dev.holdfast.faults;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Wall-clock jumps ({@link FakeClock}: libfaketime) of an hour forward and back while clients
 * hold (and renew) and wait: the clients' clocks, which the engine must not use, and the Redis
 * server's clock, which expires the lease. Table in {@code target/faults/ClockFaultMatrixTest.md}.
 */
@Tag("faults")
class ClockFaultMatrixTest {

	private static final Duration HOUR = Duration.ofHours(1);

	// Between the jumps; with 600 ms of work per hold, each jump meets holders and waiters.
	private static final long STEADY_MS = 1500;

	private final Matrix matrix = new Matrix("ClockFaultMatrixTest");

	@Test
	void clockJumps() throws Exception {
		assumeTrue(FakeClock.unavailable().isEmpty(), () -> FakeClock.unavailable().orElseThrow());
		this.matrix.control("control-clock-redis-client-paused-no-fencing");

		FakeClock redisClients = clock("redis-client-clocks-jump");
		this.matrix.run(FaultRun.named("redis-client-clocks-jump").redis(false).workMs(600)
			.clientEnvironment(redisClients.environment())
			.fault(clientClocksJump(redisClients)), this.matrix::mutualExclusionHolds);
		FakeClock redlockClients = clock("redlock5-client-clocks-jump");
		this.matrix.run(FaultRun.named("redlock5-client-clocks-jump").redlock(5, false).workMs(600)
			.clientEnvironment(redlockClients.environment())
			.fault(clientClocksJump(redlockClients)), this.matrix::mutualExclusionHolds);

		FakeClock server = clock("redis-server-clock-forward");
		this.matrix.run(FaultRun.named("redis-server-clock-forward").redis(false).workMs(600)
			.nodeEnvironment(server.environment())
			.fault(serverClockForward(server)), (report) -> {
				// Documented unsafe: the lease is a time to live on the server's clock.
				this.matrix.softly.assertThat(report.overlaps())
					.as(report.name() + ": a server clock jumping past the TTL expires the lease early")
					.isPositive();
				this.matrix.fencingHolds(report);
			});
		this.matrix.finish();
	}

	/**
	 * Once a client has just taken the lock: every client's clock one hour forward, then one hour
	 * behind the host, then back.
	 */
	private static FaultRun.Fault clientClocksJump(FakeClock clock) {
		return (context) -> {
			context.awaitNewHolder();
			for (Process client : context.clients()) {
				String maps = Files.readString(Path.of("/proc/" + client.pid() + "/maps"));
				if (!maps.contains("libfaketime")) {
					throw new IllegalStateException("Client " + client.pid() + " does not run on the fake clock");
				}
			}
			try {
				clock.jump(HOUR);
				context.mark("FAULT client clocks +1h");
				RedisNode.sleep(STEADY_MS);
				context.awaitNewHolder();
				clock.jump(HOUR.multipliedBy(-2));
				context.mark("FAULT client clocks -1h");
				RedisNode.sleep(STEADY_MS);
			}
			finally {
				clock.jump(clock.offset().negated());
				context.mark("HEAL client clocks +0");
			}
		};
	}

	/** Once a client has just taken the lock: the Redis server's clock one hour forward, then back. */
	private static FaultRun.Fault serverClockForward(FakeClock clock) {
		return (context) -> {
			context.awaitNewHolder();
			try {
				clock.jump(HOUR);
				context.mark("FAULT server clock +1h");
				RedisNode.sleep(STEADY_MS);
			}
			finally {
				clock.jump(clock.offset().negated());
				context.mark("HEAL server clock +0");
			}
		};
	}

	private static FakeClock clock(String run) throws Exception {
		return FakeClock.create(FaultSuite.reportDir().resolve("clocks").resolve(run));
	}

}
