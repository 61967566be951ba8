package dev.holdfast.redis;

import java.time.Duration;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.SharedLocks;
import dev.holdfast.spi.WaiterHandoff;

/**
 * A non-blocking Redis backend that forwards every call, {@link WaiterHandoff} included, to the
 * real one, so that tests can watch or hold back single calls by overriding them while the
 * template's waiters record themselves and its releases hand on as in production.
 */
class ForwardingRedisBackend
		implements AsyncLockBackend, LeaseRenewal, WaiterHandoff, ReleaseEvents, SharedLocks, AutoCloseable {

	final RedisLockBackend delegate;

	private final AsyncLockBackend async;

	ForwardingRedisBackend(RedisLockBackend delegate) {
		this.delegate = delegate;
		this.async = (AsyncLockBackend) delegate;
	}

	@Override
	public String name() {
		return this.delegate.name();
	}

	@Override
	public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
		return this.delegate.tryAcquire(key, owner, ttl);
	}

	@Override
	public AcquireResult tryAcquireShared(String key, String owner, Duration ttl, Duration recordFor) {
		return this.delegate.tryAcquireShared(key, owner, ttl, recordFor);
	}

	@Override
	public Set<String> renewShared(Collection<HeldLock> holds) {
		return this.delegate.renewShared(holds);
	}

	@Override
	public boolean release(String key, String owner) {
		return this.delegate.release(key, owner);
	}

	@Override
	public CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl) {
		return this.async.tryAcquireAsync(key, owner, ttl);
	}

	@Override
	public CompletionStage<Boolean> releaseAsync(String key, String owner) {
		return this.async.releaseAsync(key, owner);
	}

	@Override
	public AcquireResult tryAcquireWaiting(String key, String owner, Duration ttl, Duration recordFor) {
		return this.delegate.tryAcquireWaiting(key, owner, ttl, recordFor);
	}

	@Override
	public CompletionStage<AcquireResult> tryAcquireWaitingAsync(String key, String owner, Duration ttl,
			Duration recordFor) {
		return this.delegate.tryAcquireWaitingAsync(key, owner, ttl, recordFor);
	}

	@Override
	public boolean release(String key, String owner, @Nullable String nextLocal) {
		return this.delegate.release(key, owner, nextLocal);
	}

	@Override
	public void releaseAsync(String key, String owner, @Nullable String nextLocal,
			BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
		this.delegate.releaseAsync(key, owner, nextLocal, whenAnswered);
	}

	@Override
	public boolean withdraw(String key, String owner) {
		return this.delegate.withdraw(key, owner);
	}

	@Override
	public CompletionStage<Boolean> withdrawAsync(String key, String owner) {
		return this.delegate.withdrawAsync(key, owner);
	}

	@Override
	public AutoCloseable subscribe(Consumer<String> released, Reservations reserved) {
		return this.delegate.subscribe(released, reserved);
	}

	@Override
	public boolean isListening() {
		return this.delegate.isListening();
	}

	@Override
	public Set<String> renew(Collection<HeldLock> locks) {
		return this.delegate.renew(locks);
	}

	@Override
	public AutoCloseable subscribe(Consumer<String> listener) {
		return this.delegate.subscribe(listener);
	}

	@Override
	public void close() {
		this.delegate.close();
	}

}
