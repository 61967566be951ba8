package dev.holdfast.autoconfigure;

import java.time.Duration;

import dev.holdfast.LockListener;

/**
 * The listeners of a named backend's engine: each call reaches the application's listeners with
 * the backend's name ({@code jobs}) where the default backend's engine passes its type
 * ({@code redis}), so that meters and observations are tagged {@code backend=<name>} (NBK-5). The
 * engine calls the methods that take a {@code mode} (OBS-14), so only those are passed on.
 */
record NamedBackendListener(String backend, LockListener delegate) implements LockListener {

	@Override
	public LockObservation acquiring(String name, String key, String type) {
		return this.delegate.acquiring(name, key, this.backend);
	}

	@Override
	public LockObservation acquiringRead(String name, String key, String type) {
		return this.delegate.acquiringRead(name, key, this.backend);
	}

	@Override
	public void acquired(String name, String type, String mode, Duration waited) {
		this.delegate.acquired(name, this.backend, mode, waited);
	}

	@Override
	public void notAcquired(String name, String type, String mode, Duration waited) {
		this.delegate.notAcquired(name, this.backend, mode, waited);
	}

	@Override
	public void failed(String name, String type, String mode, Duration waited, RuntimeException ex) {
		this.delegate.failed(name, this.backend, mode, waited, ex);
	}

	@Override
	public void released(String name, String type, String mode, Duration held) {
		this.delegate.released(name, this.backend, mode, held);
	}

	@Override
	public void releaseFailed(String name, String type, String mode, RuntimeException ex) {
		this.delegate.releaseFailed(name, this.backend, mode, ex);
	}

	@Override
	public void leaseLost(String name, String type, String mode) {
		this.delegate.leaseLost(name, this.backend, mode);
	}

	@Override
	public void tickSkipped(String name, String type, String reason) {
		this.delegate.tickSkipped(name, this.backend, reason);
	}

}
