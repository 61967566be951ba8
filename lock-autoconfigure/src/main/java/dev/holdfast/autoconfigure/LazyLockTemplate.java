package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.Collection;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ObjectProvider;

import dev.holdfast.AsyncLockTemplate;
import dev.holdfast.Lease;
import dev.holdfast.Leases;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;

/**
 * A {@link LockTemplate} that looks the real one up on first use, so that the advisor, an
 * infrastructure bean created early, does not pull the backend into early initialization.
 * Non-blocking acquisition is offered when the real template offers it.
 */
final class LazyLockTemplate implements AsyncLockTemplate {

	private final ObjectProvider<LockTemplate> provider;

	private volatile @Nullable LockTemplate template;

	LazyLockTemplate(ObjectProvider<LockTemplate> provider) {
		this.provider = provider;
	}

	private LockTemplate template() {
		LockTemplate current = this.template;
		if (current == null) {
			current = this.provider.getObject();
			this.template = current;
		}
		return current;
	}

	@Override
	public <T extends @Nullable Object, E extends Exception> T executeLocked(String name, @Nullable Object key,
			LockOptions options, LockedAction<T, E> action) throws E {
		return template().executeLocked(name, key, options, action);
	}

	@Override
	public <T, E extends Exception> Optional<T> tryExecuteLocked(String name, @Nullable Object key, LockOptions options,
			LockedAction<T, E> action) throws E {
		return template().tryExecuteLocked(name, key, options, action);
	}

	@Override
	public Optional<Lease> tryAcquire(String name, @Nullable Object key, LockOptions options) {
		return template().tryAcquire(name, key, options);
	}

	@Override
	public Lease acquire(String name, @Nullable Object key, LockOptions options) {
		return template().acquire(name, key, options);
	}

	@Override
	public Optional<Leases> tryAcquireAll(String name, Collection<?> keys, LockOptions options) {
		return template().tryAcquireAll(name, keys, options);
	}

	@Override
	public Leases acquireAll(String name, Collection<?> keys, LockOptions options) {
		return template().acquireAll(name, keys, options);
	}

	@Override
	public Optional<Lease> tryAcquirePermit(String name, @Nullable Object key, int permits, LockOptions options) {
		return template().tryAcquirePermit(name, key, permits, options);
	}

	@Override
	public Lease acquirePermit(String name, @Nullable Object key, int permits, LockOptions options) {
		return template().acquirePermit(name, key, permits, options);
	}

	@Override
	public boolean supportsNonBlocking() {
		return template() instanceof AsyncLockTemplate async && async.supportsNonBlocking();
	}

	@Override
	public CompletableFuture<@Nullable Lease> tryAcquireAsync(String name, @Nullable Object key, LockOptions options) {
		return asyncTemplate().tryAcquireAsync(name, key, options);
	}

	@Override
	public CompletionStage<Void> releaseAsync(Lease lease) {
		if (template() instanceof AsyncLockTemplate async) {
			return async.releaseAsync(lease);
		}
		lease.close();
		return CompletableFuture.completedFuture(null);
	}

	@Override
	public Duration waitTime(LockOptions options) {
		return asyncTemplate().waitTime(options);
	}

	@Override
	public String keyFor(String name, @Nullable Object key) {
		return asyncTemplate().keyFor(name, key);
	}

	@Override
	public String shownKey(String key) {
		return asyncTemplate().shownKey(key);
	}

	private AsyncLockTemplate asyncTemplate() {
		if (template() instanceof AsyncLockTemplate async) {
			return async;
		}
		throw new UnsupportedOperationException("The LockTemplate bean " + template() + " is not an AsyncLockTemplate");
	}

}
