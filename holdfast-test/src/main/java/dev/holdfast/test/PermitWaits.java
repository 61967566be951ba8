package dev.holdfast.test;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockListener;

import static org.awaitility.Awaitility.await;

/**
 * Watches the permit slot acquisitions of one instance, per calling thread, to tell which slot a
 * waiting permit call waits on now and for how long at least it will go on waiting there: its slices
 * (SEM-4) are jittered between half and 1.5 times a base that doubles per round up to the poll
 * interval, so a slice lasts at least two thirds of the previous one, and half the poll interval
 * (an acquisition open for 150 ms is a slice, not a try-once).
 */
final class PermitWaits implements LockListener {

	private final Set<String> slotKeys;

	private final long halfPollInterval;

	/** Per calling thread: its open acquisition, and how long its last slice lasted. */
	private final Map<Thread, Waiting> waits = new HashMap<>();

	PermitWaits(Set<String> slotKeys, Duration pollInterval) {
		this.slotKeys = slotKeys;
		this.halfPollInterval = pollInterval.toNanos() / 2;
	}

	/** A thread's open acquisition of a slot, and how long its previous slice lasted (ns). */
	record Waiting(@Nullable String key, long openedAt, long lastSlice) {

		/** At least how long this open acquisition, a slice, goes on; negative if not known to be a slice. */
		long leftAtLeast(long now, long halfPollInterval) {
			long open = now - this.openedAt;
			return (this.key != null && open >= 150_000_000L)
					? Math.min(this.lastSlice * 2 / 3, halfPollInterval) - open : -1;
		}

	}

	@Override
	public LockObservation acquiring(String name, String key, String backend) {
		if (!this.slotKeys.contains(key)) {
			return LockObservation.NONE;
		}
		Thread thread = Thread.currentThread();
		long opened = System.nanoTime();
		synchronized (this) {
			Waiting before = this.waits.get(thread);
			this.waits.put(thread, new Waiting(key, opened, (before != null) ? before.lastSlice() : 0));
		}
		return new LockObservation() {

			@Override
			public void acquired(long fencingToken) {
				ended();
			}

			@Override
			public void notAcquired() {
				ended();
			}

			@Override
			public void failed(Throwable ex) {
				ended();
			}

			@Override
			public void cancelled() {
				ended();
			}

			@Override
			public void released() {
			}

			@Override
			public void lost() {
			}

			@Override
			public Observation hold() {
				return LockObservation.NONE.hold();
			}

			@Override
			public Observation.Scope openScope() {
				return LockObservation.NONE.openScope();
			}

			private void ended() {
				long lasted = System.nanoTime() - opened;
				synchronized (PermitWaits.this) {
					Waiting now = PermitWaits.this.waits.get(thread);
					if (now != null && now.openedAt() == opened) {
						long slice = (lasted >= 150_000_000L) ? lasted : now.lastSlice();
						PermitWaits.this.waits.put(thread, new Waiting(null, opened, slice));
					}
				}
			}

		};
	}

	/**
	 * Waits until {@code calls} threads wait in slices with at least 450 ms left. Each thread is known to
	 * be in such a slice for only part of each of its slices (seconds long once they reach the poll
	 * interval), so several calls meet there only now and then: up to 45 s, not a bound on the product.
	 * @return those slices
	 */
	List<Waiting> awaitLongWaits(int calls) {
		AtomicReference<List<Waiting>> found = new AtomicReference<>();
		await().atMost(Duration.ofSeconds(45)).pollInterval(Duration.ofMillis(5)).until(() -> {
			long now = System.nanoTime();
			synchronized (this) {
				found.set(this.waits.values().stream()
					.filter((w) -> w.leftAtLeast(now, this.halfPollInterval) >= 450_000_000L)
					.toList());
			}
			return found.get().size() >= calls;
		});
		return found.get();
	}

	/** Whether {@code slice} is still open. */
	synchronized boolean stillOpen(Waiting slice) {
		return this.waits.values().stream().anyMatch((w) -> w.key() != null && w.openedAt() == slice.openedAt());
	}

	/** At least how long the slices of {@code slices} still open go on after {@code now} (ns, the least; 0 if none). */
	synchronized long leftAtLeast(List<Waiting> slices, long now) {
		return slices.stream()
			.filter(this::stillOpen)
			.mapToLong((slice) -> slice.leftAtLeast(now, this.halfPollInterval))
			.min()
			.orElse(0);
	}

	/** The slots {@code slices} wait on. */
	static Set<String> keys(List<Waiting> slices) {
		return slices.stream().map(Waiting::key).collect(Collectors.toSet());
	}

}
