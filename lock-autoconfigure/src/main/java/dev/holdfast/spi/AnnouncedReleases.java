package dev.holdfast.spi;

/**
 * A backend with release events that can announce a release on request, to every subscriber,
 * its own included. The engine uses it when a thread of its own waits for the key it releases:
 * that thread then starts from the announcement, as the other processes' waiters do, instead of
 * from the release's answer, which reaches it first and would let it win nearly every time.
 */
public interface AnnouncedReleases extends ReleaseEvents {

	/**
	 * Releases the lock if {@code owner} holds it, as {@link LockBackend#release} does, and if it
	 * did, announces the release to the subscribers of every process, this one included, whether
	 * or not an attempt was refused on it.
	 * @return whether {@code owner} held the lock (and the release was announced)
	 */
	boolean releaseAnnounced(String key, String owner);

	/**
	 * Whether {@link #releaseWanted} decides which process gets a lock that threads of this process
	 * and of another process wait for: the engine then uses it whenever a thread of its own wants
	 * the key, and wakes that thread with the release's answer instead of an announcement.
	 */
	default boolean drawsNextInstance() {
		return false;
	}

	/**
	 * Releases the lock if {@code owner} holds it, as {@link LockBackend#release} does, when a
	 * thread of this process wants the key; used only if {@link #drawsNextInstance()}. When
	 * another process waits for the key too, the backend reserves it for one of the two, drawn,
	 * and announces a reservation for the other process to that process. The default:
	 * {@link #releaseAnnounced}.
	 * @return whether {@code owner} held the lock
	 */
	default boolean releaseWanted(String key, String owner) {
		return releaseAnnounced(key, owner);
	}

}
