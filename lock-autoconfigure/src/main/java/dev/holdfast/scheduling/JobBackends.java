package dev.holdfast.scheduling;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.scheduling.TaskScheduler;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockListener;
import dev.holdfast.support.CompositeLockListener;
import dev.holdfast.core.LockEngine;
import dev.holdfast.scan.BackendChoice;

/**
 * The job locks of each backend a job can name (NBK-4 in docs/DESIGN.md): a job's lock and its
 * ticks are on its backend, judged by that backend's clock. One {@link JobLocks} and one
 * {@link TickClock} per backend, made when its first job is bound, after the refresh (its tick
 * clock when the health indicator or the gauge asks for it, if sooner).
 */
final class JobBackends {

	private final @Nullable BackendChoice<@Nullable LockEngine> engines;

	/** One per backend: bounded by the backends configured. */
	private final Map<String, JobLocks> locks = new ConcurrentHashMap<>();

	/** One per backend, as {@link #locks}: each backend's clock is its own. */
	private final Map<String, TickClock> tickClocks = new ConcurrentHashMap<>();

	/**
	 * @param engines the engine of each backend, {@code null} for the default backend's only,
	 * looked up as the single {@link LockEngine} bean
	 */
	JobBackends(@Nullable BackendChoice<@Nullable LockEngine> engines) {
		this.engines = engines;
	}

	/** Checks at startup that the job's backend is configured. */
	void check(JobDefinition definition) {
		((this.engines != null) ? this.engines : BackendChoice.only(Boolean.TRUE)).check(definition.backend(),
				"@SingleInstanceScheduled on " + definition.description());
	}

	/**
	 * What the tick claims on {@code backend} ({@link BackendChoice#DEFAULT} for the default one)
	 * measured of its clock, made at the first call.
	 * @throws IllegalArgumentException for a backend not configured
	 */
	TickClock tickClock(String backend) {
		if (!backend.equals(BackendChoice.DEFAULT) && (this.engines == null || !this.engines.names().contains(backend))) {
			throw new IllegalArgumentException("No backend '" + backend + "' (holdfast.backends." + backend + ")");
		}
		return this.tickClocks.computeIfAbsent(backend, (name) -> new TickClock());
	}

	/** The job locks of {@code backend}, made at the first call. */
	JobLocks locks(String backend, ListableBeanFactory factory, JobTasks tasks, Duration tolerance) {
		JobLocks current = this.locks.get(backend);
		if (current != null) {
			return current;
		}
		// Looked up outside the map's lock: a bean lookup may create the engine.
		LockEngine engine = (backend.isEmpty() || this.engines == null)
				? factory.getBeanProvider(LockEngine.class).getIfUnique() : this.engines.get(backend);
		if (engine == null) {
			throw new LockConfigurationException(
					"@SingleInstanceScheduled jobs need Holdfast's lock engine, but there is no single LockEngine "
							+ "bean: Holdfast's own backs off when the application defines a LockTemplate bean",
					"Keep Holdfast's auto-configuration enabled and define no LockTemplate bean of your own (or "
							+ "define a DefaultLockTemplate), or disable the jobs with "
							+ "holdfast.scheduling.enabled=false.");
		}
		TaskScheduler scheduler = tasks.useScheduler(factory);
		List<LockListener> listeners = factory.getBeanProvider(LockListener.class).orderedStream().toList();
		JobLocks made = new JobLocks(engine, backend.isEmpty() ? engine.backend().name() : backend,
				CompositeLockListener.of(listeners), scheduler, tickClock(backend), tolerance);
		JobLocks raced = this.locks.putIfAbsent(backend, made);
		return (raced != null) ? raced : made;
	}

}
