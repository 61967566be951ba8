package dev.holdfast;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.core.annotation.AliasFor;

/**
 * Runs the annotated method only while this instance leads the group: otherwise the call is
 * skipped, returning as {@code onLocked = SKIP} does ({@code null}, {@code Optional.empty()}, an
 * empty {@code Mono}/{@code Flux}, a completed future of {@code null}), or fails with
 * {@link NotLeaderException} with {@code onNotLeader = THROW}. Leadership is checked when the
 * method is called; inside it, {@link LeaderContext#requireTerm()} gives the term, whose fencing
 * token the resource can check. Groups named here are joined when the application starts, and
 * campaign once it is ready.
 * <p>
 * On a {@link org.springframework.context.SmartLifecycle} bean's class: the context does not start
 * the bean; it is started when this instance is granted the group, and stopped when the term is
 * revoked, before another instance can be granted it (a poller, a message listener container).
 *
 * @see LeaderElections
 */
@Target({ ElementType.METHOD, ElementType.TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@Documented
public @interface LeaderOnly {

	/** Alias for {@link #group()}. */
	@AliasFor("group")
	String value() default "";

	/** The leader group, not empty; {@code ${...}} placeholders are resolved. */
	@AliasFor("value")
	String group() default "";

	/** What a call does while this instance does not lead the group. */
	OnNotLeader onNotLeader() default OnNotLeader.SKIP;

	/**
	 * The backend the group is elected on: the name of one of {@code holdfast.backends.<name>},
	 * or empty for the default backend. An unknown name fails at startup. A group lives in one
	 * backend: the same group on two backends is two groups, each with its own leader.
	 */
	String backend() default "";

	/** What a call does while this instance does not lead the group. */
	enum OnNotLeader {

		/** Return the empty value of the return type without running the method. */
		SKIP,

		/** Throw {@link NotLeaderException} without running the method. */
		THROW

	}

}
