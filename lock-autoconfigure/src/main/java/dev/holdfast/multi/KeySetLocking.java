package dev.holdfast.multi;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.Function;

import org.jspecify.annotations.Nullable;

import dev.holdfast.AsyncLockTemplate;
import dev.holdfast.Lease;
import dev.holdfast.Leases;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.core.EngineLease;
import dev.holdfast.core.LockEngine;
import dev.holdfast.core.LockKeys;
import dev.holdfast.support.LeaseView;

/**
 * Takes the locks of several keys of one name through a {@link LockTemplate}'s single-key
 * acquisitions, so that every backend and every rule of a single lease (owner tokens, renewal,
 * reentrancy, fencing tokens) holds for each key, with no protocol of its own:
 * <ul>
 * <li>in one canonical order, the keys' backend keys sorted (duplicates removed): two callers
 * that want overlapping keys take the shared ones in the same order, so neither can hold one
 * that the other holds while waiting for one the other holds;</li>
 * <li>all or none within one wait time: each key waits for what is left of it, and when one
 * stays held, or its acquisition fails, the keys already taken are released, in reverse;</li>
 * <li>released in reverse order when the {@link Leases} close.</li>
 * </ul>
 * Where the backend can ({@link dev.holdfast.spi.KeySetAcquisition}), all keys are first tried in
 * one backend call, a try-once of each; refused, they are taken one by one as above.
 */
public final class KeySetLocking {

	/** The order for a template that does not tell its backend keys: the keys as encoded without prefix. */
	private static final LockKeys UNPREFIXED = new LockKeys("", Integer.MAX_VALUE);

	private KeySetLocking() {
	}

	/**
	 * The leases of all {@code keys}, or {@code null} if one stayed held for the wait time and
	 * {@code throwing} is off.
	 * @param throwing whether a key that stays held throws a {@link LockNotAcquiredException} naming
	 * it and the call's wait time
	 * @throws IllegalArgumentException if {@code keys} is empty or holds {@code null}, or the wait
	 * time is unset and the template does not tell its default
	 */
	public static @Nullable Leases acquire(LockTemplate template, String name, Collection<?> keys,
			LockOptions options, boolean throwing) {
		if (options.getMode() == LockMode.READ) {
			throw new UnsupportedOperationException("Locks of several keys of '" + name + "' were asked for in READ "
					+ "mode, which several keys do not give yet (RWL-10): take one read hold per key with "
					+ "acquire(name, key, options), in a fixed order, or use the default WRITE mode.");
		}
		Function<Object, String> order = orderOf(template, name);
		TreeMap<String, Object> ordered = new TreeMap<>();
		int index = 0;
		for (Object key : Objects.requireNonNull(keys, "keys must not be null")) {
			if (key == null) {
				throw new IllegalArgumentException("Key " + index + " of the " + keys.size() + " keys of lock '" + name
						+ "' is null; a lock key must not be null");
			}
			ordered.putIfAbsent(order.apply(key), key);
			index++;
		}
		if (ordered.isEmpty()) {
			throw new IllegalArgumentException("No keys were given for lock '" + name
					+ "': pass at least one key, or lock the name alone with acquire(name, null, options)");
		}
		Duration waitTime = waitTime(template, options);
		long deadline = System.nanoTime() + waitTime.toNanos();
		if (template instanceof LockEngine engine && ordered.size() > 1) {
			// The ordered keys are the engine's backend keys: all at once if all are free (MKY-6).
			List<Lease> all = engine.acquireAllAtOnce(name, new ArrayList<>(ordered.keySet()), options);
			if (all != null) {
				return new HeldKeys(all, new ArrayList<>(ordered.keySet()), order);
			}
		}
		List<Lease> taken = new ArrayList<>(ordered.size());
		try {
			for (Object key : ordered.values()) {
				LockOptions each = options.waitTime(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
				Lease lease = throwing ? template.acquire(name, key, each)
						: template.tryAcquire(name, key, each).orElse(null);
				if (lease == null) {
					HeldKeys.releaseInReverse(taken);
					return null;
				}
				taken.add(lease);
			}
		}
		catch (LockNotAcquiredException ex) {
			HeldKeys.releaseInReverse(taken);
			if (template instanceof AsyncLockTemplate async) {
				// the call's wait time, not what was left of it for this key
				throw new LockNotAcquiredException(ex.getLockKey(), async.shownKey(ex.getLockKey()), waitTime);
			}
			throw ex;
		}
		catch (RuntimeException | Error ex) {
			HeldKeys.releaseInReverse(taken);
			throw ex;
		}
		return new HeldKeys(taken, new ArrayList<>(ordered.keySet()), order);
	}

	/**
	 * What the locked method sees: for {@link Leases}, views of each key's lease (closing them
	 * releases nothing under the method), else {@link LeaseView}.
	 */
	public static Lease viewOf(Lease lease) {
		return (lease instanceof HeldKeys held) ? held.view() : LeaseView.of(lease);
	}

	/** {@link EngineLease#detach} of the lease, or of each key's lease. */
	public static void detach(Lease lease) {
		if (lease instanceof Leases leases) {
			leases.leases().forEach(EngineLease::detach);
		}
		else {
			EngineLease.detach(lease);
		}
	}

	/** The canonical order of keys: the backend key, else the key encoded without prefix. */
	private static Function<Object, String> orderOf(LockTemplate template, String name) {
		if (template instanceof AsyncLockTemplate async) {
			try {
				async.keyFor(name, null);
				return (key) -> async.keyFor(name, key);
			}
			catch (UnsupportedOperationException ex) {
				// a template that does not tell its keys: the order below is as canonical
			}
		}
		return (key) -> UNPREFIXED.encode(name, key);
	}

	private static Duration waitTime(LockTemplate template, LockOptions options) {
		if (options.getWaitTime() != null) {
			return options.getWaitTime();
		}
		if (template instanceof AsyncLockTemplate async) {
			return async.waitTime(options);
		}
		throw new IllegalArgumentException("Locking several keys needs the wait time, and "
				+ template.getClass().getName() + " does not tell its default: set LockOptions.waitTime(...), "
				+ "or waitTime on the annotation");
	}

}
