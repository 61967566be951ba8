package dev.holdfast.spi;

import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * A backend that can take several locks in one round trip: all or none, as the engine tries the
 * keys of a several-key call before it takes them one by one (rule MKY-6 in docs/DESIGN.md), or
 * the first free one, as a semaphore's scan tries its permit slots (SEM-7).
 */
public interface KeySetAcquisition {

	/**
	 * Whether {@link #tryAcquireAll} and {@link #tryAcquireFirst} can be called now: false where the locks cannot be taken in
	 * one call (on Redis Cluster each key has its own slot; with replicas to acknowledge), and the
	 * engine then takes the keys one by one.
	 */
	boolean acquiresKeySets();

	/**
	 * Takes every lock in one round trip if none of them is held, or reserved for another owner;
	 * else takes none. Each is a try-once acquisition ({@link LockBackend#tryAcquire}) of its key,
	 * with its own owner token and time to live, that records no waiter; each lock taken gets the
	 * fencing token that acquisition would get.
	 * @param locks distinct keys, each with an owner token unique to it
	 * @return the fencing token of each lock, in the order of {@code locks}, when all were taken;
	 * {@code null} when one was held and none was taken, or when the backend found it cannot take
	 * them at once after all (none taken; {@link #acquiresKeySets} is false from then on)
	 * @throws dev.holdfast.LockBackendException when the backend cannot be reached; the locks may
	 * or may not have been taken then
	 */
	long @Nullable [] tryAcquireAll(List<HeldLock> locks);

	/**
	 * Takes the first of {@code locks}, in their order, that is neither held nor reserved for
	 * another owner, in one round trip; takes none if each is. The lock taken is a try-once
	 * acquisition ({@link LockBackend#tryAcquire}) of its key with its own owner token and time to
	 * live, recording no waiter, and gets the fencing token that acquisition would get. A refused
	 * lock is not marked or recorded.
	 * @param locks distinct keys, each with an owner token unique to it
	 * @return the lock taken and its fencing token; {@code null} when none was free, or when the
	 * backend found it cannot take them at once after all (none taken; {@link #acquiresKeySets} is
	 * false from then on)
	 * @throws dev.holdfast.LockBackendException when the backend cannot be reached; any one of the
	 * locks may have been taken then
	 */
	@Nullable FirstTaken tryAcquireFirst(List<HeldLock> locks);

	/**
	 * The lock {@link #tryAcquireFirst} took.
	 * @param index its index in the locks given
	 * @param fencingToken its fencing token
	 */
	record FirstTaken(int index, long fencingToken) {
	}

}
