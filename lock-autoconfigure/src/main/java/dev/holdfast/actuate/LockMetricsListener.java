package dev.holdfast.actuate;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import dev.holdfast.LockListener;

/**
 * Records what Holdfast's locks do as Micrometer meters. Every
 * meter is tagged with the lock {@code name} (never the evaluated key, whose values are
 * unbounded) and the {@code backend}, and every meter of a lock also with its {@code mode}:
 * {@code exclusive}, {@code permit} or {@code read}, as the observations are (OBS-14). It records
 * from the {@link LockListener} methods that are told the mode, which the engine calls; the ones
 * without it record nothing here.
 * <ul>
 * <li>{@value #ACQUIRE} (timer): time to acquire or give up, tagged {@code outcome} =
 * {@code acquired}, {@code not_acquired} or {@code failed};</li>
 * <li>{@value #HELD} (timer): how long leases were held, recorded at release;</li>
 * <li>{@value #LOST} (counter): leases lost because they could not be renewed;</li>
 * <li>{@value #RELEASE_FAILED} (counter): releases that failed (the lock then expires on the
 * backend after its time to live);</li>
 * <li>{@value #SKIPPED} (counter): scheduled ticks not run on this instance, tagged
 * {@code reason}: {@code ran-elsewhere} (normal) or the reason of a drop.</li>
 * </ul>
 * When a {@link LockObservationListener} feeds a registry with a meter observation handler, the
 * observations produce the two timers (with their own tags); this listener is then created
 * {@linkplain #LockMetricsListener(MeterRegistry, boolean) without timers}, so that no timer is
 * registered twice with different tag keys.
 */
public class LockMetricsListener implements LockListener {

	/** Timer of acquisitions. */
	public static final String ACQUIRE = "holdfast.lock.acquire";

	/** Timer of lease hold times. */
	public static final String HELD = "holdfast.lock.held";

	/** Counter of lost leases. */
	public static final String LOST = "holdfast.lock.lost";

	/** Counter of failed releases. */
	public static final String RELEASE_FAILED = "holdfast.lock.release.failed";

	/** Counter of skipped scheduled ticks. */
	public static final String SKIPPED = "holdfast.scheduled.skipped";

	private final MeterRegistry registry;

	private final boolean timers;

	/**
	 * Records every meter into {@code registry}.
	 */
	public LockMetricsListener(MeterRegistry registry) {
		this(registry, true);
	}

	/**
	 * Records into {@code registry}: the counters, and the {@value #ACQUIRE} and {@value #HELD}
	 * timers only if {@code timers} is true.
	 */
	public LockMetricsListener(MeterRegistry registry, boolean timers) {
		this.registry = registry;
		this.timers = timers;
	}

	/** Whether this listener records the {@value #ACQUIRE} and {@value #HELD} timers. */
	public boolean recordsTimers() {
		return this.timers;
	}

	@Override
	public void acquired(String name, String backend, String mode, Duration waited) {
		acquisition(name, backend, mode, "acquired", waited);
	}

	@Override
	public void notAcquired(String name, String backend, String mode, Duration waited) {
		acquisition(name, backend, mode, "not_acquired", waited);
	}

	@Override
	public void failed(String name, String backend, String mode, Duration waited, RuntimeException ex) {
		acquisition(name, backend, mode, "failed", waited);
	}

	@Override
	public void released(String name, String backend, String mode, Duration held) {
		if (!this.timers) {
			return;
		}
		Timer.builder(HELD)
			.description("How long Holdfast leases were held, recorded at release")
			.tag("name", name)
			.tag("backend", backend)
			.tag("mode", mode)
			.register(this.registry)
			.record(held);
	}

	@Override
	public void leaseLost(String name, String backend, String mode) {
		Counter.builder(LOST)
			.description("Holdfast leases lost because they could not be renewed")
			.tag("name", name)
			.tag("backend", backend)
			.tag("mode", mode)
			.register(this.registry)
			.increment();
	}

	@Override
	public void releaseFailed(String name, String backend, String mode, RuntimeException ex) {
		Counter.builder(RELEASE_FAILED)
			.description("Holdfast releases that failed; those locks expire on the backend after their time to live")
			.tag("name", name)
			.tag("backend", backend)
			.tag("mode", mode)
			.register(this.registry)
			.increment();
	}

	/** The ticks of a job skipped on this instance, by reason, as {@value #SKIPPED} counted them. */
	public static Function<String, Map<String, Long>> skipCounts(MeterRegistry registry) {
		return (name) -> {
			Map<String, Long> counts = new TreeMap<>();
			for (Counter counter : registry.find(SKIPPED).tag("name", name).counters()) {
				counts.merge(String.valueOf(counter.getId().getTag("reason")), (long) counter.count(), Long::sum);
			}
			return counts;
		};
	}

	/**
	 * Counts a scheduled tick that did not run here.
	 * @param name the job name
	 * @param backend the backend name
	 * @param reason {@code ran-elsewhere}, or why the tick was dropped
	 */
	@Override
	public void tickSkipped(String name, String backend, String reason) {
		Counter.builder(SKIPPED)
			.description("Scheduled ticks not run on this instance: reason ran-elsewhere is normal, others are drops")
			.tag("name", name)
			.tag("backend", backend)
			.tag("reason", reason)
			.register(this.registry)
			.increment();
	}

	private void acquisition(String name, String backend, String mode, String outcome, Duration waited) {
		if (!this.timers) {
			return;
		}
		Timer.builder(ACQUIRE)
			.description("Time Holdfast took to acquire a lock or give up")
			.tag("name", name)
			.tag("backend", backend)
			.tag("mode", mode)
			.tag("outcome", outcome)
			.register(this.registry)
			.record(waited);
	}

}
