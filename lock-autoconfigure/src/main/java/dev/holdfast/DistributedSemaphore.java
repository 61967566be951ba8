package dev.holdfast;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.core.annotation.AliasFor;

/**
 * Runs the annotated method only while this process holds one of the {@link #permits()} permits
 * of a cluster-wide semaphore: at most that many calls run at once across every instance.
 * <pre>{@code
 * @DistributedSemaphore(name = "report-export", permits = 3, waitTime = "10s")
 * public Report export(ReportRequest request) { ... }
 * }</pre>
 * Each permit is a lease, with every rule of a {@link DistributedLock}'s lock: released with an
 * owner check when the method's work is done, renewed while it runs, expired by the backend's
 * clock (a crashed holder's permit comes back within one lease time), and a fencing token (of
 * its permit slot) in {@link LockContext#requireLease()}. Permits are not reentrant: a nested
 * call takes a permit of its own. The name, {@code key}, {@code waitTime} and {@code leaseTime}
 * follow {@link DistributedLock}'s rules; methods returning a reactive type and Kotlin suspend
 * functions cannot use it yet (startup fails).
 *
 * @see LockTemplate#acquirePermit
 */
@Target({ ElementType.METHOD, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface DistributedSemaphore {

	/** Alias for {@link #name()}. */
	@AliasFor("name")
	String value() default "";

	/**
	 * The semaphore's name. {@code ${...}} placeholders are resolved. Defaults to
	 * {@code SimpleClassName.methodName}.
	 */
	@AliasFor("value")
	String name() default "";

	/**
	 * SpEL expression over the call: one semaphore per value (per tenant, say), as
	 * {@link DistributedLock#key()}. Empty means one semaphore per name.
	 */
	String key() default "";

	/**
	 * How many calls may hold a permit at once, 1 to 64. Every method and every instance that
	 * names one semaphore must give it the same number: two methods of one application that
	 * disagree fail at startup, a call that disagrees with an earlier one of the application
	 * fails; an instance that finds a permit beyond its own number held fails the call.
	 */
	int permits();

	/**
	 * How long to wait for a free permit, as a duration string ({@code 5s}, {@code PT5S},
	 * {@code ${...}}). Empty means {@code holdfast.wait-time}; zero means one try of each permit
	 * (a round trip each), and, when all are held, the check of the permits beyond them (3 more,
	 * at most once per 2 s).
	 */
	String waitTime() default "";

	/**
	 * Time to live of the permit on the backend, renewed while the method runs. Empty means
	 * {@code holdfast.lease-time}.
	 */
	String leaseTime() default "";

	/**
	 * What to do when no permit is free within the wait time: {@link OnLocked#THROW} a
	 * {@link PermitNotAcquiredException}, or {@link OnLocked#SKIP} the call.
	 */
	OnLocked onLimited() default OnLocked.THROW;

	/**
	 * The backend that keeps the permits: the name of one of {@code holdfast.backends.<name>}, or
	 * empty for the default backend. An unknown name fails at startup. The same name on two
	 * backends is two semaphores.
	 */
	String backend() default "";

}
