package dev.holdfast;

import java.lang.StackWalker.StackFrame;
import java.lang.reflect.Method;
import java.util.Optional;

import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Explains why {@link LockContext#requireLease()} found no lease. When a method annotated with
 * {@link DistributedLock} or {@link SingleInstanceScheduled} is on the calling thread's stack, it
 * was called without its Spring proxy (self-invocation, or an instance made with {@code new}),
 * so it ran without the lock: the message names it and the fix. Only the failure pays for the
 * stack walk.
 */
final class UnlockedCall {

	/** How many frames are looked at: the annotated method is normally a few frames up. */
	private static final int MAX_FRAMES = 64;

	private UnlockedCall() {
	}

	static String message() {
		Optional<Method> annotated = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE)
			.walk((frames) -> frames.limit(MAX_FRAMES).map(UnlockedCall::annotatedMethod).flatMap(Optional::stream)
				.findFirst());
		if (annotated.isEmpty()) {
			return "No Holdfast lease is bound to this thread: call this from a method annotated with "
					+ "@DistributedLock or @SingleInstanceScheduled, called through its Spring bean (a call from "
					+ "the same class, this.method(), bypasses the proxy and runs without the lock), or use the "
					+ "Lease returned by LockTemplate";
		}
		Method method = annotated.get();
		String name = method.getDeclaringClass().getName() + "." + method.getName();
		if (ReactiveAdapterRegistry.getSharedInstance().getAdapter(method.getReturnType()) != null) {
			return "No Holdfast lease is bound to this thread: " + name + " returns a reactive type, whose lock is "
					+ "taken on subscription and kept in the Reactor context; read it inside the returned publisher "
					+ "with ReactiveLockContext.requireLease()";
		}
		return "No Holdfast lease is bound to this thread, although " + name + " is annotated with @"
				+ (AnnotatedElementUtils.hasAnnotation(method, DistributedLock.class) ? "DistributedLock"
						: "SingleInstanceScheduled")
				+ ": it was called without going through its Spring bean's proxy, so it runs WITHOUT the lock. "
				+ "That happens on self-invocation (a method of the same class calls this." + method.getName()
				+ "(...)) and on an instance created with new. Call it through the bean: inject the bean where "
				+ "the call is made, or move the method to another bean";
	}

	private static Optional<Method> annotatedMethod(StackFrame frame) {
		Class<?> type = frame.getDeclaringClass();
		String className = type.getName();
		if (className.startsWith("java.") || className.startsWith("jdk.")) {
			return Optional.empty();
		}
		try {
			Method method = type.getDeclaredMethod(frame.getMethodName(), frame.getMethodType().parameterArray());
			return (AnnotatedElementUtils.hasAnnotation(method, DistributedLock.class)
					|| AnnotatedElementUtils.hasAnnotation(method, SingleInstanceScheduled.class)) ? Optional.of(method)
							: Optional.empty();
		}
		catch (NoSuchMethodException | SecurityException ex) {
			return Optional.empty();
		}
	}

}
