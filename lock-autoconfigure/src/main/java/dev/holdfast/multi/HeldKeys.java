package dev.holdfast.multi;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Collectors;

import dev.holdfast.Lease;
import dev.holdfast.Leases;
import dev.holdfast.support.LeaseView;

/**
 * The leases of several keys, in the order they were taken; closing releases them in reverse.
 * Each key's lease keeps its own rules (its hold, renewal, loss).
 */
final class HeldKeys implements Leases {

	private final List<Lease> leases;

	/** The canonical key of each lease, at the same index. */
	private final List<String> orderKeys;

	private final Function<Object, String> order;

	HeldKeys(List<Lease> leases, List<String> orderKeys, Function<Object, String> order) {
		this.leases = List.copyOf(leases);
		this.orderKeys = List.copyOf(orderKeys);
		this.order = order;
	}

	/** The same keys as views: closing them only ends the views. */
	HeldKeys view() {
		return new HeldKeys(this.leases.stream().map(LeaseView::of).toList(), this.orderKeys, this.order);
	}

	static void releaseInReverse(List<Lease> leases) {
		for (int i = leases.size() - 1; i >= 0; i--) {
			leases.get(i).close();
		}
	}

	@Override
	public List<Lease> leases() {
		return this.leases;
	}

	@Override
	public Lease lease(Object key) {
		int index = this.orderKeys.indexOf(this.order.apply(key));
		if (index < 0) {
			throw new IllegalArgumentException("The key asked for is not one of the " + this.leases.size()
					+ " keys held: pass a key value as it was given to the lock");
		}
		return this.leases.get(index);
	}

	/** The backend keys, comma-separated, in the order they were taken. */
	@Override
	public String key() {
		return this.leases.stream().map(Lease::key).collect(Collectors.joining(", "));
	}

	/** When the first key was taken. */
	@Override
	public Instant acquiredAt() {
		return this.leases.get(0).acquiredAt();
	}

	/** The earliest expiry of the keys. */
	@Override
	public Instant expiresAt() {
		return this.leases.stream().map(Lease::expiresAt).min(Instant::compareTo).orElseThrow();
	}

	@Override
	public boolean isValid() {
		return this.leases.stream().allMatch(Lease::isValid);
	}

	/** Extends every key; {@code false} if one of them is lost. */
	@Override
	public boolean extend(Duration ttl) {
		boolean all = true;
		for (Lease lease : this.leases) {
			all &= lease.extend(ttl);
		}
		return all;
	}

	@Override
	public void close() {
		releaseInReverse(this.leases);
	}

	@Override
	public String toString() {
		return "Leases" + this.leases;
	}

}
