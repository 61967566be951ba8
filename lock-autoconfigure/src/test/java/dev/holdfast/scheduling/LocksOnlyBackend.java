package dev.holdfast.scheduling;

import java.time.Duration;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.LockBackend;

/**
 * A backend with locks only, none of the optional abilities: the scheduler then claims every
 * tick as a lock of its own, as it does on backends without {@link dev.holdfast.spi.TickClaims}.
 */
final class LocksOnlyBackend implements LockBackend {

	private final LockBackend locks;

	LocksOnlyBackend(LockBackend locks) {
		this.locks = locks;
	}

	@Override
	public String name() {
		return this.locks.name();
	}

	@Override
	public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
		return this.locks.tryAcquire(key, owner, ttl);
	}

	@Override
	public boolean release(String key, String owner) {
		return this.locks.release(key, owner);
	}

}
