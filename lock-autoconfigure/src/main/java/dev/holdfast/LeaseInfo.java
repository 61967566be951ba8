package dev.holdfast;

import java.time.Instant;
import java.util.Set;

/**
 * A snapshot of a lease this process holds, for operators.
 *
 * @param name the lock name
 * @param key the backend key
 * @param fencingToken the fencing token of the acquisition
 * @param acquiredAt when it was acquired (this JVM's clock)
 * @param expiresAt when it expires unless renewed (this JVM's clock)
 * @param valid whether it is still held for sure
 * @param mode what the lease holds, in the words of the meters' and observations' {@code mode} tag:
 * {@value #EXCLUSIVE} (a lock, or the write lock of a read-write lock), {@value #PERMIT} (a permit
 * of a semaphore, told by its slot key) or {@value #READ} (a read lease, shared by this process's
 * readers of the lock)
 * @param holds the holds open on it in this process: the reentrant holds of its thread, or of a read
 * lease the holds of all its local readers (each thread's reentrant holds counted); 0 while its release
 * is starting
 */
public record LeaseInfo(String name, String key, long fencingToken, Instant acquiredAt, Instant expiresAt,
		boolean valid, String mode, int holds) {

	/** The {@code mode} of a lock or a write lock. */
	public static final String EXCLUSIVE = "exclusive";

	/** The {@code mode} of a permit of a semaphore. */
	public static final String PERMIT = "permit";

	/** The {@code mode} of a read lease. */
	public static final String READ = "read";

	private static final Set<String> MODES = Set.of(EXCLUSIVE, PERMIT, READ);

	/**
	 * Checks {@code mode} and {@code holds}.
	 * @throws IllegalArgumentException naming the values accepted
	 */
	public LeaseInfo {
		if (!MODES.contains(mode)) {
			throw new IllegalArgumentException(
					"LeaseInfo mode '" + mode + "' is unknown: give " + EXCLUSIVE + ", " + PERMIT + " or " + READ);
		}
		if (holds < 0) {
			throw new IllegalArgumentException("LeaseInfo holds " + holds + " is negative: give 0 or more");
		}
	}

	/**
	 * An exclusive lease held once ({@code mode} {@value #EXCLUSIVE}, {@code holds} 1), as this
	 * snapshot was before it told the mode.
	 */
	public LeaseInfo(String name, String key, long fencingToken, Instant acquiredAt, Instant expiresAt,
			boolean valid) {
		this(name, key, fencingToken, acquiredAt, expiresAt, valid, EXCLUSIVE, 1);
	}

}
