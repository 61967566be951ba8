package dev.holdfast.aop;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.core.annotation.AnnotatedElementUtils;

import dev.holdfast.DistributedLock;
import dev.holdfast.DistributedSemaphore;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockMode;
import dev.holdfast.OnLocked;
import dev.holdfast.semaphore.PermitSlots;

/**
 * The attributes of a {@link DistributedLock} or a {@link DistributedSemaphore} on one method,
 * as one: what {@link LockOperationSource} resolves.
 *
 * @param where {@code @Annotation on Class.method}, for messages
 * @param permits the semaphore's permits (checked: 1 to {@value PermitSlots#MAX_PERMITS}), 0
 * for a lock
 * @param backend the backend that keeps it, {@code ""} for the default one
 * @param mode a lock's mode; {@code WRITE} for a semaphore
 */
record LockAnnotation(String where, String name, String key, String[] keys, String waitTime, String leaseTime,
		OnLocked onLocked, int permits, String backend, LockMode mode) {

	/** The annotations that lock a method. */
	static final List<Class<? extends Annotation>> TYPES = List.of(DistributedLock.class, DistributedSemaphore.class);

	/**
	 * The annotation on {@code specific} (the most specific method) or, if none, on {@code method},
	 * or {@code null}.
	 * @throws LockConfigurationException if the method has both, or a semaphore has too few or too
	 * many permits
	 */
	static @Nullable LockAnnotation find(Method specific, Method method, Class<?> userClass) {
		String on = " on " + userClass.getName() + "." + specific.getName();
		DistributedLock lock = merged(specific, method, DistributedLock.class);
		DistributedSemaphore semaphore = merged(specific, method, DistributedSemaphore.class);
		if (lock != null && semaphore != null) {
			throw new LockConfigurationException("@DistributedLock and @DistributedSemaphore are both" + on,
					"Keep one: @DistributedLock lets one call in at a time, @DistributedSemaphore(permits = n) "
							+ "n calls.");
		}
		if (lock != null) {
			return new LockAnnotation(nameOf(false) + on, lock.name(), lock.key(), lock.keys(), lock.waitTime(),
					lock.leaseTime(), lock.onLocked(), 0, lock.backend(), lock.mode());
		}
		if (semaphore == null) {
			return null;
		}
		String where = nameOf(true) + on;
		try {
			PermitSlots.requirePermits(semaphore.permits(), semaphore.name());
		}
		catch (IllegalArgumentException ex) {
			throw new LockConfigurationException(where + " has permits = " + semaphore.permits()
					+ ", but a semaphore has 1 to " + PermitSlots.MAX_PERMITS + " permits",
					"Give it 1 to " + PermitSlots.MAX_PERMITS + " permits (each permit is a lease, and a waiting call "
							+ "tries each one), such as permits = 3.");
		}
		return new LockAnnotation(where, semaphore.name(), semaphore.key(), new String[0], semaphore.waitTime(),
				semaphore.leaseTime(), semaphore.onLimited(), semaphore.permits(), semaphore.backend(), LockMode.WRITE);
	}

	private static <A extends Annotation> @Nullable A merged(Method specific, Method method, Class<A> type) {
		A annotation = AnnotatedElementUtils.findMergedAnnotation(specific, type);
		return (annotation != null) ? annotation : AnnotatedElementUtils.findMergedAnnotation(method, type);
	}

	/** The attribute that says what to do without the lock or a permit, for messages. */
	String onLockedAttribute() {
		return (this.permits > 0) ? "onLimited" : "onLocked";
	}

	/** The annotation as messages name it: {@code @DistributedSemaphore} for a semaphore, else {@code @DistributedLock}. */
	static String nameOf(boolean semaphore) {
		return semaphore ? "@DistributedSemaphore" : "@DistributedLock";
	}

	/** Whether {@code method} carries one of the {@link #TYPES}. */
	static boolean isOn(Method method) {
		return TYPES.stream().anyMatch((type) -> AnnotatedElementUtils.hasAnnotation(method, type));
	}

}
