package dev.holdfast.autoconfigure;

import java.util.Optional;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ObjectProvider;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;

/**
 * A {@link LockTemplate} that looks the real one up on first use, so that the advisor, an
 * infrastructure bean created early, does not pull the backend into early initialization.
 */
final class LazyLockTemplate implements LockTemplate {

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

}
