package dev.holdfast.sample.demo;

import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.scheduling.support.CronExpression;

/**
 * What one demo run observed, which guarantees held, and the printed report.
 *
 * @param instances how many instances served the run
 * @param setup what the demo asked the instances for: a profile, or the embedded default
 * @param expectedBackend the lock backend that setup puts the locks in
 * @param backend the lock backend the instances reported (several, comma-separated, when they
 * differ)
 * @param load what the clients saw
 * @param skus the stock accounting per SKU
 * @param ticks the job's runs per tick, for the ticks that fired while every instance was up
 * @param missedTicks ticks in that window on which no instance ran the job
 * @param requiredTicks how many ticks the run had to observe
 * @param locks the instances' lock counters, summed
 * @param takeover the long job's move after a kill of the instance running it; {@code null} when
 * not shown (fewer than 3 instances)
 * @param handover the relay's leader group handed by a yield to the instance then killed;
 * {@code null} when not shown (it led already, or fewer than 3 instances)
 * @param leaderTakeover the group's move after that kill; {@code null} when not shown
 */
public record DemoReport(int instances, String setup, String expectedBackend, String backend, Load load, List<SkuStock> skus, List<Tick> ticks,
		int missedTicks, int requiredTicks, Locks locks, Takeover takeover, @Nullable LeaderMove handover,
		@Nullable LeaderMove leaderTakeover) {

	private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss");

	/** A report without the leader group's moves. */
	public DemoReport(int instances, String setup, String expectedBackend, String backend, Load load,
			List<SkuStock> skus, List<Tick> ticks, int missedTicks, int requiredTicks, Locks locks, Takeover takeover) {
		this(instances, setup, expectedBackend, backend, load, skus, ticks, missedTicks, requiredTicks, locks, takeover,
				null, null);
	}

	/**
	 * What the clients saw.
	 *
	 * @param requests requests sent
	 * @param concurrency requests in flight at once
	 * @param elapsed how long sending them took
	 * @param reserved answers {@code RESERVED}
	 * @param soldOut answers {@code SOLD_OUT}
	 * @param fenced answers {@code 409}: the write was rejected for a stale fencing token
	 * @param lockTimeouts answers {@code 503}: the lock stayed held for the whole wait time
	 * @param backendFailures answers {@code 503}: the lock backend failed, the call failed closed
	 * @param errors anything else: other statuses, I/O errors
	 * @param firstError the first error, or {@code null}
	 */
	public record Load(int requests, int concurrency, Duration elapsed, long reserved, long soldOut, long fenced,
			long lockTimeouts, long backendFailures, long errors, String firstError) {
	}

	/**
	 * Stock accounting of one SKU.
	 *
	 * @param sku the SKU
	 * @param initial units at the start
	 * @param remaining units left at the end
	 * @param recorded reservations recorded in the database
	 */
	public record SkuStock(String sku, int initial, int remaining, long recorded) {

		/**
		 * Units handed out that the stock does not account for: recorded reservations beyond what
		 * the stock went down by (a lost update), or beyond the initial stock.
		 */
		long oversold() {
			long accounted = Math.min(this.initial, this.initial - (long) this.remaining);
			return Math.max(0, this.recorded - Math.max(0, accounted));
		}

	}

	/**
	 * One tick of the scheduled job.
	 *
	 * @param time its nominal fire time
	 * @param runs how many instances ran it
	 * @param instances who ran it
	 */
	public record Tick(Instant time, int runs, List<String> instances) {
	}

	/**
	 * Lock counters summed over the instances.
	 *
	 * @param acquired inventory lock acquisitions
	 * @param waited of those, how many waited for another holder
	 * @param maxWaitMillis the longest wait
	 * @param gaveUp inventory lock attempts that gave up after the wait time
	 * @param jobRuns job runs
	 * @param skips job ticks skipped because another instance held the tick
	 * @param leasesLost leases that could not be renewed, on all locks
	 */
	public record Locks(long acquired, long waited, long maxWaitMillis, long gaveUp, long jobRuns, long skips,
			long leasesLost) {
	}

	/**
	 * The long job's move to another instance after the one running it was killed.
	 *
	 * @param job the job
	 * @param from the instance killed; {@code null} if no instance was seen running the job
	 * @param to the instance seen running it next; {@code null} if none within the lease and the
	 * allowance
	 * @param after from the kill until the job was seen running on {@code to}
	 * @param lease the job lock's lease time
	 * @param allowance how much longer than the lease the move may take
	 * @param together whether {@code to} was running the job too before the kill (the lock is not
	 * shared: {@code --backend=memory})
	 */
	public record Takeover(String job, String from, String to, Duration after, Duration lease, Duration allowance,
			boolean together) {

		boolean held() {
			return this.from != null && this.to != null && !this.together
					&& this.after.compareTo(this.lease.plus(this.allowance)) <= 0;
		}

		String describe() {
			if (this.from == null) {
				return "no instance was seen running job '" + this.job + "'";
			}
			if (this.together) {
				return "job '" + this.job + "' ran on " + this.from + " and " + this.to + " at once, before any kill";
			}
			String lease = "(lease " + this.lease.toSeconds() + " s)";
			if (this.to == null) {
				return "no other instance started job '" + this.job + "' within " + seconds(this.after)
						+ " s after " + this.from + " was killed " + lease;
			}
			return "job '" + this.job + "' moved from " + this.from + " to " + this.to + " " + seconds(this.after)
					+ " s after the kill " + lease + (held() ? "" : ", later than lease + "
							+ this.allowance.toSeconds() + " s");
		}

		static String seconds(Duration duration) {
			return String.format(java.util.Locale.ROOT, "%.1f", duration.toMillis() / 1000.0);
		}

	}

	/**
	 * A leader group's move from one instance to another.
	 *
	 * @param group the group
	 * @param cause {@code yield} (an operator's yield through the endpoint) or {@code kill}
	 * @param from the instance that led; {@code null} if none was seen leading
	 * @param to the instance seen leading next with a larger token; {@code null} if none in time
	 * @param after from the yield or kill until {@code to} was seen leading
	 * @param fromToken the fencing token of {@code from}'s term
	 * @param toToken the fencing token of {@code to}'s term
	 * @param bound how long the move may take
	 * @param allowance how much longer than the bound it may take on a loaded host
	 */
	public record LeaderMove(String group, String cause, @Nullable String from, @Nullable String to, Duration after,
			long fromToken, long toToken, Duration bound, Duration allowance) {

		boolean held() {
			return this.from != null && this.to != null && this.toToken > this.fromToken
					&& this.after.compareTo(this.bound.plus(this.allowance)) <= 0;
		}

		String describe() {
			if (this.from == null) {
				return "no instance was seen leading group '" + this.group + "'";
			}
			String bound = "(bound " + Takeover.seconds(this.bound) + " s)";
			if (this.to == null) {
				return "no other instance led group '" + this.group + "' within " + Takeover.seconds(this.after)
						+ " s after the " + this.cause + " of " + this.from + " " + bound;
			}
			return "group '" + this.group + "' moved from " + this.from + " to " + this.to + " "
					+ Takeover.seconds(this.after) + " s after the " + this.cause + " " + bound + ", term "
					+ this.fromToken + " -> " + this.toToken + ((this.toToken > this.fromToken) ? ""
							: ": the new term's token is not larger")
					+ ((this.after.compareTo(this.bound.plus(this.allowance)) <= 0) ? ""
							: ", later than the bound + " + Takeover.seconds(this.allowance) + " s");
		}

	}

	/** The ticks of {@code cron} after {@code after} up to the last of {@code ticks} that are not among them. */
	static int missedTicks(String cron, Instant after, List<Tick> ticks) {
		if (ticks.isEmpty()) {
			return 0;
		}
		CronExpression expression = CronExpression.parse(cron);
		Instant last = ticks.get(ticks.size() - 1).time();
		int expected = 0;
		ZonedDateTime next = expression.next(after.atZone(ZoneId.systemDefault()));
		while (next != null && !next.toInstant().isAfter(last)) {
			expected++;
			next = expression.next(next);
		}
		return Math.max(0, expected - ticks.size());
	}

	/** This report with the long job's move after a kill. */
	DemoReport withTakeover(Takeover moved) {
		return withMoves(moved, null, null);
	}

	/** This report with the long job's move after a kill, and the leader group's moves. */
	DemoReport withMoves(Takeover moved, @Nullable LeaderMove handedOver, @Nullable LeaderMove takenOver) {
		return new DemoReport(this.instances, this.setup, this.expectedBackend, this.backend, this.load, this.skus,
				this.ticks, this.missedTicks, this.requiredTicks, this.locks, moved, handedOver, takenOver);
	}

	/**
	 * The guarantees that failed, as sentences; empty when all held.
	 */
	public List<String> failures() {
		List<String> failures = new ArrayList<>();
		if (!this.expectedBackend.equals(this.backend)) {
			failures.add("the instances ran on lock backend " + this.backend + ", not on " + this.expectedBackend
					+ " that " + this.setup + " asks for");
		}
		long oversold = oversold();
		if (oversold > 0) {
			failures.add("oversold " + oversold + " units: reservations recorded beyond what the stock accounts for");
		}
		if (this.load.errors() > 0) {
			failures.add(this.load.errors() + " requests failed; first: " + this.load.firstError());
		}
		else if (this.load.reserved() != recorded()) {
			failures.add("clients were told of " + this.load.reserved() + " reservations but " + recorded()
					+ " were recorded");
		}
		long totalStock = this.skus.stream().mapToLong(SkuStock::initial).sum();
		if (this.load.requests() > 0 && totalStock > 0 && recorded() == 0) {
			failures.add("no reservation succeeded although there was stock");
		}
		if (this.ticks.size() < this.requiredTicks) {
			failures.add("observed " + this.ticks.size() + " ticks of the scheduled job, expected at least "
					+ this.requiredTicks);
		}
		for (Tick tick : this.ticks) {
			if (tick.runs() != 1) {
				failures.add("tick " + time(tick.time()) + " ran " + tick.runs() + " times, on " + tick.instances());
			}
		}
		if (this.takeover != null && !this.takeover.held()) {
			failures.add(this.takeover.describe());
		}
		for (LeaderMove move : leaderMoves()) {
			if (!move.held()) {
				failures.add(move.describe());
			}
		}
		return failures;
	}

	private List<LeaderMove> leaderMoves() {
		List<LeaderMove> moves = new ArrayList<>();
		if (this.handover != null) {
			moves.add(this.handover);
		}
		if (this.leaderTakeover != null) {
			moves.add(this.leaderTakeover);
		}
		return moves;
	}

	long oversold() {
		return this.skus.stream().mapToLong(SkuStock::oversold).sum();
	}

	long recorded() {
		return this.skus.stream().mapToLong(SkuStock::recorded).sum();
	}

	/**
	 * Prints the report and the verdict.
	 */
	public void print(PrintStream out) {
		Load load = this.load;
		out.println();
		out.printf("Holdfast demo report: %d instances, %s, lock backend %s%s%n", this.instances, this.setup,
				this.backend, mark(this.expectedBackend.equals(this.backend)));
		out.printf("  requests       %d (%d concurrent) in %.1f s: %d reserved, %d sold out, %d lock timeouts, "
				+ "%d backend failures, %d fenced, %d errors%n", load.requests(), load.concurrency(),
				load.elapsed().toMillis() / 1000.0, load.reserved(), load.soldOut(), load.lockTimeouts(),
				load.backendFailures(), load.fenced(), load.errors());
		for (SkuStock sku : this.skus) {
			out.printf("  reservations   %-10s %d recorded, stock %d -> %d%n", sku.sku(), sku.recorded(),
					sku.initial(), sku.remaining());
		}
		out.printf("  oversold       %d%s%n", oversold(), mark(oversold() == 0));
		if (load.fenced() > 0) {
			out.printf("  fenced         %d writes rejected for a stale fencing token (%d leases lost): %s%n",
					load.fenced(), this.locks.leasesLost(),
					(this.locks.leasesLost() > 0) ? "the guard stopped holders whose lease had expired"
							: "WARNING: no lease was lost, so a later holder got a lower token (see the WARNs "
									+ "in the instance logs)");
		}
		String window = this.ticks.isEmpty() ? ""
				: " (" + time(this.ticks.get(0).time()) + " .. " + time(this.ticks.get(this.ticks.size() - 1).time())
						+ ")";
		out.printf("  ticks          %d%s, %d missed%s%n", this.ticks.size(), window, this.missedTicks,
				mark(this.ticks.size() >= this.requiredTicks));
		boolean oneEach = this.ticks.stream().allMatch((tick) -> tick.runs() == 1);
		out.printf("  runs per tick  %s%s%n", runsPerTick(), mark(oneEach));
		out.printf("  waits          %d of %d inventory acquisitions waited for another holder (longest %d ms), "
				+ "%d gave up%n", this.locks.waited(), this.locks.acquired(), this.locks.maxWaitMillis(),
				this.locks.gaveUp());
		out.printf("  skips          %d job runs, %d ticks skipped by instances that found the tick taken%n",
				this.locks.jobRuns(), this.locks.skips());
		out.printf("  takeover       %s%n", (this.takeover != null)
				? this.takeover.describe() + mark(this.takeover.held()) : "not shown: it needs 3 instances");
		for (LeaderMove move : leaderMoves()) {
			out.printf("  leader %-7s %s%n", move.cause(), move.describe() + mark(move.held()));
		}
		List<String> failures = failures();
		if (failures.isEmpty()) {
			out.println("RESULT: every guarantee held");
		}
		else {
			out.println("RESULT: FAILED");
			failures.forEach((failure) -> out.println("  - " + failure));
		}
	}

	private String runsPerTick() {
		Map<Integer, Long> counts = new java.util.TreeMap<>();
		this.ticks.forEach((tick) -> counts.merge(tick.runs(), 1L, Long::sum));
		if (counts.isEmpty()) {
			return "-";
		}
		if (counts.size() == 1 && counts.containsKey(1)) {
			return "1 each";
		}
		List<String> parts = new ArrayList<>();
		counts.forEach((runs, ticks) -> parts.add(ticks + " ticks ran " + runs + "x"));
		return String.join(", ", parts);
	}

	private static String mark(boolean ok) {
		return ok ? "   OK" : "   FAILED";
	}

	private static String time(Instant instant) {
		return TIME.format(LocalTime.ofInstant(instant, ZoneId.systemDefault()));
	}

}
