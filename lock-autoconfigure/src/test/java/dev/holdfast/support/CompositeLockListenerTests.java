package dev.holdfast.support;

import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.LockListener;
import dev.holdfast.LockOptions;
import dev.holdfast.actuate.LockObservationListener;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.EngineLease;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;

class CompositeLockListenerTests {

	@Test
	void listenersThatDoNotObserveCostNoCompositeObservation() {
		LockListener listener = CompositeLockListener.of(List.of(new LockListener() {
		}, new LockObservationListener(ObservationRegistry.NOOP)));
		assertThat(listener.acquiring("orders", "orders:1", "memory")).isSameAs(LockObservation.NONE);
	}

	@Test
	void aThrowingListenerDoesNotKeepTheNextOnesFromBeingCalled() {
		java.util.concurrent.atomic.AtomicInteger released = new java.util.concurrent.atomic.AtomicInteger();
		LockListener listener = CompositeLockListener.of(List.of(new LockListener() {
			@Override
			public void released(String name, String backend, java.time.Duration held) {
				throw new IllegalStateException("listener failure");
			}
		}, new LockListener() {
			@Override
			public void released(String name, String backend, java.time.Duration held) {
				released.incrementAndGet();
			}
		}));
		listener.released("orders", "memory", java.time.Duration.ZERO);
		assertThat(released).hasValue(1);
	}

	@Test
	void everyObservingListenerSeesTheAcquisitionAndTheHold() {
		Stopped first = new Stopped();
		Stopped second = new Stopped();
		LockListener listener = CompositeLockListener.of(List.of(new LockObservationListener(first.registry()),
				new LockListener() {
				}, new LockObservationListener(second.registry())));
		try (DefaultLockTemplate template = new DefaultLockTemplate(new InMemoryLockBackend(), LockSettings.defaults(),
				listener)) {
			try (Lease lease = template.acquire("orders", 1, LockOptions.defaults());
					Observation.Scope scope = EngineLease.observationOf(lease).openScope()) {
				assertThat(first.registry().getCurrentObservation())
					.isSameAs(EngineLease.observationOf(lease).hold());
			}
		}
		assertThat(first.names).containsExactly("holdfast.lock.acquire", "holdfast.lock.held");
		assertThat(second.names).containsExactly("holdfast.lock.acquire", "holdfast.lock.held");
	}

	/** A registry whose handler records the names of stopped observations. */
	private static final class Stopped implements ObservationHandler<Observation.Context> {

		final Queue<String> names = new ConcurrentLinkedQueue<>();

		private final ObservationRegistry registry = ObservationRegistry.create();

		Stopped() {
			this.registry.observationConfig().observationHandler(this);
		}

		ObservationRegistry registry() {
			return this.registry;
		}

		@Override
		public void onStop(Observation.Context context) {
			this.names.add(context.getName());
		}

		@Override
		public boolean supportsContext(Observation.Context context) {
			return true;
		}

	}

}
