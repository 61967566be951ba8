package dev.holdfast.spi;

import java.util.Collection;
import java.util.Set;

/**
 * A backend that can extend the time to live of held locks, owner-checked, for many locks in
 * one round trip.
 */
public interface LeaseRenewal {

	/**
	 * Sets each lock's time to live to its {@link HeldLock#ttl()} from now, where its owner still
	 * holds it.
	 * @return the keys that were renewed; a key not in the set is no longer held by its owner
	 * @throws dev.holdfast.LockBackendException when the backend cannot be reached; nothing is
	 * known about the locks then
	 */
	Set<String> renew(Collection<HeldLock> locks);

}
