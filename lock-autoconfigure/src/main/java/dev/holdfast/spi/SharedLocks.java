package dev.holdfast.spi;

import java.time.Duration;
import java.util.Collection;
import java.util.Set;

/**
 * A backend that gives read holds of a key beside its exclusive locks, for read-write locks
 * (decision 0048, rules RWL-* in docs/DESIGN.md). While a key is read-held, its lock record is
 * held by the reader group, so that every exclusive attempt ({@link LockBackend#tryAcquire},
 * {@link WaiterHandoff#tryAcquireWaiting}, {@link WaitQueue#acquire}) is refused as by any other
 * holder and is otherwise unchanged. A backend without this interface cannot give read holds:
 * an application that asks for one on it fails at startup, naming the backend.
 * <p>
 * {@link LockBackend#release(String, String)} releases a read hold as it releases a lock (owner
 * tokens are unique, so the owner tells which it is); the release of the group's last reader
 * frees the record and wakes waiters as a release of the lock does.
 */
public interface SharedLocks {

	/**
	 * Takes a read hold of {@code key} for {@code owner}, in one round trip: granted when the key
	 * is free or read-held and no writer waits for it (a waiting writer's live record refuses new
	 * readers, also a join of a group that is live). A resend by the same owner answers as its
	 * first run did.
	 * @param key the full backend key, the same as the exclusive lock's
	 * @param owner a token unique to this read hold
	 * @param ttl how long the hold lives unless renewed, by the backend's clock
	 * @param recordFor zero for a try-once attempt, which records nothing; else the attempt of a
	 * reader that waits, which when refused records that a reader waits for this long by the
	 * backend's clock, so that the writer's release wakes it
	 * @return acquired with the reader's fencing token: the key's fence, at least the latest
	 * write's token and below every later write's; or held, with how long the writer's lease or
	 * the waiting writer's record lives at most ({@code -1} when not said)
	 */
	AcquireResult tryAcquireShared(String key, String owner, Duration ttl, Duration recordFor);

	/**
	 * {@link LeaseRenewal#renew} for read holds: sets each hold's time to live to its
	 * {@link HeldLock#ttl()} from now where its owner still holds it in the key's live group.
	 * @return the keys whose holds were renewed
	 * @throws dev.holdfast.LockBackendException when the backend cannot be reached
	 */
	Set<String> renewShared(Collection<HeldLock> holds);

	/**
	 * {@link LockBackend#tryAcquire} for an exclusive acquisition that waits, on a backend that
	 * keeps no waiter records otherwise (not a {@link WaiterHandoff}, not a {@link WaitQueue}):
	 * when refused because the key is read-held, it also records a waiting writer for
	 * {@code recordFor} by the backend's clock, so that new readers are refused meanwhile
	 * (writer preference). The default is the plain attempt, for a backend whose readers see
	 * waiting writers otherwise.
	 */
	default AcquireResult tryAcquireAsWaitingWriter(String key, String owner, Duration ttl, Duration recordFor) {
		return ((LockBackend) this).tryAcquire(key, owner, ttl);
	}

	/**
	 * For a backend that is also a {@link WaitQueue}: a read hold that waits in the backend's
	 * queue for at most {@code maxWait}, as {@link WaitQueue#acquire} does for the lock; a reader
	 * holds when no writer is ahead of it in the queue.
	 * @throws InterruptedException if the calling thread was interrupted while waiting
	 */
	default WaitQueue.Outcome acquireShared(String key, String owner, Duration ttl, Duration maxWait)
			throws InterruptedException {
		throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no wait queue");
	}

	/**
	 * Why {@code backend}, which is no {@code SharedLocks}, gives no read holds, naming it and the
	 * primitive: the message of a {@code READ} asked of it, at startup or at the call (RWL-9).
	 */
	static String unsupportedBy(LockBackend backend) {
		String why = backend.name().startsWith("redlock")
				? "Redlock gives no read holds: a reader's token must be the key's fence, which Redlock's tokens, "
						+ "taken per node by a quorum, do not give (decision 0024)"
				: "it does not implement SharedLocks, the backend primitive of read holds";
		return "the " + backend.name() + " backend cannot give read holds (LockMode.READ): " + why;
	}

}
