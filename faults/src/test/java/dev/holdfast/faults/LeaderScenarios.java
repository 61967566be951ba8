package dev.holdfast.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.assertj.core.api.SoftAssertions;

/**
 * The leader faults, each on a {@link LeaderRun}, checked with soft assertions (so that a failure
 * still leaves the figures), their figures collected per backend and written as a table to
 * {@code target/faults/<file>.md}. Stamps are the host's monotonic clock, shared by every process.
 */
final class LeaderScenarios {

	/** Curator's log line when a session expired. */
	private static final String SESSION_LOST = "State change: LOST";

	private final String file;

	final SoftAssertions softly = new SoftAssertions();

	/** Figure name → measured values, ms, per backend. */
	private final Map<String, Map<String, List<Double>>> figures = new LinkedHashMap<>();

	private final List<String> notes = new ArrayList<>();

	LeaderScenarios(String file) {
		this.file = file;
	}

	/**
	 * SIGKILL on the leader just after it renewed (the worst case: a whole lease left), then a new
	 * instance in its place. Takeover = kill → another's grant, at most the lease time plus 1 s.
	 */
	void killLeader(String backend, LeaderRun run) throws Exception {
		LeaderRun.Instance leader = run.awaitLeader(true);
		long killedAt = run.kill(leader);
		long granted = run.awaitGrant(killedAt, leader, Duration.ofMillis(run.leaseMs() + 15_000)).start();
		double takeover = ms(granted - killedAt);
		record(backend, "SIGKILL → another's grant", takeover);
		this.softly.assertThat(takeover).as(backend + ": takeover after SIGKILL, ms").isLessThanOrEqualTo(
				run.leaseMs() + 1000.0);
		run.replaceInstance();
	}

	/**
	 * SIGSTOP on the leader just after it renewed, until another instance was granted and wrote
	 * the fenced counter, then SIGCONT. Its term's validity end (logged by itself, monotonic) must
	 * come before the other's grant; once resumed it is revoked, and a write with its old token is
	 * rejected by the fenced resource.
	 */
	void pauseLeader(String backend, LeaderRun run) throws Exception {
		LeaderRun.Instance leader = run.awaitLeader(true);
		long token = run.token(leader);
		Signals.send(leader.pid(), "STOP");
		long stoppedAt = run.mark("FAULT SIGSTOP " + leader.pid());
		long resumedAt;
		long granted;
		try {
			LeaderHistory.Term next = run.awaitGrant(stoppedAt, leader, Duration.ofMillis(run.leaseMs() + 15_000));
			granted = next.start();
			String newToken = Long.toString(next.token());
			run.awaitEvent(leader, granted, (event) -> event.type().equals("WR") && event.fields()[0].equals(newToken)
					&& event.fields()[2].equals("ok"), Duration.ofSeconds(15));
		}
		finally {
			Signals.send(leader.pid(), "CONT");
			resumedAt = run.mark("HEAL SIGCONT " + leader.pid());
		}
		long revokedAt = run.awaitLine(leader, (line) -> line.contains(" REVOKE " + token + " "),
				Duration.ofSeconds(10));
		String stale;
		try (SharedResource resource = run.resource()) {
			stale = resource.write(Resource.FENCED, token, -1, true);
		}
		this.softly.assertThat(stale).as(backend + ": a write with the paused leader's token " + token).isEqualTo(
				"rejected");
		LeaderHistory.Term term = run.history().term(leader.pid(), token).orElseThrow();
		double validEndToGrant = ms(granted - term.validEnd());
		record(backend, "SIGSTOP: validity end → another's grant", validEndToGrant);
		record(backend, "SIGSTOP → another's grant", ms(granted - stoppedAt));
		record(backend, "SIGCONT → revoked event", ms(revokedAt - resumedAt));
		this.softly.assertThat(validEndToGrant)
			.as(backend + ": the paused leader's validity ended before another was granted (ms before the grant)")
			.isPositive();
		// The control: its revoked event came after the other's grant, so a leader that stopped its
		// work on the event alone ran on beside the new one; only isLeader() and the token protect.
		this.softly.assertThat(revokedAt).as(backend + ": the paused leader's revoked event came after the grant")
			.isGreaterThan(granted);
		long ownStale = Files.readAllLines(leader.log())
			.stream()
			.filter((line) -> line.contains(" WR " + token + " ") && line.endsWith(" rejected"))
			.count();
		note(backend + " SIGSTOP of the leader (token " + token + "): its own writes rejected after SIGCONT: "
				+ ownStale + "; revoked " + term.reason());
	}

	/**
	 * The leader cut off silently from the backend (iptables DROP, its group id only) until
	 * another was granted and at least {@code holdMs}. It must revoke itself by its validity end,
	 * and another be granted only after that revocation.
	 */
	void partitionLeader(String backend, LeaderRun run, long holdMs) throws Exception {
		LeaderRun.Instance leader = run.awaitLeader(true);
		long token = run.token(leader);
		long cutAt;
		long granted;
		try (Partition partition = Partition.client(FaultContext.clientGroup(leader.index()),
				run.backendPorts())) {
			cutAt = run.mark("FAULT partition " + leader.pid());
			granted = run.awaitGrant(cutAt, leader, Duration.ofMillis(run.leaseMs() + 15_000)).start();
			RedisNode.sleep(Math.max(0, holdMs - ms(System.nanoTime() - cutAt).longValue()));
		}
		run.mark("HEAL partition " + leader.pid());
		run.awaitLeader(false);
		LeaderHistory.Term term = run.history().term(leader.pid(), token).orElseThrow();
		this.softly.assertThat(term.revokedAt()).as(backend + ": the cut-off leader logged its revocation")
			.isPositive();
		double revokedBeforeEnd = ms(term.validEnd() - term.revokedAt());
		double revokedBeforeGrant = ms(granted - term.revokedAt());
		record(backend, "partition: revoked event → validity end", revokedBeforeEnd);
		record(backend, "partition: revoked event → another's grant", revokedBeforeGrant);
		record(backend, "partition → another's grant", ms(granted - cutAt));
		// The event is queued a tenth of the lease before the validity end; delivered on a loaded machine.
		this.softly.assertThat(revokedBeforeEnd).as(backend + ": revoked by its validity end (ms before it)")
			.isGreaterThan(-100.0);
		this.softly.assertThat(revokedBeforeGrant).as(backend + ": revoked before another was granted (ms before)")
			.isPositive();
		if (holdMs > 0) {
			// Past the session timeout: the instance's ZooKeeper session expired (Curator: LOST).
			long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
			while (!Files.readString(leader.output()).contains(SESSION_LOST) && System.nanoTime() < deadline) {
				RedisNode.sleep(50);
			}
			this.softly.assertThat(Files.readString(leader.output()))
				.as(backend + ": the cut-off leader's session expired")
				.contains(SESSION_LOST);
		}
		note(backend + " partition of the leader for " + Math.round(ms(System.nanoTime() - cutAt))
				+ " ms or more (token " + token + "): revoked " + term.reason());
	}

	/**
	 * The backend killed (SIGKILL) while a leader holds, started again on its data after 500 ms
	 * (Redis with {@code appendfsync always}; PostgreSQL; every ZooKeeper server). Leadership
	 * recovers: some instance logs a validity renewed after the restart.
	 */
	void restartBackend(String backend, LeaderRun run) throws Exception {
		LeaderRun.Instance leader = run.awaitLeader(false);
		long token = run.token(leader);
		long killedAt = run.mark("FAULT kill backend");
		run.restartBackend(500);
		long healed = run.mark("HEAL backend started");
		Checker.Event valid = run.awaitEvent(null, healed, (event) -> event.type().equals("VALID"),
				Duration.ofSeconds(30));
		record(backend, "backend killed → serving again", ms(healed - killedAt));
		record(backend, "backend serving again → a leader renewed or granted", ms(valid.nanos() - healed));
		note(backend + " backend restarted: " + ((valid.pid() == leader.pid()
				&& Long.parseLong(valid.fields()[0]) == token) ? "the leader kept its term" : "a new term"));
	}

	/**
	 * A rolling restart: three times, the instance that leads is stopped gracefully (SIGTERM: the
	 * term revoked, SHUTDOWN, and its lease released) and a new instance started in its place.
	 * Takeover = the stopped leader's revoked event → another's grant, at most 1 s.
	 */
	void rollingRestart(String backend, LeaderRun run) throws Exception {
		for (int step = 0; step < 3; step++) {
			LeaderRun.Instance leader = run.awaitLeader(false);
			long token = run.token(leader);
			long stoppedAt = run.stopGracefully(leader);
			long revokedAt = run.awaitLine(leader, (line) -> line.contains(" REVOKE " + token + " SHUTDOWN"),
					Duration.ofSeconds(5));
			long granted = run.awaitGrant(revokedAt, leader, Duration.ofSeconds(15)).start();
			double takeover = ms(granted - revokedAt);
			record(backend, "rolling restart: revoked (SHUTDOWN) → another's grant", takeover);
			record(backend, "rolling restart: SIGTERM → another's grant", ms(granted - stoppedAt));
			this.softly.assertThat(takeover).as(backend + ": takeover after a graceful stop, ms").isLessThanOrEqualTo(
					1000.0);
			run.replaceInstance();
		}
	}

	/** At most one leader at any time over the whole run, and every term with a larger token. */
	void oneLeaderAtATime(String backend, LeaderRun run) throws IOException {
		LeaderHistory history = run.history();
		this.softly.assertThat(history.overlaps()).as(backend + ": overlapping terms").isEmpty();
		this.softly.assertThat(history.tokenRegressions()).as(backend + ": token regressions").isZero();
		summary(backend, history);
	}

	/**
	 * The documented limit of a backend that forgets leases: the double leaders of the run, as
	 * figures, not failures; tokens must still grow (the fenced resource then rejects the old leader).
	 */
	void doubleLeadersRecorded(String backend, LeaderRun run) throws IOException {
		LeaderHistory history = run.history();
		for (LeaderHistory.Overlap overlap : history.overlaps()) {
			record(backend, "double leader", ms(overlap.nanos()));
		}
		this.softly.assertThat(history.tokenRegressions()).as(backend + ": token regressions").isZero();
		summary(backend, history);
	}

	private void summary(String backend, LeaderHistory history) {
		note(backend + ": " + history.terms().size() + " terms, " + history.overlaps().size() + " overlapping, "
				+ history.tokenRegressions() + " token regressions");
	}

	void record(String backend, String figure, double value) {
		this.figures.computeIfAbsent(figure, (key) -> new LinkedHashMap<>())
			.computeIfAbsent(backend, (key) -> new ArrayList<>())
			.add(value);
		System.out.printf(Locale.ROOT, "%s: %s %.0f ms%n", backend, figure, value);
	}

	void note(String note) {
		this.notes.add(note);
		System.out.println(note);
	}

	private static Double ms(long nanos) {
		return nanos / 1e6;
	}

	/** Writes the table (min / median / max and every value, ms) and the notes, then fails if any check failed. */
	void finish() throws IOException {
		StringBuilder out = new StringBuilder("| figure | backend | rounds | min / median / max ms | values ms |\n");
		out.append("|---|---|---|---|---|\n");
		this.figures.forEach((figure, byBackend) -> byBackend.forEach((backend, values) -> {
			List<Double> sorted = values.stream().sorted().toList();
			out.append(String.format(Locale.ROOT, "| %s | %s | %d | %.0f / %.0f / %.0f | %s |%n", figure, backend,
					values.size(), sorted.get(0), sorted.get(sorted.size() / 2), sorted.get(sorted.size() - 1),
					String.join(", ", values.stream().map((v) -> Long.toString(Math.round(v))).toList())));
		}));
		for (String note : this.notes) {
			out.append("\n- ").append(note);
		}
		System.out.println(out);
		Files.createDirectories(FaultSuite.reportDir());
		Files.writeString(FaultSuite.reportDir().resolve(this.file + ".md"), out.append('\n'));
		this.softly.assertAll();
	}

}
