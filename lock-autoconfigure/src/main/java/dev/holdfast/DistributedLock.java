package dev.holdfast;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.core.annotation.AliasFor;

/**
 * Runs the annotated method only while this process holds a cluster-wide lock.
 * <p>
 * The lock's backend key is {@code <holdfast.prefix><name>} or
 * {@code <holdfast.prefix><name>:<key>}, where the key is the result of the {@link #key()}
 * SpEL expression, encoded so that no key value can make two different (name, key) pairs
 * meet on one backend key. The lock is reentrant per thread, renewed while the method runs,
 * and released with an owner check when the method returns. Methods returning
 * {@code CompletionStage}, {@code Mono} or {@code Flux} hold it until the returned value
 * completes. If the backend cannot be reached the method does not run and the call fails with
 * {@link LockBackendException}.
 *
 * @see LockTemplate
 * @see LockContext#currentLease()
 */
@Target({ ElementType.METHOD, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface DistributedLock {

	/** Alias for {@link #name()}. */
	@AliasFor("name")
	String value() default "";

	/**
	 * The lock name. {@code ${...}} placeholders are resolved. Defaults to
	 * {@code SimpleClassName.methodName}.
	 */
	@AliasFor("value")
	String name() default "";

	/**
	 * SpEL expression over the call whose result is appended to the name: {@code #order.id},
	 * {@code #p0}, {@code #root.args[1]}, {@code @bean.method()}. Parsed once and validated at
	 * startup; a {@code null} result at run time is an {@link IllegalArgumentException}, and so is
	 * a value whose {@code toString()} is {@code Object}'s identity string (a parameter declared
	 * with such a type fails at startup). {@code ${...}} placeholders are not resolved here (a
	 * property's value would become code): a key containing one fails at startup. Empty means one
	 * lock per name.
	 */
	String key() default "";

	/**
	 * SpEL expressions over the call, each giving one key, or a collection or array of keys (each
	 * element one key): {@code keys = {"#from.id", "#to.id"}}. Every key is locked under the name,
	 * all or none within the wait time, in one canonical order (the backend keys, sorted,
	 * duplicates removed) so that two calls never deadlock, and released in reverse order; the
	 * method reads each key's fencing token from {@link LockContext#requireLeases()}. The rules of
	 * {@link #key()} hold for each expression and element; an empty set of keys at the call is an
	 * {@link IllegalArgumentException}. Use either {@code key} or {@code keys}; methods returning a
	 * reactive type or Kotlin suspend functions cannot use {@code keys} (startup fails).
	 */
	String[] keys() default {};

	/**
	 * How long to wait for a held lock, as a duration string ({@code 5s}, {@code PT5S},
	 * {@code ${...}}). Empty means {@code holdfast.wait-time}; zero means one attempt.
	 */
	String waitTime() default "";

	/**
	 * Time to live of the lock on the backend, renewed while the method runs. Empty means
	 * {@code holdfast.lease-time}.
	 */
	String leaseTime() default "";

	/** What to do when the lock cannot be acquired within the wait time. */
	OnLocked onLocked() default OnLocked.THROW;

	/**
	 * {@link LockMode#WRITE} (the default) takes the exclusive lock; {@link LockMode#READ} a read
	 * hold beside other readers, never beside a writer. {@code READ} needs a backend that gives
	 * read holds, one key, and a method that does not return a reactive type nor suspend: else
	 * startup fails, naming what to change.
	 */
	LockMode mode() default LockMode.WRITE;

	/**
	 * The backend that keeps the lock: the name of one of {@code holdfast.backends.<name>}, or
	 * empty for the default backend ({@code holdfast.backend}). An unknown name fails at startup.
	 * A lock lives in one backend: the same name on two backends is two locks.
	 */
	String backend() default "";

}
