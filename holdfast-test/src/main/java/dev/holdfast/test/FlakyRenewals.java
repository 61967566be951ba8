package dev.holdfast.test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;

import org.jspecify.annotations.Nullable;

import org.springframework.util.ClassUtils;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.LockBackend;

/**
 * A client of a real backend whose renewals fail, as if the network dropped them, while
 * {@link #failing} is set, are answered "not held" while {@link #refusing} is set, and whose every
 * call to the server fails, as if it were unreachable, while {@link #unreachable} is set.
 * {@link #backend()} has every interface of the backend it wraps (non-blocking calls, wait queue,
 * release events, session), so that an engine above it takes the paths it takes above the real
 * one: a failed non-blocking call fails its stage, as a real one does.
 */
final class FlakyRenewals {

	/** The calls that go to the server; the others (name, subscriptions, session state) do not. */
	private static final Set<String> CALLS = Set.of("tryAcquire", "tryAcquireAsync", "tryAcquireWaiting",
			"tryAcquireWaitingAsync", "acquire", "release", "releaseAsync", "releaseWanted", "withdraw",
			"withdrawAsync", "renew", "renewAsync", "claimTick");

	/** The renewal calls: blocking, and without blocking where the backend renews so. */
	private static final Set<String> RENEWALS = Set.of("renew", "renewAsync");

	final LockBackend delegate;

	final AtomicBoolean failing = new AtomicBoolean();

	final AtomicBoolean unreachable = new AtomicBoolean();

	/** While set, the backend answers every renewal "not held": the engine finds its leases lost. */
	final AtomicBoolean refusing = new AtomicBoolean();

	private final LockBackend backend;

	FlakyRenewals(LockBackend delegate) {
		this.delegate = delegate;
		this.backend = (LockBackend) Proxy.newProxyInstance(delegate.getClass().getClassLoader(),
				ClassUtils.getAllInterfaces(delegate), this::invoke);
	}

	/** The flaky client, for an engine to use. */
	LockBackend backend() {
		return this.backend;
	}

	@SuppressWarnings("unchecked")
	private @Nullable Object invoke(Object proxy, Method method, @Nullable Object[] args) throws Throwable {
		String name = method.getName();
		if (method.getDeclaringClass() == Object.class) {
			return switch (name) {
				case "equals" -> proxy == args[0];
				case "hashCode" -> System.identityHashCode(proxy);
				default -> "FlakyRenewals[" + this.delegate + "]";
			};
		}
		if (CALLS.contains(name)) {
			LockBackendException failure = this.unreachable.get()
					? new LockBackendException("the test cut this client off its backend", null)
					: (RENEWALS.contains(name) && this.failing.get())
							? new LockBackendException("renewal dropped by the test", null) : null;
			if (failure != null) {
				if (CompletionStage.class.isAssignableFrom(method.getReturnType())) {
					return CompletableFuture.failedFuture(failure);
				}
				if (args != null && args.length > 0 && args[args.length - 1] instanceof BiConsumer<?, ?> answered) {
					((BiConsumer<Object, Object>) answered).accept(null, failure);
					return null;
				}
				throw failure;
			}
			if (RENEWALS.contains(name) && this.refusing.get()) {
				return name.equals("renew") ? Set.of() : CompletableFuture.completedFuture(Set.of());
			}
		}
		try {
			return method.invoke(this.delegate, args);
		}
		catch (InvocationTargetException ex) {
			throw ex.getCause();
		}
	}

}
