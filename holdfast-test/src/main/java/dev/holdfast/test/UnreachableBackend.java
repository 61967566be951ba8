package dev.holdfast.test;

import java.time.Duration;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;

/**
 * A client of a real backend that the test cuts off: while {@link #down} is set, every call fails
 * as a call to an unreachable server does, and nothing reaches the server. Only the blocking
 * calls: the engine above it acquires without the backend's non-blocking calls.
 */
final class UnreachableBackend implements LockBackend, LeaseRenewal {

	final AtomicBoolean down = new AtomicBoolean();

	private final LockBackend delegate;

	UnreachableBackend(LockBackend delegate) {
		this.delegate = delegate;
	}

	@Override
	public String name() {
		return this.delegate.name();
	}

	@Override
	public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
		check();
		return this.delegate.tryAcquire(key, owner, ttl);
	}

	@Override
	public boolean release(String key, String owner) {
		check();
		return this.delegate.release(key, owner);
	}

	@Override
	public Set<String> renew(Collection<HeldLock> locks) {
		check();
		return ((LeaseRenewal) this.delegate).renew(locks);
	}

	@Override
	public Duration clockDriftAllowance(Duration ttl) {
		return this.delegate.clockDriftAllowance(ttl);
	}

	private void check() {
		if (this.down.get()) {
			throw new LockBackendException("the test cut this client off its backend", null);
		}
	}

}
