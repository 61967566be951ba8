package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.List;

import dev.holdfast.core.LockListener;

/**
 * Calls several listeners in order.
 */
final class CompositeLockListener implements LockListener {

	private final List<LockListener> listeners;

	private CompositeLockListener(List<LockListener> listeners) {
		this.listeners = listeners;
	}

	static LockListener of(List<LockListener> listeners) {
		return (listeners.size() == 1) ? listeners.get(0) : new CompositeLockListener(List.copyOf(listeners));
	}

	@Override
	public void acquired(String name, String backend, Duration waited) {
		this.listeners.forEach((listener) -> listener.acquired(name, backend, waited));
	}

	@Override
	public void notAcquired(String name, String backend, Duration waited) {
		this.listeners.forEach((listener) -> listener.notAcquired(name, backend, waited));
	}

	@Override
	public void failed(String name, String backend, Duration waited, RuntimeException ex) {
		this.listeners.forEach((listener) -> listener.failed(name, backend, waited, ex));
	}

	@Override
	public void released(String name, String backend, Duration held) {
		this.listeners.forEach((listener) -> listener.released(name, backend, held));
	}

	@Override
	public void leaseLost(String name, String backend) {
		this.listeners.forEach((listener) -> listener.leaseLost(name, backend));
	}

	@Override
	public void tickSkipped(String name, String backend) {
		this.listeners.forEach((listener) -> listener.tickSkipped(name, backend));
	}

}
