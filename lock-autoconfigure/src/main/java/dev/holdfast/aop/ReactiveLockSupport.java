package dev.holdfast.aop;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicReference;

import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

import org.springframework.core.ReactiveAdapter;

import dev.holdfast.AsyncLockTemplate;
import dev.holdfast.Lease;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.OnLocked;
import dev.holdfast.core.EngineLease;
import dev.holdfast.support.LeaseView;

/**
 * Locks reactive results: the returned publisher acquires on each subscription and releases,
 * exactly once, when it completes, errors or is cancelled; a view of the lease is in the Reactor
 * context under {@code Lease.class} (closing it never releases the lock under the publisher). No
 * Reactor non-blocking thread ever blocks: acquisition and release use the template's
 * non-blocking path when the backend has one, and otherwise run on
 * {@link Schedulers#boundedElastic()}. Only loaded when Reactor is on the classpath.
 * <p>
 * Observations: the subscriber's observation in the Reactor context (where Spring WebFlux and
 * Micrometer's Reactor support keep it) is the parent of the acquisition and of the hold, and
 * the hold is the observation in the context of the locked publisher, so that what it observes
 * is a child of the hold. The hold ends when the lease is released, not when the method returns.
 */
final class ReactiveLockSupport {

	private static final Object CANCELLED = new Object();

	/** Where Micrometer keeps the current observation in a Reactor context. */
	private static final String OBSERVATION_KEY = "micrometer.observation";

	private final LockTemplate template;

	ReactiveLockSupport(LockTemplate template) {
		this.template = template;
	}

	/** {@code result} (of a type that {@code adapter} handles), locked per subscription. */
	/**
	 * {@code result}, locked per subscription. {@code offClientThreads}: subscribe to it on
	 * {@link Schedulers#boundedElastic()}, not on the thread that granted the lock, which may be a
	 * backend client's I/O thread (Lettuce's event loop): Spring starts a Kotlin suspend function's
	 * body on the subscribing thread ({@code Dispatchers.Unconfined}), and such bodies may block.
	 */
	Object lock(Object result, ReactiveAdapter adapter, boolean offClientThreads, String name, @Nullable Object key,
			LockOptions options, OnLocked onLocked) {
		Publisher<Object> source = adapter.toPublisher(result);
		Publisher<?> locked;
		if (adapter.isMultiValue()) {
			Flux<Object> flux = Flux.from(source);
			locked = lock(offClientThreads ? flux.subscribeOn(Schedulers.boundedElastic()) : flux, name, key, options,
					onLocked);
		}
		else {
			Mono<Object> mono = Mono.from(source);
			locked = lock(offClientThreads ? mono.subscribeOn(Schedulers.boundedElastic()) : mono, name, key, options,
					onLocked);
		}
		return adapter.fromPublisher(locked);
	}

	<T> Flux<T> lock(Flux<T> source, String name, @Nullable Object key, LockOptions options, OnLocked onLocked) {
		return Flux.deferContextual((context) -> {
			if (holds(context.getOrDefault(Lease.class, null), name, key)) {
				return source;
			}
			return Flux.usingWhen(acquire(name, key, options, onLocked).map(Held::of),
					(held) -> source.contextWrite((inner) -> withLease(inner, held)), this::release,
					(held, ex) -> release(held), this::release);
		});
	}

	<T> Mono<T> lock(Mono<T> source, String name, @Nullable Object key, LockOptions options, OnLocked onLocked) {
		return Mono.deferContextual((context) -> {
			if (holds(context.getOrDefault(Lease.class, null), name, key)) {
				return source;
			}
			return Mono.usingWhen(acquire(name, key, options, onLocked).map(Held::of),
					(held) -> source.contextWrite((inner) -> withLease(inner, held)), this::release,
					(held, ex) -> release(held), this::release);
		});
	}

	/**
	 * A lease and the view of it that the locked publisher reads from its context: closing that
	 * view (try-with-resources on {@code ReactiveLockContext}) ends only the view, so the lock stays
	 * until the publisher completes, errors or is cancelled. The view counts no hold of the lease:
	 * a cancel racing the grant releases the lease itself, and a {@code Held} that Reactor drops
	 * leaves nothing open.
	 */
	private record Held(Lease lease, Lease view) {

		static Held of(Lease lease) {
			return new Held(lease, LeaseView.of(lease));
		}

	}

	/** {@code context} with the lease's view and, when it is observed, the observation of its hold. */
	private static Context withLease(Context context, Held held) {
		Observation hold = EngineLease.observationOf(held.lease()).hold();
		Context withLease = context.put(Lease.class, held.view());
		return hold.isNoop() ? withLease : withLease.put(OBSERVATION_KEY, hold);
	}

	/**
	 * Makes the subscriber's observation, if its context has one, current on this thread while an
	 * acquisition starts, so that it becomes the parent of the acquisition and of the hold.
	 */
	private static Observation.Scope parentScope(ContextView context) {
		Object parent = context.getOrDefault(OBSERVATION_KEY, null);
		return (parent instanceof Observation observation) ? observation.openScope() : Observation.Scope.NOOP;
	}

	/** Reentrancy within one reactive chain: an enclosing locked publisher holds the same key. */
	private boolean holds(@Nullable Lease outer, String name, @Nullable Object key) {
		if (outer == null || !outer.isValid() || !(this.template instanceof AsyncLockTemplate async)) {
			return false;
		}
		try {
			return outer.key().equals(async.keyFor(name, key));
		}
		catch (UnsupportedOperationException ex) {
			return false;
		}
	}

	/** Emits the lease, completes empty when SKIP found the lock held, or errors. */
	private Mono<Lease> acquire(String name, @Nullable Object key, LockOptions options, OnLocked onLocked) {
		if (this.template instanceof AsyncLockTemplate async && async.supportsNonBlocking()) {
			return acquireNonBlocking(async, name, key, options, onLocked);
		}
		return acquireOnBoundedElastic(name, key, options, onLocked);
	}

	private Mono<Lease> acquireNonBlocking(AsyncLockTemplate async, String name, @Nullable Object key,
			LockOptions options, OnLocked onLocked) {
		return Mono.create((sink) -> {
			CompletableFuture<@Nullable Lease> future;
			try (Observation.Scope parent = parentScope(sink.contextView())) {
				future = async.tryAcquireAsync(name, key, options);
			}
			sink.onCancel(() -> {
				if (!future.cancel(false)) {
					// Granted before the cancel arrived: nobody will use the lease.
					Lease granted = future.getNow(null);
					if (granted != null) {
						async.releaseAsync(granted);
					}
				}
			});
			future.whenComplete((lease, ex) -> {
				if (future.isCancelled()) {
					return;
				}
				if (ex != null) {
					sink.error((ex instanceof CompletionException && ex.getCause() != null) ? ex.getCause() : ex);
				}
				else if (lease != null) {
					sink.success(lease);
				}
				else if (onLocked == OnLocked.THROW) {
					String fullKey = async.keyFor(name, key);
					sink.error(new LockNotAcquiredException(fullKey, async.shownKey(fullKey), async.waitTime(options)));
				}
				else {
					sink.success();
				}
			});
		});
	}

	private Mono<Lease> acquireOnBoundedElastic(String name, @Nullable Object key, LockOptions options,
			OnLocked onLocked) {
		return Mono.create((sink) -> {
			// null, then the lease once granted, or CANCELLED: whoever sets it second releases.
			AtomicReference<@Nullable Object> state = new AtomicReference<>();
			ContextView subscriber = sink.contextView();
			Disposable task = Schedulers.boundedElastic().schedule(() -> {
				try {
					Lease lease;
					try (Observation.Scope parent = parentScope(subscriber)) {
						lease = (onLocked == OnLocked.THROW) ? this.template.acquire(name, key, options)
								: this.template.tryAcquire(name, key, options).orElse(null);
					}
					if (lease == null) {
						sink.success();
						return;
					}
					EngineLease.detach(lease);
					if (state.compareAndSet(null, lease)) {
						sink.success(lease);
					}
					else {
						lease.close();
					}
				}
				catch (Throwable ex) {
					if (state.get() != CANCELLED) {
						sink.error(ex);
					}
				}
			});
			sink.onCancel(() -> {
				Object previous = state.getAndSet(CANCELLED);
				if (previous instanceof Lease granted) {
					Schedulers.boundedElastic().schedule(granted::close);
				}
				else {
					// Interrupts a waiting acquisition, which then leaves no lease behind.
					task.dispose();
				}
			});
		});
	}

	private Mono<Void> release(Held held) {
		return release(held.lease());
	}

	private Mono<Void> release(Lease lease) {
		if (this.template instanceof AsyncLockTemplate async && async.supportsNonBlocking()) {
			return Mono.fromCompletionStage(() -> async.releaseAsync(lease));
		}
		return Mono.<Void>fromRunnable(lease::close).subscribeOn(Schedulers.boundedElastic());
	}

}
