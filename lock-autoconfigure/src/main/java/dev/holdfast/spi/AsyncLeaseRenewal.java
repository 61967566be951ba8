package dev.holdfast.spi;

import java.util.Collection;
import java.util.Set;
import java.util.concurrent.CompletionStage;

/**
 * A {@link LeaseRenewal} that can also renew without blocking the calling thread. The engine
 * renews with it from its timer thread, which must never block (REN-1, LDR-3); a backend without
 * it is renewed on a thread of its own.
 */
public interface AsyncLeaseRenewal extends LeaseRenewal {

	/**
	 * {@link #renew} without blocking: sends the request and returns at once. The stage completes
	 * with the keys renewed, or exceptionally (preferably with
	 * {@link dev.holdfast.LockBackendException}) when the backend cannot be reached or did not
	 * answer within its network timeout; it may complete on the client's I/O thread. Never
	 * throws: a failure completes the stage.
	 */
	CompletionStage<Set<String>> renewAsync(Collection<HeldLock> locks);

}
