package dev.holdfast.actuate;

import java.security.Principal;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.SecurityContext;

import dev.holdfast.core.LockEngine;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.ClusterLocks.Listing;

/**
 * What the {@code locks} endpoint shows of the locks of every instance, and its forced release,
 * through the backend's {@link ClusterLocks}; a backend without it is answered as unsupported.
 */
public final class ClusterLocksView {

	/** The most locks listed unless configured otherwise. */
	public static final int DEFAULT_MAX_LISTED = 500;

	private static final Pattern MASKED = Pattern.compile(".*:\\*{6}#[0-9a-f]{4}");

	private static final Log logger = LogFactory.getLog(LocksEndpoint.class);

	private final LockEngine engine;

	private final int maxListed;

	/** The key prefix of each named backend, by name: their keys are theirs, even on this server (NBK-6). */
	private final Map<String, String> named;

	/**
	 * @param named the key prefix of each named backend ({@code holdfast.backends.<name>}), by
	 * name: keys under them are left out of the listing and refused a forced release
	 */
	ClusterLocksView(LockEngine engine, int maxListed, Map<String, String> named) {
		if (maxListed < 1) {
			throw new IllegalArgumentException(
					"maxListed (management.endpoint.locks.max-listed) must be at least 1, was " + maxListed);
		}
		this.engine = engine;
		this.maxListed = maxListed;
		this.named = Map.copyOf(named);
	}

	ClusterLocksDescriptor list(boolean shown) {
		String backend = this.engine.backendName();
		if (!(this.engine.backend() instanceof ClusterLocks locks)) {
			return new ClusterLocksDescriptor(backend, false, unsupported(), true, List.of());
		}
		Listing listing = locks.listLocks(this.engine.keyPrefix(), this.maxListed);
		Instant now = this.engine.clock().instant();
		List<ClusterLockDescriptor> described = listing.locks()
			.stream()
			.filter((lock) -> namedBackendOf(lock.key()) == null)
			.map((lock) -> new ClusterLockDescriptor(shown(lock.key(), shown), lock.instance(), lock.fencingToken(),
					lock.remainingMillis(), (lock.remainingMillis() >= 0) ? now.plusMillis(lock.remainingMillis()) : null))
			.toList();
		String note = listing.complete() ? null
				: "Listing stopped at its bound (management.endpoint.locks.max-listed=" + this.maxListed + ")";
		return new ClusterLocksDescriptor(backend, true, note, listing.complete(), described);
	}

	ForcedReleaseDescriptor forceRelease(SecurityContext securityContext, String key, @Nullable Long fencingToken) {
		if (!(this.engine.backend() instanceof ClusterLocks locks)) {
			return new ForcedReleaseDescriptor(key, false, unsupported());
		}
		String target = key;
		if (!key.startsWith(this.engine.keyPrefix())) {
			return new ForcedReleaseDescriptor(key, false,
					"Not a lock of this application: its keys start with '" + this.engine.keyPrefix() + "'");
		}
		String namedBackend = namedBackendOf(key);
		if (namedBackend != null) {
			return new ForcedReleaseDescriptor(key, false, "A lock of the backend '" + namedBackend + "' (its keys start"
					+ " with '" + this.named.get(namedBackend) + "'): a forced release covers the default backend's only");
		}
		if (isMasked(key)) {
			List<BackendLock> matching = locks.listLocks(this.engine.keyPrefix(), this.maxListed)
				.locks()
				.stream()
				.filter((lock) -> namedBackendOf(lock.key()) == null && shown(lock.key(), false).equals(key))
				.toList();
			if (matching.size() != 1) {
				return new ForcedReleaseDescriptor(key, false, matching.isEmpty() ? "No lock listed has this key"
						: "Several locks listed have this masked key: name the lock by its whole key");
			}
			target = matching.get(0).key();
		}
		Principal principal = securityContext.getPrincipal();
		String caller = (principal != null) ? principal.getName() : "an unauthenticated caller";
		boolean released = locks.forceRelease(target, fencingToken);
		String shownKey = LockSettings.masked(target, this.engine.keyPrefix());
		if (released) {
			logger.warn("Lock '" + shownKey + "' released by force by " + caller
					+ " through the locks endpoint: its holder loses it at its next renewal");
			return new ForcedReleaseDescriptor(key, true, null);
		}
		logger.warn(caller + " asked the locks endpoint to release lock '" + shownKey + "' by force"
				+ ((fencingToken != null) ? " with fencing token " + fencingToken : "") + ": nobody held it");
		return new ForcedReleaseDescriptor(key, false, (fencingToken != null)
				? "Not held, or held with another fencing token" : "Not held");
	}

	/** The named backend whose key prefix {@code key} starts with, {@code null} for none. */
	private @Nullable String namedBackendOf(String key) {
		return this.named.entrySet()
			.stream()
			.filter((backend) -> key.startsWith(backend.getValue()))
			.map(Map.Entry::getKey)
			.findFirst()
			.orElse(null);
	}

	private String unsupported() {
		return "The " + this.engine.backendName() + " backend cannot list or release the locks of other instances";
	}

	private String shown(String key, boolean shown) {
		return shown ? key : LockSettings.masked(key, this.engine.keyPrefix());
	}

	private static boolean isMasked(String key) {
		return MASKED.matcher(key).matches();
	}

	/**
	 * The locks held on the backend by every instance.
	 *
	 * @param backend the backend name
	 * @param supported whether the backend can list them
	 * @param note why not, or why the list is incomplete
	 * @param complete whether every lock is listed
	 * @param locks the locks, ordered by key
	 */
	public record ClusterLocksDescriptor(String backend, boolean supported, @Nullable String note, boolean complete,
			List<ClusterLockDescriptor> locks) implements OperationResponseBody {
	}

	/**
	 * A lock held on the backend.
	 *
	 * @param key the backend key, its key part masked unless shown
	 * @param instance the name of the instance that holds it, when the backend tells
	 * @param fencingToken its holder's fencing token
	 * @param remainingMillis how long it lives unless renewed, by the backend's clock; -1 unknown
	 * @param expires when it expires unless renewed, by this instance's clock
	 */
	public record ClusterLockDescriptor(String key, @Nullable String instance, long fencingToken,
			long remainingMillis, @Nullable Instant expires) {
	}

	/**
	 * The answer to a forced release.
	 *
	 * @param key the key asked for
	 * @param released whether a holder's lock was released
	 * @param reason why not
	 */
	public record ForcedReleaseDescriptor(String key, boolean released, @Nullable String reason)
			implements OperationResponseBody {
	}

}
