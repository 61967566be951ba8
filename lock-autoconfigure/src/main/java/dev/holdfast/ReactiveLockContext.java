package dev.holdfast;

import reactor.core.publisher.Mono;

/**
 * The lease of the innermost {@link DistributedLock} method returning {@code Mono} or
 * {@code Flux}, read from the Reactor context (key {@code Lease.class}). Use it inside the
 * publisher that the method returns:
 * <pre>{@code
 * return ReactiveLockContext.requireLease()
 *     .flatMap((lease) -> repository.write(data, lease.fencingToken()));
 * }</pre>
 * The lease is the publisher's view of the lock: closing it never releases the lock before the publisher
 * completes, errors or is cancelled. Needs Reactor on the classpath; {@link LockContext} is the
 * thread-bound equivalent.
 */
public final class ReactiveLockContext {

	private ReactiveLockContext() {
	}

	/** The lease of the innermost locked publisher this subscription runs in, or empty. */
	public static Mono<Lease> currentLease() {
		return Mono.deferContextual((context) -> Mono.justOrEmpty(context.<Lease>getOrEmpty(Lease.class)));
	}

	/**
	 * The lease of the innermost locked publisher this subscription runs in, or an
	 * {@link IllegalStateException} when it runs outside one.
	 */
	public static Mono<Lease> requireLease() {
		return currentLease().switchIfEmpty(Mono.error(() -> new IllegalStateException(
				"No Holdfast lease is in the Reactor context: subscribe to this inside the publisher returned by a "
						+ "method annotated with @DistributedLock, called through its Spring bean (a call from the same "
						+ "class, this.method(), is self-invocation: it bypasses the proxy, and its publisher runs "
						+ "without the lock)")));
	}

}
