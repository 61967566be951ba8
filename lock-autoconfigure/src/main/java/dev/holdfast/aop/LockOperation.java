package dev.holdfast.aop;

import java.lang.reflect.Method;
import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.core.ReactiveAdapter;
import org.springframework.expression.Expression;

import dev.holdfast.LockOptions;
import dev.holdfast.OnLocked;

/**
 * A {@link dev.holdfast.DistributedLock} annotation resolved for one method of one target class:
 * placeholders resolved, durations parsed, key expression parsed.
 *
 * @param method the annotated method
 * @param name the lock name
 * @param keyExpression the parsed key expression, or {@code null} for one lock per name
 * @param keyExpressionText the key expression as written
 * @param options wait and lease times (unset ones take the configured defaults)
 * @param onLocked what to do when the lock stays held
 * @param reactiveAdapter the adapter of a reactive return type ({@code Mono}, {@code Flux}, ...),
 * or {@code null}; looked up once here rather than on every call; for a Kotlin suspend function,
 * the adapter of the {@code Mono} (or {@code Flux}) that Spring's proxy calls it as
 * @param suspending whether the method is a Kotlin suspend function
 * @param keysExpressions the parsed {@code keys} expressions, empty unless the method locks several
 * keys
 * @param permits the permits of a {@link dev.holdfast.DistributedSemaphore}, 0 for a lock
 * @param backend the backend that keeps the lock, {@code ""} for the default one
 */
public record LockOperation(Method method, String name, @Nullable Expression keyExpression, String keyExpressionText,
		LockOptions options, OnLocked onLocked, @Nullable ReactiveAdapter reactiveAdapter, boolean suspending,
		List<KeysExpression> keysExpressions, int permits, String backend) {

	/** An operation of one key (or none): no {@code keys}. */
	public LockOperation(Method method, String name, @Nullable Expression keyExpression, String keyExpressionText,
			LockOptions options, OnLocked onLocked, @Nullable ReactiveAdapter reactiveAdapter, boolean suspending) {
		this(method, name, keyExpression, keyExpressionText, options, onLocked, reactiveAdapter, suspending, List.of(),
				0, "");
	}

	/**
	 * One expression of {@code keys}.
	 * @param expression the parsed expression
	 * @param text the expression as written
	 */
	public record KeysExpression(Expression expression, String text) {
	}

	/** {@code @DistributedLock}, or {@code @DistributedSemaphore} for an operation with permits, for messages. */
	public String annotation() {
		return LockAnnotation.nameOf(this.permits > 0);
	}

	/** {@code Class.method} for messages. */
	public String describe() {
		return this.method.getDeclaringClass().getName() + "." + this.method.getName();
	}

}
