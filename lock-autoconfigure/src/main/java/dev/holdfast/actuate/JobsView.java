package dev.holdfast.actuate;

import java.security.Principal;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.SecurityContext;

import dev.holdfast.LockBackendException;
import dev.holdfast.core.LockEngine;
import dev.holdfast.scheduling.ScheduledJobs;
import dev.holdfast.scheduling.ScheduledJobs.Job;
import dev.holdfast.scheduling.ScheduledJobs.RunNow;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.TickClaims;

/**
 * The {@code locks/jobs} view: each {@code @SingleInstanceScheduled} job of this instance, with
 * what the backend holds of it for the whole cluster: the last tick claimed anywhere (its tick
 * record) and the instance that holds its job lock (running, or keeping it for
 * {@code lockAtLeastFor} after its run); and its ticks this instance skipped, by reason. And an
 * operator's run of a job now ({@link #runNow}).
 */
public final class JobsView {

	private static final Log logger = LogFactory.getLog(LocksEndpoint.class);

	private final LockEngine engine;

	private final ScheduledJobs jobs;

	private final Function<String, Map<String, Long>> skipped;

	/**
	 * @param skipped the ticks of a job this instance skipped, by reason
	 * ({@link LockMetricsListener#skipCounts})
	 */
	public JobsView(LockEngine engine, ScheduledJobs jobs, Function<String, Map<String, Long>> skipped) {
		this.engine = engine;
		this.jobs = jobs;
		this.skipped = skipped;
	}

	JobsDescriptor describe() {
		List<JobDescriptor> described = this.jobs.jobs().stream().map(this::describe).toList();
		return new JobsDescriptor(this.engine.backendName(), described);
	}

	/**
	 * Runs job {@code name} once now on this instance unless its job lock is held
	 * ({@link ScheduledJobs#runNow}); logged at INFO with the caller's principal.
	 * @param instance this instance's name, the holder of a run started here
	 */
	JobRunDescriptor runNow(SecurityContext securityContext, String name, String instance) {
		Principal principal = securityContext.getPrincipal();
		String caller = (principal != null) ? principal.getName() : "an unauthenticated caller";
		RunNow outcome;
		try {
			outcome = this.jobs.runNow(name, caller);
		}
		catch (LockBackendException ex) {
			logger.warn(caller + " asked to run job '" + name + "' now: not started, the lock backend failed: "
					+ ex.getMessage());
			return new JobRunDescriptor(name, "failed", null, "The lock backend failed; the job did not run: "
					+ ex.getMessage());
		}
		return switch (outcome) {
			case STARTED -> new JobRunDescriptor(name, outcome.tag(), instance, null);
			case BUSY -> new JobRunDescriptor(name, outcome.tag(), holder(engineOf(name), name),
					"Its lock is held: a run is in progress, or its lock is kept for lockAtLeastFor after one");
			case STOPPING -> new JobRunDescriptor(name, outcome.tag(), null,
					"This instance's scheduling is stopped (the application is shutting down)");
			case UNKNOWN -> unknown(name, this.jobs.jobs().stream().map(Job::name).toList());
		};
	}

	/** The answer to a run now of a job that this instance does not have. */
	static JobRunDescriptor unknown(String name, List<String> known) {
		return new JobRunDescriptor(name, RunNow.UNKNOWN.tag(), null, "No @SingleInstanceScheduled job '" + name
				+ "' on this instance; its jobs: " + (known.isEmpty() ? "none" : String.join(", ", known)));
	}

	private JobDescriptor describe(Job job) {
		LockEngine engine = (job.engine() != null) ? job.engine() : this.engine;
		String key = engine.keyFor(job.name(), null);
		Instant lastTick = null;
		BackendLock holder = null;
		String note = null;
		try {
			if (job.ticks() && engine.backend() instanceof TickClaims claims) {
				lastTick = claims.lastClaimedTick(key);
			}
			holder = holderLock(engine, key);
		}
		catch (LockBackendException ex) {
			note = "The backend could not be read: " + ex.getMessage();
		}
		return new JobDescriptor(job.name(), job.method(), job.trigger(), job.zone().getId(), job.nextTick(),
				job.lockAtMostFor().toString(), job.lockAtLeastFor().toString(), lastTick,
				(holder != null) ? holder.instance() : null, (holder != null) ? holder.fencingToken() : null,
				this.skipped.apply(job.name()), note, (engine == this.engine) ? null : job.backend());
	}

	/** The engine of job {@code name}'s backend (NBK-4): the default one's for an unknown job. */
	private LockEngine engineOf(String name) {
		return this.jobs.jobs()
			.stream()
			.filter((job) -> job.name().equals(name) && job.engine() != null)
			.map(Job::engine)
			.findFirst()
			.orElse(this.engine);
	}

	private static @Nullable BackendLock holderLock(LockEngine engine, String key) {
		if (!(engine.backend() instanceof ClusterLocks locks)) {
			return null;
		}
		return locks.listLocks(key, 16).locks().stream().filter((lock) -> lock.key().equals(key)).findFirst()
			.orElse(null);
	}

	/** The instance holding job {@code name}'s lock, if the backend tells and can be read. */
	private static @Nullable String holder(LockEngine engine, String name) {
		try {
			BackendLock lock = holderLock(engine, engine.keyFor(name, null));
			return (lock != null) ? lock.instance() : null;
		}
		catch (LockBackendException ex) {
			return null;
		}
	}

	/**
	 * The jobs of this instance.
	 *
	 * @param backend the backend name
	 * @param jobs the jobs, by name
	 */
	public record JobsDescriptor(String backend, List<JobDescriptor> jobs) implements OperationResponseBody {
	}

	/**
	 * One job.
	 *
	 * @param name the job name, its lock name
	 * @param method the method it runs
	 * @param trigger its cron expression, fixed rate or fixed delay
	 * @param zone the zone of its cron expression
	 * @param nextTick when this instance's scheduler fires it next
	 * @param lockAtMostFor the cap of one run
	 * @param lockAtLeastFor how long its lock is kept at least after a run starts
	 * @param lastClaimedTick the last tick claimed anywhere in the cluster, from the backend's
	 * record; {@code null} when none lives or the backend does not read it (Redlock, ZooKeeper)
	 * @param lockHolder the instance holding the job lock now: running it, or keeping its lock
	 * for {@code lockAtLeastFor}; {@code null} when nobody holds it
	 * @param lockToken the fencing token of that holder's run
	 * @param skipped ticks this instance did not run, by reason ({@code ran-elsewhere} is normal)
	 * @param note why the backend's part is missing
	 * @param backend the named backend of its lock and ticks ({@code holdfast.backends.<name>});
	 * absent for the default backend, as before named backends
	 */
	public record JobDescriptor(String name, String method, String trigger, String zone, @Nullable Instant nextTick,
			String lockAtMostFor, String lockAtLeastFor, @Nullable Instant lastClaimedTick, @Nullable String lockHolder,
			@Nullable Long lockToken, Map<String, Long> skipped, @Nullable String note,
			@Nullable String backend) {
	}

	/**
	 * The answer to a run of a job now.
	 *
	 * @param job the job name asked for
	 * @param outcome {@code started} (on this instance), {@code busy} (its lock is held),
	 * {@code stopping} (this instance is shutting down), {@code unknown} (no such job here) or
	 * {@code failed} (the backend failed)
	 * @param holder the instance that holds the job lock: this one when started, the busy job's
	 * holder when the backend tells
	 * @param reason why it did not start
	 */
	public record JobRunDescriptor(String job, String outcome, @Nullable String holder, @Nullable String reason)
			implements OperationResponseBody {
	}

}
