package dev.holdfast.scheduling;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.TimeZone;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import java.util.function.UnaryOperator;

import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.KotlinDetector;
import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.scheduling.config.ScheduledTaskRegistrar;
import org.springframework.scheduling.support.CronExpression;
import org.springframework.util.ClassUtils;
import org.springframework.util.StringUtils;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockOptions;
import dev.holdfast.SingleInstanceScheduled;

/**
 * A validated {@link SingleInstanceScheduled} declaration, placeholders resolved.
 *
 * @param name the job name, the name of its lock
 * @param description {@code ClassName.method} of the bean's user class, for messages
 * @param cron the cron expression, or {@code null} for fixed-rate and fixed-delay jobs
 * @param zone the time zone of the cron expression: the annotation's, else
 * {@code holdfast.scheduling.zone}, else UTC when that is the JVM's default (the job refuses to
 * start otherwise); UTC for fixed-rate and fixed-delay jobs, whose ticks ignore zones
 * @param fixedRate the fixed rate, or {@code null}
 * @param fixedDelay the fixed delay, or {@code null}
 * @param initialDelay delay before the first fixed-rate or fixed-delay run
 * @param lockAtMostFor the longest a run holds the job lock: its renewals end then
 * @param lockAtLeastFor how long the job lock is kept at least after the start of a run
 * @param leaseTime the time to live of the job lock, renewed while the run lasts; {@code null}:
 * {@code holdfast.lease-time}
 * @param backend the backend of the job's lock and ticks, {@code ""} for the default one
 */
record JobDefinition(String name, String description, @Nullable String cron, ZoneId zone,
		@Nullable Duration fixedRate, @Nullable Duration fixedDelay, Duration initialDelay, Duration lockAtMostFor,
		Duration lockAtLeastFor, @Nullable Duration leaseTime, String backend) {

	/** Whether Kotlin suspend functions can be run: in its runBlocking. */
	private static final boolean COROUTINES_PRESENT = ClassUtils.isPresent("kotlinx.coroutines.BuildersKt",
			JobDefinition.class.getClassLoader());

	/** Whether the cron expression is {@code "-"}: the job is declared but not scheduled. */
	static final String DISABLED = ScheduledTaskRegistrar.CRON_DISABLED;

	/**
	 * Reads and validates the annotation on {@code method}.
	 * @param beanClass the user class of the bean the job runs on: the default name and the
	 * description are {@code SimpleName.method} and {@code ClassName.method} of it, not of the
	 * class that declares the method, so that beans inheriting one job method are distinct jobs
	 * @param resolver resolves {@code ${...}} placeholders
	 * @param defaultAtMost {@code holdfast.scheduling.lock-at-most-for}
	 * @param defaultAtLeast {@code holdfast.scheduling.lock-at-least-for}
	 * @param defaultZone {@code holdfast.scheduling.zone}, or {@code null} when not set
	 * @throws LockConfigurationException naming the method and attribute at fault
	 */
	static JobDefinition of(SingleInstanceScheduled annotation, Method method, Class<?> beanClass,
			UnaryOperator<String> resolver, Duration defaultAtMost, Duration defaultAtLeast,
			@Nullable ZoneId defaultZone) {
		String description = beanClass.getName() + "." + method.getName();
		boolean suspending = KotlinDetector.isSuspendingFunction(method);
		if (suspending && !COROUTINES_PRESENT) {
			throw invalid(description, "is a Kotlin suspend function, which a job runs in runBlocking, from "
					+ "kotlinx-coroutines-core, not on the class path",
					"Add org.jetbrains.kotlinx:kotlinx-coroutines-core to the application's dependencies.");
		}
		if (method.getParameterCount() != (suspending ? 1 : 0)) {
			throw invalid(description, "has parameters; a @SingleInstanceScheduled method takes none",
					"Remove the parameters of the method.");
		}
		if (!AnnotatedElementUtils.findMergedRepeatableAnnotations(method, Scheduled.class).isEmpty()) {
			throw invalid(description, "is also annotated with @Scheduled (or @Schedules, here or on a method it "
					+ "overrides): with @EnableScheduling, Spring would also run it on every instance at every tick, "
					+ "without the job lock", "Remove @Scheduled from the method: @SingleInstanceScheduled schedules it.");
		}
		Class<?> returnType = method.getReturnType();
		if (CompletionStage.class.isAssignableFrom(returnType) || Future.class.isAssignableFrom(returnType)
				|| ReactiveAdapterRegistry.getSharedInstance().getAdapter(returnType) != null) {
			throw invalid(description, "returns " + returnType.getName()
					+ ", but a job holds its lock only until the method returns: work left running in the "
					+ "returned value would run unlocked, and a publisher would never be subscribed",
					"Return void and finish the work before returning (join the future, block on the publisher).");
		}
		String name = resolve(resolver, annotation.name());
		if (name.isEmpty()) {
			name = beanClass.getSimpleName() + "." + method.getName();
		}
		String cron = resolve(resolver, annotation.cron());
		String zoneText = resolve(resolver, annotation.zone());
		Duration fixedRate = duration(resolver, annotation.fixedRate(), "fixedRate", description, false);
		Duration fixedDelay = duration(resolver, annotation.fixedDelay(), "fixedDelay", description, false);
		Duration initialDelay = duration(resolver, annotation.initialDelay(), "initialDelay", description, true);
		List<String> triggers = new ArrayList<>();
		if (!cron.isEmpty()) {
			triggers.add("cron");
		}
		if (fixedRate != null) {
			triggers.add("fixedRate");
		}
		if (fixedDelay != null) {
			triggers.add("fixedDelay");
		}
		if (triggers.size() != 1) {
			throw invalid(description,
					triggers.isEmpty() ? "sets none of cron, fixedRate and fixedDelay" : "sets " + triggers,
					"Set exactly one of cron, fixedRate and fixedDelay on @SingleInstanceScheduled.");
		}
		ZoneId zone = ZoneOffset.UTC;
		if (!cron.isEmpty()) {
			if (initialDelay != null) {
				throw invalid(description, "sets initialDelay together with cron",
						"Remove initialDelay: it applies to fixedRate and fixedDelay jobs only.");
			}
			if (!DISABLED.equals(cron)) {
				try {
					CronExpression.parse(cron);
				}
				catch (IllegalArgumentException ex) {
					throw invalid(description, "has an invalid cron expression '" + cron + "': " + ex.getMessage(),
							"Correct the cron attribute of @SingleInstanceScheduled.");
				}
			}
			if (!zoneText.isEmpty()) {
				try {
					zone = ZoneId.of(zoneText);
				}
				catch (DateTimeException ex) {
					throw invalid(description, "has an invalid zone '" + zoneText + "': " + ex.getMessage(),
							"Set zone to a time zone ID such as 'Europe/Paris' or 'UTC'.");
				}
			}
			else if (defaultZone != null) {
				zone = defaultZone;
			}
			else if (!DISABLED.equals(cron)) {
				zone = jvmZoneIfUtc(description);
			}
		}
		else if (!zoneText.isEmpty()) {
			throw invalid(description, "sets zone without cron", "Remove zone: it applies to cron jobs only.");
		}
		Duration atMost = duration(resolver, annotation.lockAtMostFor(), "lockAtMostFor", description, false);
		atMost = (atMost != null) ? atMost : defaultAtMost;
		Duration atLeast = duration(resolver, annotation.lockAtLeastFor(), "lockAtLeastFor", description, true);
		atLeast = (atLeast != null) ? atLeast : defaultAtLeast;
		if (atLeast.compareTo(atMost) > 0) {
			throw invalid(description,
					"keeps its lock at least for " + atLeast + " (lockAtLeastFor) but at most for " + atMost
							+ " (lockAtMostFor)",
					"Make lockAtLeastFor at most lockAtMostFor on @SingleInstanceScheduled, or change "
							+ "holdfast.scheduling.lock-at-most-for / lock-at-least-for.");
		}
		Duration leaseTime = duration(resolver, annotation.leaseTime(), "leaseTime", description, false);
		if (leaseTime != null && leaseTime.compareTo(LockOptions.MIN_LEASE_TIME) < 0) {
			throw invalid(description, "has a leaseTime of " + leaseTime
					+ ", shorter than 1ms (backends count a lease in milliseconds)",
					"Make leaseTime at least 1ms, such as leaseTime = \"30s\".");
		}
		if (leaseTime != null && leaseTime.compareTo(atMost) > 0) {
			throw invalid(description, "has a leaseTime of " + leaseTime + ", longer than its lockAtMostFor ("
					+ atMost + "), which ends the renewals of its lock: the lock would outlive the cap on a run",
					"Make leaseTime at most lockAtMostFor, or remove it to use holdfast.lease-time.");
		}
		return new JobDefinition(name, description, StringUtils.hasLength(cron) ? cron : null, zone, fixedRate,
				fixedDelay, (initialDelay != null) ? initialDelay : Duration.ZERO, atMost, atLeast, leaseTime,
				annotation.backend());
	}

	/**
	 * The JVM's default zone when it is UTC (or an alias of it, a fixed offset of zero): then every
	 * instance that runs the job without a zone must be on UTC too, or refuse to start as this one
	 * would. Any other default zone would make instances in different zones run different ticks.
	 */
	private static ZoneId jvmZoneIfUtc(String description) {
		ZoneId jvm = TimeZone.getDefault().toZoneId();
		if (jvm.getRules().isFixedOffset() && jvm.getRules().getOffset(Instant.EPOCH).getTotalSeconds() == 0) {
			return ZoneOffset.UTC;
		}
		throw invalid(description, "has a cron expression without a time zone, and this JVM's default time zone is "
				+ jvm.getId() + ": instances whose default zones differ would run its ticks at different times",
				"Set holdfast.scheduling.zone to the zone every instance should use (for example '" + jvm.getId()
						+ "' to keep this JVM's local time, or 'UTC'), or set zone on the annotation.");
	}

	boolean disabled() {
		return DISABLED.equals(this.cron);
	}

	private static String resolve(UnaryOperator<String> resolver, String value) {
		if (value.isEmpty()) {
			return value;
		}
		String resolved = resolver.apply(value);
		return (resolved != null) ? resolved.trim() : "";
	}

	private static @Nullable Duration duration(UnaryOperator<String> resolver, String value, String attribute,
			String description, boolean zeroAllowed) {
		String text = resolve(resolver, value);
		if (text.isEmpty()) {
			return null;
		}
		Duration duration;
		try {
			duration = DurationStyle.detectAndParse(text, ChronoUnit.MILLIS);
		}
		catch (IllegalArgumentException ex) {
			throw invalid(description, "has an invalid " + attribute + " '" + text + "'",
					"Write " + attribute + " as a duration such as '5s', 'PT5S' or '5000' (milliseconds).");
		}
		if (duration.isNegative() || (!zeroAllowed && duration.isZero())) {
			throw invalid(description, "has " + attribute + " '" + text + "', which must be "
					+ (zeroAllowed ? "zero or positive" : "positive"), "Correct " + attribute + ".");
		}
		return duration;
	}

	static LockConfigurationException invalid(String description, String problem, String action) {
		return new LockConfigurationException("@SingleInstanceScheduled method " + description + " " + problem,
				action);
	}

	/**
	 * Fails when the job method cannot run on the bean's instance: a {@code final} or
	 * {@code private} method of a class-based (CGLIB) proxy would run on the proxy object, whose
	 * fields are not the bean's, silently doing nothing useful.
	 */
	void checkInvocable(Object bean, String beanName, Method method) {
		int modifiers = method.getModifiers();
		if (!AopUtils.isCglibProxy(bean) || Modifier.isStatic(modifiers)
				|| !(Modifier.isFinal(modifiers) || Modifier.isPrivate(modifiers))) {
			return;
		}
		String modifier = Modifier.isFinal(modifiers) ? "final" : "private";
		throw invalid(description(), "is " + modifier + ", and its bean '" + beanName
				+ "' is a class-based (CGLIB) proxy (for example for its @Transactional or @DistributedLock "
				+ "methods), which cannot pass a call of a " + modifier + " method on to the bean: the job would run "
				+ "on the proxy object, whose fields are not the bean's",
				"Make the method non-" + modifier + " (it may be package-private, protected or public).");
	}

}
