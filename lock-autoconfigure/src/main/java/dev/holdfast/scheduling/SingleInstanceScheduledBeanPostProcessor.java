package dev.holdfast.scheduling;

import java.lang.reflect.Method;
import java.time.Clock;
import java.time.Duration;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.framework.AopInfrastructureBean;
import org.springframework.aop.framework.AopProxyUtils;
import org.springframework.aop.scope.ScopedProxyUtils;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.task.ThreadPoolTaskSchedulerBuilder;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.EmbeddedValueResolverAware;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextRefreshedEvent;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.scheduling.TaskScheduler;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import org.springframework.scheduling.config.ScheduledTask;
import org.springframework.scheduling.config.ScheduledTaskHolder;
import org.springframework.scheduling.config.ScheduledTaskRegistrar;
import org.springframework.util.ClassUtils;
import org.springframework.util.StringValueResolver;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.core.LockEngine;
import dev.holdfast.scan.AnnotatedMethodTypes;
import dev.holdfast.scan.BackendChoice;

/**
 * Finds {@link SingleInstanceScheduled} methods on beans and schedules them, once the context is
 * refreshed, with a {@link ScheduledTaskRegistrar} on Spring's scheduling infrastructure.
 * <ul>
 * <li>Declarations are validated when their bean is initialized: a bad one fails the context
 * with a {@link LockConfigurationException} naming the method. So do a job name used by two
 * beans, {@code @Scheduled} left on a job method, and a {@code final} or {@code private} job
 * method of a class-based proxy, which would run on the proxy object.</li>
 * <li>A job's default name is {@code SimpleName.method} of the bean's class, also for an
 * inherited method.</li>
 * <li>Beans with jobs are kept out of Boot's lazy initialization (by a filter of the
 * auto-configuration); a lazy or prototype job bean still not created when the context is
 * refreshed is named in a WARN: its jobs run only once it is created.</li>
 * <li>Jobs run on the application's {@link TaskScheduler} bean (the only one, or the one named
 * {@code taskScheduler}), else on its {@link ScheduledExecutorService}; without either, on a
 * {@link ThreadPoolTaskScheduler} owned by this post-processor, built with Boot's
 * {@link ThreadPoolTaskSchedulerBuilder} when there is one ({@code spring.task.scheduling.*})
 * and set to the application's {@link Clock} bean when there is one.</li>
 * <li>It works with or without {@code @EnableScheduling}: Spring's own processor does not see
 * this annotation, so nothing is registered twice.</li>
 * <li>Its tasks are listed as a {@link ScheduledTaskHolder} (the actuator's
 * {@code scheduledtasks} endpoint) and cancelled when the context closes.</li>
 * <li>When the context stops or closes, jobs stop starting runs in lifecycle phase
 * {@link #PHASE}, and the stop waits for the runs in progress, which finish with a working
 * backend; ticks that fire later end at once, silently.</li>
 * </ul>
 */
public class SingleInstanceScheduledBeanPostProcessor implements BeanPostProcessor, Ordered, BeanFactoryAware,
		ApplicationContextAware, EmbeddedValueResolverAware, ApplicationListener<ContextRefreshedEvent>,
		ScheduledTaskHolder, SmartLifecycle, DisposableBean {

	/**
	 * The lifecycle phase in which jobs stop starting runs: that of Boot's graceful web shutdown,
	 * before Holdfast's graceful lock shutdown and before connection factories stop.
	 */
	public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 1024;

	private static final Log logger = LogFactory.getLog(SingleInstanceScheduledBeanPostProcessor.class);

	private final Supplier<Defaults> defaults;

	private final JobTasks tasks = new JobTasks();

	/** Classes without the annotation; bounded by the number of bean classes. */
	private final Set<Class<?>> nonAnnotatedClasses = ConcurrentHashMap.newKeySet();

	private final AnnotatedMethodTypes jobTypes = new AnnotatedMethodTypes(SingleInstanceScheduled.class);

	/** Job name to its method and bean, to refuse a name used by two jobs. */
	private final Map<String, JobOwner> names = new ConcurrentHashMap<>();

	/** Names of the beans that declared jobs, to name at refresh those not created. */
	private final Set<String> jobBeans = ConcurrentHashMap.newKeySet();

	private final List<SingleInstanceJob> pending = Collections.synchronizedList(new ArrayList<>());

	private final JobRuns runs = new JobRuns();

	private @Nullable BeanFactory beanFactory;

	private @Nullable ApplicationContext applicationContext;

	private @Nullable StringValueResolver resolver;

	private volatile @Nullable Defaults resolvedDefaults;

	private final JobBackends backends;

	/** Whether the context was refreshed: jobs of beans created from then on are scheduled at once. */
	private volatile boolean refreshed;

	/**
	 * @param defaults supplies {@code holdfast.scheduling.lock-at-most-for} and
	 * {@code lock-at-least-for}, asked once when the first annotated bean is found
	 */
	public SingleInstanceScheduledBeanPostProcessor(Supplier<Defaults> defaults) {
		this(defaults, null);
	}

	/**
	 * @param engines the engine of each backend a job can name; {@code null}: the default one only
	 */
	public SingleInstanceScheduledBeanPostProcessor(Supplier<Defaults> defaults,
			@Nullable BackendChoice<@Nullable LockEngine> engines) {
		this.defaults = defaults;
		this.backends = new JobBackends(engines);
	}

	@Override
	public int getOrder() {
		return LOWEST_PRECEDENCE;
	}

	@Override
	public void setBeanFactory(BeanFactory beanFactory) {
		this.beanFactory = beanFactory;
	}

	@Override
	public void setApplicationContext(ApplicationContext applicationContext) {
		this.applicationContext = applicationContext;
	}

	@Override
	public void setEmbeddedValueResolver(StringValueResolver resolver) {
		this.resolver = resolver;
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
		if (bean instanceof AopInfrastructureBean || bean instanceof TaskScheduler
				|| bean instanceof ScheduledExecutorService) {
			return bean;
		}
		Class<?> targetClass = AopProxyUtils.ultimateTargetClass(bean);
		Map<Method, SingleInstanceScheduled> methods = jobMethods(targetClass);
		if (methods.isEmpty()) {
			return bean;
		}
		Class<?> beanClass = ClassUtils.getUserClass(targetClass);
		String owner = originalBeanName(beanName);
		this.jobBeans.add(owner);
		Defaults defaults = defaults();
		for (Map.Entry<Method, SingleInstanceScheduled> entry : new LinkedHashMap<>(methods).entrySet()) {
			Method method = entry.getKey();
			JobDefinition definition = JobDefinition.of(entry.getValue(), method, beanClass, this::resolve,
					defaults.lockAtMostFor(), defaults.lockAtLeastFor(), defaults.zone());
			definition.checkInvocable(bean, beanName, method);
			this.backends.check(definition);
			JobOwner jobOwner = new JobOwner(definition.description(), owner);
			JobOwner previous = this.names.putIfAbsent(definition.name(), jobOwner);
			// Instances of one prototype (or a bean created again) share their jobs: they run one at a time.
			if (previous != null && !previous.equals(jobOwner)) {
				throw new LockConfigurationException("@SingleInstanceScheduled methods " + previous + " and " + jobOwner
						+ " both use the job name '" + definition.name() + "': the job name is its lock, unique in "
						+ "the cluster, so they would split its ticks, each running only some of them",
						"Give each job its own name with the name attribute of @SingleInstanceScheduled; for two "
								+ "beans of one class, declare the job in a subclass per bean, or on one bean only.");
			}
			if (definition.disabled()) {
				logger.info("Holdfast job '" + definition.name() + "' is disabled (cron \"-\")");
				continue;
			}
			Method invocable = AopUtils.selectInvocableMethod(method, bean.getClass());
			TickTrigger trigger = (definition.cron() != null) ? new TickCronTrigger(definition.cron(), definition.zone())
					: (definition.fixedRate() != null)
							? new FixedRateTrigger(definition.fixedRate(), definition.initialDelay()) : null;
			SingleInstanceJob job = new SingleInstanceJob(definition, bean, invocable, trigger, this.runs);
			boolean late;
			synchronized (this.pending) {
				late = this.refreshed;
				if (!late) {
					this.pending.add(job);
				}
			}
			if (late) {
				// a bean created after the context was refreshed (lazy, prototype): schedule it at once
				job.bind(locks(definition.backend()));
				this.tasks.schedule(job);
			}
		}
		return bean;
	}

	/**
	 * The {@link SingleInstanceScheduled} methods of {@code type}, with their merged annotations;
	 * remembers the classes that have none.
	 */
	private Map<Method, SingleInstanceScheduled> jobMethods(Class<?> type) {
		if (this.nonAnnotatedClasses.contains(type)) {
			return Collections.emptyMap();
		}
		Map<Method, SingleInstanceScheduled> methods = findJobMethods(type, this.jobTypes);
		if (methods.isEmpty()) {
			this.nonAnnotatedClasses.add(type);
		}
		return methods;
	}

	private static Map<Method, SingleInstanceScheduled> findJobMethods(Class<?> type, AnnotatedMethodTypes jobTypes) {
		if (!jobTypes.hasAnnotatedMethods(type)) {
			return Collections.emptyMap();
		}
		return MethodIntrospector.selectMethods(type,
				(MethodIntrospector.MetadataLookup<SingleInstanceScheduled>) (method) -> AnnotatedElementUtils
					.findMergedAnnotation(method, SingleInstanceScheduled.class));
	}

	/**
	 * Whether {@code type} declares or inherits a {@link SingleInstanceScheduled} method: such a
	 * bean must be created at startup for its jobs to be scheduled.
	 * @param type a bean type, or {@code null} when unknown
	 */
	public static boolean declaresJobs(@Nullable Class<?> type) {
		return type != null && !findJobMethods(ClassUtils.getUserClass(type),
				new AnnotatedMethodTypes(SingleInstanceScheduled.class)).isEmpty();
	}

	/** The bean a scoped proxy's target stands for: the proxy and its target declare the same jobs. */
	private static String originalBeanName(String beanName) {
		return ScopedProxyUtils.isScopedTarget(beanName) ? ScopedProxyUtils.getOriginalBeanName(beanName) : beanName;
	}

	@Override
	public void onApplicationEvent(ContextRefreshedEvent event) {
		if (event.getApplicationContext() != this.applicationContext || this.refreshed) {
			return;
		}
		warnOfJobBeansNotCreated();
		List<SingleInstanceJob> jobs;
		synchronized (this.pending) {
			this.refreshed = true;
			jobs = new ArrayList<>(this.pending);
			this.pending.clear();
		}
		if (jobs.isEmpty() && this.names.isEmpty()) {
			// the lock engine is looked up when a bean created later brings a job
			return;
		}
		for (SingleInstanceJob job : jobs) {
			job.bind(locks(job.definition().backend()));
			this.tasks.schedule(job);
		}
		for (JobLocks locks : jobs.stream().filter((job) -> job.trigger() != null).map(SingleInstanceJob::locks)
			.filter((locks) -> locks != null && !locks.claimsTicks()).distinct().toList()) {
			logger.warn("The " + locks.backendName() + " lock backend keeps no tick records (it does not "
					+ "implement TickClaims): which tick of a cron or fixed-rate @SingleInstanceScheduled job is due "
					+ "is decided by each instance's clock. A tick runs once while the instances' clocks differ by "
					+ "less than half its period; beyond that it can run twice, or early. Keep the clocks "
					+ "synchronised (NTP), or use a backend with tick records (redis, redlock, jdbc, zookeeper, memory).");
		}
		if (logger.isDebugEnabled()) {
			logger.debug("Holdfast scheduled " + jobs.size() + " job(s) with " + this.tasks.scheduler());
		}
	}

	/** The job locks on {@code backend}'s lock engine and the scheduler set on the registrar, made once. */
	private JobLocks locks(String backend) {
		if (!(this.beanFactory instanceof ListableBeanFactory factory)) {
			throw new IllegalStateException("No BeanFactory set");
		}
		return this.backends.locks(backend, factory, this.tasks, defaults().clockTolerance());
	}

	/**
	 * Names, at WARN, each lazy or non-singleton bean whose class has jobs but of which no
	 * instance was created by the end of the refresh: its jobs run only once it is created.
	 * Beans that Boot's lazy initialization made lazy are not among them (Holdfast excludes them
	 * from it); those marked {@code @Lazy} explicitly, and prototypes nobody asked for, are.
	 */
	private void warnOfJobBeansNotCreated() {
		if (!(this.beanFactory instanceof ConfigurableListableBeanFactory factory)) {
			return;
		}
		for (String name : factory.getBeanDefinitionNames()) {
			if (this.jobBeans.contains(originalBeanName(name))) {
				continue;
			}
			BeanDefinition definition;
			Class<?> type;
			try {
				definition = factory.getMergedBeanDefinition(name);
				if (definition.isAbstract() || (definition.isSingleton() && !definition.isLazyInit())) {
					continue;
				}
				type = factory.getType(name, false);
			}
			catch (BeansException ex) {
				continue;
			}
			if (type == null) {
				continue;
			}
			Class<?> userClass = ClassUtils.getUserClass(type);
			Map<Method, SingleInstanceScheduled> methods = jobMethods(userClass);
			if (methods.isEmpty()) {
				continue;
			}
			String jobs = methods.keySet()
				.stream()
				.map((method) -> userClass.getName() + "." + method.getName())
				.sorted()
				.collect(Collectors.joining(", "));
			String why = definition.isSingleton() ? "is lazy (@Lazy) and was not created at startup"
					: "has scope '" + definition.getScope() + "' and no instance of it was created at startup";
			String fix = definition.isSingleton() ? "Remove @Lazy from the bean"
					: "Make the bean a singleton (one instance runs the jobs)";
			logger.warn("@SingleInstanceScheduled job(s) " + jobs + " of bean '" + name + "' are not scheduled: the "
					+ "bean " + why + "; its jobs run only once the bean is created. " + fix
					+ " to run them from startup.");
		}
	}

	private Defaults defaults() {
		Defaults current = this.resolvedDefaults;
		if (current == null) {
			current = this.defaults.get();
			this.resolvedDefaults = current;
		}
		return current;
	}

	private String resolve(String value) {
		StringValueResolver current = this.resolver;
		String resolved = (current != null) ? current.resolveStringValue(value) : value;
		return (resolved != null) ? resolved : "";
	}

	/**
	 * How far this instance's clock is from the default lock backend's, as the claims of ticks
	 * measure it, and which jobs run no ticks here because of it.
	 */
	public TickClock tickClock() {
		return tickClock(BackendChoice.DEFAULT);
	}

	/** The same of the named backend {@code backend} ({@code holdfast.backends.<name>}). */
	public TickClock tickClock(String backend) {
		return this.backends.tickClock(backend);
	}

	/** The tasks this post-processor scheduled. */
	@Override
	public Set<ScheduledTask> getScheduledTasks() {
		return this.tasks.scheduledTasks();
	}

	/** The tasks with their jobs, for {@link ScheduledJobs}. */
	JobTasks jobTasks() {
		return this.tasks;
	}

	/** Lets jobs start runs again after a {@link #stop}. */
	@Override
	public void start() {
		this.runs.open();
	}

	/** Stops jobs from starting runs, without waiting for the runs in progress. */
	@Override
	public void stop() {
		this.runs.close(() -> {
		});
	}

	/**
	 * Stops jobs from starting runs: from now on their ticks end at once, without touching the
	 * backend. The stop completes when the runs in progress have ended, so that they finish
	 * while the backend and the lock template still serve them, within Boot's
	 * {@code spring.lifecycle.timeout-per-shutdown-phase}.
	 */
	@Override
	public void stop(Runnable callback) {
		int running = this.runs.close(callback);
		if (running > 0) {
			logger.info("Holdfast stops starting scheduled jobs and waits for " + running + " run(s) in progress");
		}
		else if (logger.isDebugEnabled()) {
			logger.debug("Holdfast stops starting scheduled jobs");
		}
	}

	@Override
	public boolean isRunning() {
		return this.runs.isOpen();
	}

	@Override
	public int getPhase() {
		return PHASE;
	}

	/** Cancels the scheduled jobs and shuts down the scheduler this post-processor created. */
	@Override
	public void destroy() {
		this.tasks.destroy();
	}

	/** The method and bean of a job, to tell two jobs under one name from two instances of one bean. */
	private record JobOwner(String description, String beanName) {

		@Override
		public String toString() {
			return this.description + " (bean '" + this.beanName + "')";
		}

	}

	/**
	 * Defaults of jobs.
	 *
	 * @param lockAtMostFor default of {@link SingleInstanceScheduled#lockAtMostFor()}
	 * @param lockAtLeastFor default of {@link SingleInstanceScheduled#lockAtLeastFor()}
	 * @param zone default of {@link SingleInstanceScheduled#zone()}, or {@code null}
	 * @param clockTolerance how far from a tick the backend's clock may be when it is claimed, at
	 * most a quarter of the time to the next tick
	 */
	public record Defaults(Duration lockAtMostFor, Duration lockAtLeastFor, @Nullable ZoneId zone,
			Duration clockTolerance) {

		/** Defaults with no zone and a clock tolerance of one second. */
		public Defaults(Duration lockAtMostFor, Duration lockAtLeastFor) {
			this(lockAtMostFor, lockAtLeastFor, null, Duration.ofSeconds(1));
		}

		/**
		 * @throws LockConfigurationException if a duration is not positive (lockAtMostFor,
		 * clockTolerance), negative (lockAtLeastFor), or lockAtLeastFor exceeds lockAtMostFor
		 */
		public Defaults {
			if (clockTolerance.isNegative() || clockTolerance.isZero()) {
				throw new LockConfigurationException(
						"holdfast.scheduling.clock-tolerance must be positive, was " + clockTolerance,
						"Set holdfast.scheduling.clock-tolerance to a positive duration such as 1s.");
			}
			if (lockAtMostFor.isNegative() || lockAtMostFor.isZero()) {
				throw new LockConfigurationException(
						"holdfast.scheduling.lock-at-most-for must be positive, was " + lockAtMostFor,
						"Set holdfast.scheduling.lock-at-most-for to a positive duration such as 10m.");
			}
			if (lockAtLeastFor.isNegative() || lockAtLeastFor.compareTo(lockAtMostFor) > 0) {
				throw new LockConfigurationException("holdfast.scheduling.lock-at-least-for (" + lockAtLeastFor
						+ ") must be between zero and holdfast.scheduling.lock-at-most-for (" + lockAtMostFor + ")",
						"Correct holdfast.scheduling.lock-at-least-for or lock-at-most-for.");
			}
		}

	}

}
