package dev.holdfast.scheduling;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;

import dev.holdfast.ScheduledTick;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Scheduled jobs in a context on a real redis-server: what they leave in Redis, and how they
 * stop when the context closes.
 */
@ExtendWith(OutputCaptureExtension.class)
class RedisSingleInstanceScheduledTests {

	private static RedisServer redis;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, DataRedisAutoConfiguration.class,
				HoldfastAutoConfiguration.class))
		.withPropertyValues("spring.data.redis.port=" + redis.port(), "holdfast.backend=redis",
				"spring.lifecycle.timeout-per-shutdown-phase=10s");

	@BeforeAll
	static void startRedis() {
		redis = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		redis.close();
	}

	@Test
	void cronJobKeepsTheSameFewKeysInRedisHoweverManyTicksItRuns() {
		this.runner.withBean(EverySecond.class).run((context) -> {
			EverySecond job = context.getBean(EverySecond.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> job.ticks.size() >= 1);
			try (RedisConnection connection = context.getBean(RedisConnectionFactory.class).getConnection()) {
				connection.serverCommands().flushAll();
				int from = job.ticks.size();
				await().atMost(Duration.ofSeconds(20)).until(() -> job.ticks.size() >= from + 5);
				// Between runs, only the job lock's fencing counter and the job's record of the
				// last claimed tick are left (a run holds the job lock for a moment).
				await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
					assertThat(connection.keyCommands().keys("*".getBytes()))
						.as("keys after %d ticks", job.ticks.size() - from)
						.extracting(String::new)
						.containsExactlyInAnyOrder("{holdfast:every-second}:fence", "{holdfast:every-second}:tick");
					assertThat(connection.serverCommands().dbSize()).isEqualTo(2);
				});
			}
		});
	}

	@Test
	void closingWhileTickingLetsTheRunInProgressFinishAndLogsNoWarning(CapturedOutput output) {
		this.runner.withBean(Ticking.class).run((context) -> {
			Ticking job = context.getBean(Ticking.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> job.runs.get() >= 3);
			job.holdNextRun.set(true);
			assertThat(job.inProgress.await(10, TimeUnit.SECONDS)).isTrue();
			int logFrom = output.length();
			int runsBeforeClose = job.runs.get();
			CompletableFuture<Void> closing = CompletableFuture.runAsync(context::close);
			await().atMost(Duration.ofSeconds(10))
				.until(() -> output.toString().substring(logFrom).contains("waits for 1 run(s) in progress"));
			assertThat(closing).as("the close waits for the run").isNotDone();
			job.finish.countDown();
			closing.get(20, TimeUnit.SECONDS);
			assertThat(job.completed).as("the run in progress completed").isTrue();
			assertThat(job.runs.get()).as("runs started once the close began").isEqualTo(runsBeforeClose);
			String closeLog = output.toString().substring(logFrom);
			assertThat(closeLog).doesNotContain("WARN").doesNotContain("ERROR");
			assertThat(closeLog.lines().filter((line) -> line.contains("Holdfast"))).as("Holdfast log lines")
				.hasSize(1);
		});
	}

	static class EverySecond {

		final List<Long> ticks = new CopyOnWriteArrayList<>();

		@SingleInstanceScheduled(cron = "* * * * * *", name = "every-second")
		void run() {
			this.ticks.add(ScheduledTick.current().orElseThrow().toEpochMilli());
		}

	}

	static class Ticking {

		final AtomicInteger runs = new AtomicInteger();

		final AtomicBoolean holdNextRun = new AtomicBoolean();

		final CountDownLatch inProgress = new CountDownLatch(1);

		final CountDownLatch finish = new CountDownLatch(1);

		volatile boolean completed;

		@SingleInstanceScheduled(fixedRate = "100ms", name = "ticking")
		void run() throws InterruptedException {
			this.runs.incrementAndGet();
			if (this.holdNextRun.compareAndSet(true, false)) {
				this.inProgress.countDown();
				this.completed = this.finish.await(10, TimeUnit.SECONDS);
			}
		}

	}

}
