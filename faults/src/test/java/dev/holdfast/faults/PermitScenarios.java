package dev.holdfast.faults;

import java.time.Duration;
import java.util.Optional;

import dev.holdfast.Lease;

/**
 * The permit faults of issue 31 on a {@link PermitRun} (a semaphore of 2 permits), their figures
 * recorded and their checks made (softly) through a {@link LeaderScenarios}, which writes the table.
 */
final class PermitScenarios {

	/** What a killed holder's permit may take beyond its lease to come back: the waiter's polling and a loaded machine. */
	static final long MARGIN_MS = 1000;

	private PermitScenarios() {
	}

	/**
	 * One round: this JVM holds one permit, a holder JVM takes the other; a third call finds none;
	 * the holder is SIGKILLed right after it logged a renewal (a whole lease left: the worst case);
	 * this JVM then waits for a permit. Its permit must come back within the lease plus
	 * {@value #MARGIN_MS} ms, and not before the holder's own validity end.
	 */
	static void killHolder(LeaderScenarios scenarios, String backend, PermitRun run) throws Exception {
		try (Lease mine = run.tryPermit(Duration.ofSeconds(30)).orElseThrow()) {
			PermitRun.Holder holder = run.startHolder();
			Optional<Lease> third = run.tryPermit(Duration.ZERO);
			third.ifPresent(Lease::close);
			scenarios.softly.assertThat(third).as(backend + ": a permit while both are held").isEmpty();
			run.awaitRenewal(holder);
			long killedAt = run.kill(holder);
			long validUntil = run.lastValidityEnd(holder);
			Lease back = run.tryPermit(Duration.ofMillis(run.leaseMs() + 15_000))
				.orElseThrow(() -> new AssertionError(backend + ": the killed holder's permit did not come back within "
						+ (run.leaseMs() + 15_000) + " ms"));
			long takenAt = System.nanoTime();
			back.close();
			double returned = (takenAt - killedAt) / 1e6;
			scenarios.record(backend, "SIGKILL → its permit taken by another", returned);
			scenarios.record(backend, "holder's validity end → its permit taken", (takenAt - validUntil) / 1e6);
			scenarios.softly.assertThat(returned)
				.as(backend + ": a killed holder's permit back, ms after the kill")
				.isLessThanOrEqualTo((double) run.leaseMs() + MARGIN_MS);
			scenarios.softly.assertThat(takenAt)
				.as(backend + ": the permit taken after the killed holder's own validity end")
				.isGreaterThanOrEqualTo(validUntil);
		}
	}

}
