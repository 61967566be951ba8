package dev.holdfast.scheduling;

import java.time.Clock;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
 * The scheduled tasks of the jobs of a {@link SingleInstanceScheduledBeanPostProcessor}, on
 * Spring's {@link ScheduledTaskRegistrar}: registered before the refresh and started with it,
 * scheduled at once for beans created later; all of them listed, and cancelled when the context
 * closes, with the scheduler made here.
 */
final class JobTasks {

	/** Bean name of a scheduler that Spring's own scheduling would pick among several. */
	static final String DEFAULT_SCHEDULER_NAME = "taskScheduler";

	private final ScheduledTaskRegistrar registrar = new ScheduledTaskRegistrar();

	/**
	 * Tasks of beans created after the refresh (lazy, prototypes), which the registrar schedules
	 * but does not list or cancel.
	 */
	private final Set<ScheduledTask> lateTasks = ConcurrentHashMap.newKeySet();

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

	/** Starts the tasks registered so far. */
	void start() {
		this.registrar.afterPropertiesSet();
	}

	/** The scheduler the tasks run on, once chosen. */
	@Nullable TaskScheduler scheduler() {
		return this.registrar.getScheduler();
	}

	/**
	 * Schedules the task of {@code job}: registered, to start with the others, or {@code now} (a
	 * bean created after the refresh), tracked then to be listed and cancelled.
	 */
	void schedule(SingleInstanceJob job, boolean now) {
		JobDefinition definition = job.definition();
		if (definition.cron() != null) {
			CronTask task = new CronTask(job, (TickCronTrigger) triggerOf(job, definition));
			if (now) {
				addLate(this.registrar.scheduleCronTask(task));
			}
			else {
				this.registrar.addCronTask(task);
			}
		}
		else if (definition.fixedRate() != null) {
			TriggerTask task = new TriggerTask(job, triggerOf(job, definition));
			if (now) {
				addLate(this.registrar.scheduleTriggerTask(task));
			}
			else {
				this.registrar.addTriggerTask(task);
			}
		}
		else if (definition.fixedDelay() != null) {
			FixedDelayTask task = new FixedDelayTask(job, definition.fixedDelay(), definition.initialDelay());
			if (now) {
				addLate(this.registrar.scheduleFixedDelayTask(task));
			}
			else {
				this.registrar.addFixedDelayTask(task);
			}
		}
	}

	private void addLate(@Nullable ScheduledTask task) {
		if (task != null) {
			this.lateTasks.add(task);
			// Scheduled while the context closed: destroy() either saw it in the set or is seen here.
			if (this.closed) {
				task.cancel();
				this.lateTasks.remove(task);
			}
		}
	}

	private static TickTrigger triggerOf(SingleInstanceJob job, JobDefinition definition) {
		TickTrigger trigger = job.trigger();
		if (trigger == null) {
			throw new IllegalStateException("Job " + definition.description() + " has no trigger");
		}
		return trigger;
	}

	/** Every task scheduled, those of late beans included. */
	Set<ScheduledTask> scheduledTasks() {
		Set<ScheduledTask> tasks = this.registrar.getScheduledTasks();
		if (this.lateTasks.isEmpty()) {
			return tasks;
		}
		Set<ScheduledTask> all = new LinkedHashSet<>(tasks);
		all.addAll(this.lateTasks);
		return Collections.unmodifiableSet(all);
	}

	/** Cancels every task and shuts down the scheduler made here. */
	void destroy() {
		this.closed = true;
		this.registrar.destroy();
		this.lateTasks.forEach(ScheduledTask::cancel);
		this.lateTasks.clear();
		ThreadPoolTaskScheduler own = this.ownScheduler;
		if (own != null) {
			own.destroy();
		}
	}

}
