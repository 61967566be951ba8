package dev.holdfast.scheduling;

import java.time.Clock;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.ScheduledExecutorService;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.boot.task.ThreadPoolTaskSchedulerBuilder;
import org.springframework.scheduling.TaskScheduler;
import org.springframework.scheduling.concurrent.ConcurrentTaskScheduler;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import org.springframework.scheduling.config.CronTask;
import org.springframework.scheduling.config.FixedDelayTask;
import org.springframework.scheduling.config.ScheduledTask;
import org.springframework.scheduling.config.ScheduledTaskRegistrar;
import org.springframework.scheduling.config.TriggerTask;

/**
 * The scheduled tasks of the jobs of a {@link SingleInstanceScheduledBeanPostProcessor}, made by
 * Spring's {@link ScheduledTaskRegistrar} on the scheduler chosen here: listed, and cancelled when
 * the context closes, with the scheduler made here.
 */
final class JobTasks {

	/** Bean name of a scheduler that Spring's own scheduling would pick among several. */
	static final String DEFAULT_SCHEDULER_NAME = "taskScheduler";

	private final ScheduledTaskRegistrar registrar = new ScheduledTaskRegistrar();

	/** The tasks scheduled, in order; the registrar lists and cancels only those it scheduled itself. */
	private final Set<ScheduledTask> tasks = new CopyOnWriteArraySet<>();

	/** The job of each task in {@link #tasks}, for the operators' view ({@link ScheduledJobs}). */
	private final Map<ScheduledTask, SingleInstanceJob> jobs = new ConcurrentHashMap<>();

	/** Set by {@link #destroy()}: a job scheduled late after it is cancelled at once. */
	private volatile boolean closed;

	private volatile @Nullable ThreadPoolTaskScheduler ownScheduler;

	/**
	 * Runs the tasks on the application's {@link TaskScheduler} bean (the only one, or the one
	 * named {@code taskScheduler}), else on its {@link ScheduledExecutorService}; without either,
	 * on a {@link ThreadPoolTaskScheduler} of its own, built with Boot's
	 * {@link ThreadPoolTaskSchedulerBuilder} when there is one and set to the application's
	 * {@link Clock} bean when there is one.
	 * @return the scheduler
	 */
	TaskScheduler useScheduler(ListableBeanFactory factory) {
		TaskScheduler scheduler = factory.getBeanProvider(TaskScheduler.class).getIfUnique();
		if (scheduler == null && factory.containsBean(DEFAULT_SCHEDULER_NAME)
				&& factory.isTypeMatch(DEFAULT_SCHEDULER_NAME, TaskScheduler.class)) {
			scheduler = factory.getBean(DEFAULT_SCHEDULER_NAME, TaskScheduler.class);
		}
		if (scheduler == null) {
			ScheduledExecutorService executor = factory.getBeanProvider(ScheduledExecutorService.class).getIfUnique();
			scheduler = (executor != null) ? new ConcurrentTaskScheduler(executor) : ownScheduler(factory);
		}
		this.registrar.setTaskScheduler(scheduler);
		return scheduler;
	}

	private TaskScheduler ownScheduler(ListableBeanFactory factory) {
		ThreadPoolTaskSchedulerBuilder builder = builder(factory);
		ThreadPoolTaskScheduler own = (builder != null) ? builder.build() : new ThreadPoolTaskScheduler();
		if (builder == null) {
			own.setThreadNamePrefix("holdfast-scheduling-");
		}
		Clock clock = factory.getBeanProvider(Clock.class).getIfUnique();
		if (clock != null) {
			own.setClock(clock);
		}
		own.initialize();
		this.ownScheduler = own;
		return own;
	}

	private static @Nullable ThreadPoolTaskSchedulerBuilder builder(ListableBeanFactory factory) {
		return factory.getBeanProvider(ThreadPoolTaskSchedulerBuilder.class).getIfUnique();
	}

	/** The scheduler the tasks run on, once chosen. */
	@Nullable TaskScheduler scheduler() {
		return this.registrar.getScheduler();
	}

	/**
	 * Schedules the task of {@code job} on the scheduler {@linkplain #useScheduler chosen} before,
	 * to be listed and cancelled with the others.
	 */
	void schedule(SingleInstanceJob job) {
		JobDefinition definition = job.definition();
		TickTrigger trigger = job.trigger();
		ScheduledTask task;
		if (trigger instanceof TickCronTrigger cron) {
			task = this.registrar.scheduleCronTask(new CronTask(job, cron));
		}
		else if (trigger != null) {
			task = this.registrar.scheduleTriggerTask(new TriggerTask(job, trigger));
		}
		else {
			// A job without ticks has a fixed delay (JobDefinition).
			task = this.registrar.scheduleFixedDelayTask(new FixedDelayTask(job,
					Objects.requireNonNull(definition.fixedDelay()), definition.initialDelay()));
		}
		if (task != null) {
			this.jobs.put(task, job);
			this.tasks.add(task);
			// Scheduled while the context closed: destroy() either saw it in the set or is seen here.
			if (this.closed) {
				task.cancel();
				this.tasks.remove(task);
				this.jobs.remove(task);
			}
		}
	}

	/** Every task scheduled. */
	Set<ScheduledTask> scheduledTasks() {
		return Collections.unmodifiableSet(this.tasks);
	}

	/** The job of each task scheduled. */
	Map<ScheduledTask, SingleInstanceJob> jobs() {
		return Collections.unmodifiableMap(this.jobs);
	}

	/** Cancels every task and shuts down the scheduler made here. */
	void destroy() {
		this.closed = true;
		this.tasks.forEach(ScheduledTask::cancel);
		this.tasks.clear();
		this.jobs.clear();
		ThreadPoolTaskScheduler own = this.ownScheduler;
		if (own != null) {
			own.destroy();
		}
	}

}
