package dev.holdfast.scheduling;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import org.springframework.boot.Banner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;

import dev.holdfast.ScheduledTick;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.core.DefaultLockTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Instances (application contexts in this JVM, each with its own {@link Clock} bean, which its
 * scheduler follows) share one backend and run the same job; each run records its tick, and each
 * instance records the ticks it skipped with their reasons. Subclasses say which backend. Every
 * scenario writes its figures with {@link TickFigures}.
 */
abstract class AbstractSingleInstanceClusterTests {

	/** Ticks of the window that is checked, after all instances have started. */
	private static final int TICKS = 6;

	private final List<ConfigurableApplicationContext> instances = new ArrayList<>();

	private final TickRecorder cron = new TickRecorder();

	private final TickRecorder rate = new TickRecorder();

	private final TickRecorder delay = new TickRecorder();

	private final String jobName = "tick-" + UUID.randomUUID();

	/** Configuration that makes every instance use the shared backend. */
	protected abstract void configureBackend(SpringApplicationBuilder builder);

	/** The backend name the instances must use. */
	protected abstract String expectedBackend();

	/** The row label of this backend in the figures. */
	protected String label() {
		return expectedBackend();
	}

	/**
	 * Whether the backend decides which tick is due by its own clock ({@code TickClaims}). A
	 * backend without tick records only guarantees one run per tick while the instances' clocks
	 * differ by less than half a period: then the skewed instances are measured, not checked.
	 */
	protected boolean judgesTicksByItsClock() {
		return true;
	}

	@AfterEach
	void closeInstances() {
		this.instances.forEach(ConfigurableApplicationContext::close);
	}

	/** Whether to run the unskewed scenario too; the skewed one is strictly harder. */
	protected boolean runUnskewed() {
		return false;
	}

	/**
	 * Six instances run a cron job every second, a 1-second fixed-rate job and a 1-second
	 * fixed-delay job whose runs take 200 ms, side by side: two instances on the right time, and
	 * four whose clocks are 2.5 s ahead, 2.5 s behind, an hour ahead and an hour behind. The
	 * backend refuses every claim of the skewed ones, so each tick runs once, on time, on one of
	 * the two; fixed-delay runs never overlap, and each starts at least the delay after the end of
	 * the previous one, on any instance.
	 */
	@Test
	void eachTickRunsOnceOnTimeWhateverTheSkewOfOtherInstances(TestInfo test) {
		Map<String, Duration> clocks = new LinkedHashMap<>();
		clocks.put("exact-1", Duration.ZERO);
		clocks.put("exact-2", Duration.ZERO);
		clocks.put("ahead-2.5s", Duration.ofMillis(2500));
		clocks.put("behind-2.5s", Duration.ofMillis(-2500));
		clocks.put("ahead-1h", Duration.ofHours(1));
		clocks.put("behind-1h", Duration.ofHours(-1));
		TickRecorder.Window window = runScenario(Jobs.class, clocks);
		String skews = "clocks 0, 0, +2.5 s, −2.5 s, +1 h, −1 h";
		TickFigures.Row cronRow = TickFigures.row(label(), "cron every 1 s, " + skews, this.cron, window, clocks);
		TickFigures.Row rateRow = TickFigures.row(label(), "fixedRate 1 s, " + skews, this.rate, window, clocks);
		List<TickRecorder.Run> delayRuns = this.delay.runs();
		Duration shortestGap = this.delay.shortestGapBetweenRuns();
		TickFigures.write(getClass(), test, cronRow);
		TickFigures.write(getClass(), test, rateRow);
		TickFigures.write(getClass(), test, TickFigures.delayRow(label(),
				"fixedDelay 1 s (runs of 200 ms), " + skews, delayRuns, shortestGap));
		assertThat(shortestGap).as("shortest time from the end of a run to the start of the next, of %s", delayRuns)
			.isGreaterThanOrEqualTo(Duration.ofMillis(990));
		assertThat(delayRuns).as("fixed-delay runs").hasSizeGreaterThanOrEqualTo(TICKS / 2);
		if (judgesTicksByItsClock()) {
			assertHealthy(cronRow, this.cron, window, clocks);
			assertHealthy(rateRow, this.rate, window, clocks);
		}
		else {
			// Without tick records only instances whose clocks agree are kept from running a tick twice.
			assertThat(this.cron.duplicates(window, List.of("exact-1", "exact-2"))).as("%s", cronRow).isEmpty();
			assertThat(this.rate.duplicates(window, List.of("exact-1", "exact-2"))).as("%s", rateRow).isEmpty();
		}
	}

	@Test
	void eachTickRunsExactlyOnceAcrossThreeInstances(TestInfo test) {
		Assumptions.assumeTrue(runUnskewed(), "the skewed scenario covers this backend");
		Map<String, Duration> clocks = new LinkedHashMap<>();
		clocks.put("a", Duration.ZERO);
		clocks.put("b", Duration.ZERO);
		clocks.put("c", Duration.ZERO);
		TickRecorder.Window window = runScenario(Jobs.class, clocks);
		TickFigures.Row row = TickFigures.row(label(), "cron every 1 s, clocks 0, 0, 0", this.cron, window, clocks);
		TickFigures.write(getClass(), test, row);
		assertHealthy(row, this.cron, window, clocks);
	}

	/**
	 * No tick of the window ran twice; each ran on an instance whose clock agrees with the
	 * backend's, within the tolerance of its time; the others ran nothing and said why; a tick that
	 * ran nowhere is explained by a late start that the healthy instances reported.
	 */
	private void assertHealthy(TickFigures.Row row, TickRecorder recorder, TickRecorder.Window window,
			Map<String, Duration> clocks) {
		assertThat(row.duplicates()).as("duplicate runs: %s", row).isZero();
		List<String> skewed = clocks.entrySet()
			.stream()
			.filter((clock) -> clock.getValue().abs().compareTo(Duration.ofMillis(250)) > 0)
			.map(Map.Entry::getKey)
			.toList();
		for (String instance : skewed) {
			assertThat(recorder.runsOf(instance)).as("runs of %s: %s", instance, row).isZero();
			assertThat(recorder.skips(instance)).as("why %s skipped", instance).containsKey("clock-off");
		}
		for (ConfigurableApplicationContext context : this.instances) {
			String instance = context.getEnvironment().getRequiredProperty("instance");
			TickClock clock = context.getBean(SingleInstanceScheduledBeanPostProcessor.class).tickClock();
			if (skewed.contains(instance)) {
				assertThat(clock.refusedJobs()).as("jobs refused for the clock of %s", instance)
					.containsKey(this.jobName + "-cron")
					.containsKey(this.jobName + "-rate");
				assertThat(clock.offset()).get()
					.satisfies((offset) -> assertThat(offset.minus(clocks.get(instance)).abs())
						.isLessThan(Duration.ofMillis(250)));
			}
			else {
				assertThat(clock.refusedJobs()).as("jobs refused for the clock of %s", instance).isEmpty();
			}
		}
		// The backend accepted each claim within 250 ms of its tick by its clock; the run starts
		// after that claim and the job lock's acquisition, within its own period.
		assertThat(row.maxLateness()).as("latest start after its tick: %s", row).isLessThan(Duration.ofSeconds(1));
		long explained = recorder.skipsInWindow(window, "late") + recorder.skipsInWindow(window, "no-quorum");
		assertThat(row.drops()).as("ticks that ran nowhere, beyond those explained by late starts: %s", row)
			.isLessThanOrEqualTo(explained);
		assertThat(row.ticksRun()).as("ticks run: %s", row).isGreaterThanOrEqualTo(TICKS - 1);
	}

	/** Starts the instances, then waits for the window of {@link #TICKS} ticks after they all run. */
	private TickRecorder.Window runScenario(Class<?> job, Map<String, Duration> clocks) {
		for (Map.Entry<String, Duration> clock : clocks.entrySet()) {
			start(job, clock.getKey(), clock.getValue());
		}
		Instant from = Instant.now().plusSeconds(1).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
		TickRecorder.Window window = new TickRecorder.Window(from, from.plusSeconds(TICKS));
		// and one more second, so that a late duplicate of a checked tick has had time to show
		await().atMost(Duration.ofSeconds(TICKS + 20))
			.pollInterval(Duration.ofMillis(100))
			.until(() -> Instant.now().isAfter(window.to().plusSeconds(2)));
		return window;
	}

	private void start(Class<?> job, String instance, Duration skew) {
		Clock clock = Clock.offset(Clock.systemUTC(), skew);
		SpringApplicationBuilder builder = new SpringApplicationBuilder(job).web(WebApplicationType.NONE)
			.logStartupInfo(false)
			.bannerMode(Banner.Mode.OFF)
			.properties("job.name=" + this.jobName, "instance=" + instance)
			.initializers((context) -> {
				context.getBeanFactory().registerSingleton("clock", clock);
				context.getBeanFactory().registerSingleton("cronRecorder", this.cron);
				context.getBeanFactory().registerSingleton("rateRecorder", this.rate);
				context.getBeanFactory().registerSingleton("delayRecorder", this.delay);
				context.getBeanFactory().registerSingleton("cronSkips", this.cron.listener(instance, this.jobName + "-cron"));
				context.getBeanFactory().registerSingleton("rateSkips", this.rate.listener(instance, this.jobName + "-rate"));
			});
		configureBackend(builder);
		ConfigurableApplicationContext context = builder.run();
		this.instances.add(context);
		assertThat(context.getBean(DefaultLockTemplate.class).backend().name()).isEqualTo(expectedBackend());
	}

	/** The three jobs, each recording its runs. */
	static class Jobs {

		private final TickRecorder cron;

		private final TickRecorder rate;

		private final TickRecorder delay;

		private final String instance;

		Jobs(TickRecorder cronRecorder, TickRecorder rateRecorder, TickRecorder delayRecorder, Environment environment) {
			this.cron = cronRecorder;
			this.rate = rateRecorder;
			this.delay = delayRecorder;
			this.instance = environment.getRequiredProperty("instance");
		}

		@SingleInstanceScheduled(cron = "* * * * * *", name = "${job.name}-cron", lockAtMostFor = "900ms")
		void cron() {
			this.cron.record(ScheduledTick.current().orElseThrow(), this.instance);
		}

		@SingleInstanceScheduled(fixedRate = "1s", name = "${job.name}-rate", lockAtMostFor = "900ms")
		void rate() {
			this.rate.record(ScheduledTick.current().orElseThrow(), this.instance);
		}

		@SingleInstanceScheduled(fixedDelay = "1s", name = "${job.name}-delay", lockAtMostFor = "5s")
		void delay() throws InterruptedException {
			long start = System.nanoTime();
			Thread.sleep(200);
			this.delay.record(start, System.nanoTime(), this.instance);
		}

	}

}
