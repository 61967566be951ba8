package dev.holdfast.spi;

/**
 * A backend with release events that can decide, at a release, which of two instances gets the
 * lock: the releasing one, a thread of which wants the key, or the one whose refused attempt marked
 * it (PostgreSQL's fair handoff). The engine then keeps its own waiter silent while it holds the
 * key, releases with {@link #releaseWanted} when a thread of its own wants it, and wakes that
 * thread with the release's answer.
 */
public interface AnnouncedReleases extends ReleaseEvents {

	/**
	 * Whether {@link #releaseWanted} draws between this instance and another that waits, now
	 * (asked at each release: a backend may know only after its first statement).
	 */
	boolean drawsNextInstance();

	/**
	 * Releases the lock if {@code owner} holds it, as {@link LockBackend#release} does, when a
	 * thread of this process wants the key; used only if {@link #drawsNextInstance()}. When
	 * another process waits for the key too, the backend reserves it for one of the two, drawn,
	 * and announces a reservation for the other process to that process.
	 * @return whether {@code owner} held the lock
	 */
	boolean releaseWanted(String key, String owner);

}
