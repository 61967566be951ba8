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

}
