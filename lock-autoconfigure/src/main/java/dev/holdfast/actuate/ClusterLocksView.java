package dev.holdfast.actuate;

import java.security.Principal;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.regex.Pattern;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.SecurityContext;

import dev.holdfast.core.LockEngine;
import dev.holdfast.core.LockSettings;
import dev.holdfast.semaphore.PermitSlots;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.ClusterLocks.Listing;

/**
 * What the {@code locks} endpoint shows of the locks of every instance, and its forced release,
 * through each backend's {@link ClusterLocks}; a backend without it is answered as unsupported.
 * With named backends ({@code holdfast.backends.<name>}), each is listed under its name, and a
 * forced release goes to the backend whose key the key is (NBK-9 in docs/DESIGN.md).
 */
public final class ClusterLocksView {

	/** The most locks listed unless configured otherwise. */
	public static final int DEFAULT_MAX_LISTED = 500;

	/** How a forced release names the default backend. */
	public static final String DEFAULT_BACKEND = "default";

	/** A key masked as {@link #shown} masks it: a lock's, or a permit's ({@code …:******#3f2a#2}). */
	private static final Pattern MASKED = Pattern.compile(".*:\\*{6}#[0-9a-f]{4}(#-?[0-9]{1,2})?");

	private static final Log logger = LogFactory.getLog(LocksEndpoint.class);

	/** The default backend first, as {@value #DEFAULT_BACKEND}, then each named backend by name. */
	private final List<Backend> backends;

	private final int maxListed;

	/**
	 * @param named the engine of each named backend ({@code holdfast.backends.<name>}), by name
	 */
	ClusterLocksView(LockEngine engine, int maxListed, Map<String, LockEngine> named) {
		if (maxListed < 1) {
			throw new IllegalArgumentException(
					"maxListed (management.endpoint.locks.max-listed) must be at least 1, was " + maxListed);
		}
		List<Backend> backends = new ArrayList<>(List.of(new Backend(DEFAULT_BACKEND, engine)));
		new TreeMap<>(named).forEach((name, namedEngine) -> backends.add(new Backend(name, namedEngine)));
		this.backends = List.copyOf(backends);
		this.maxListed = maxListed;
	}

	/** One backend, by the name a forced release gives it, and its engine. */
	private record Backend(String name, LockEngine engine) {

		String prefix() {
			return this.engine.keyPrefix();
		}

		/** How messages name it: {@code the redis backend}, {@code the backend 'jobs'}. */
		String described() {
			return this.name.equals(DEFAULT_BACKEND) ? "the " + this.engine.backendName() + " backend"
					: "the backend '" + this.name + "'";
		}

	}

	ClusterLocksDescriptor list(boolean shown) {
		if (this.backends.size() == 1) {
			return list(this.backends.get(0), shown, null);
		}
		Map<String, ClusterLocksDescriptor> named = new TreeMap<>();
		this.backends.stream().skip(1).forEach((backend) -> named.put(backend.name(), list(backend, shown, null)));
		return list(this.backends.get(0), shown, named);
	}

	private ClusterLocksDescriptor list(Backend backend, boolean shown,
			@Nullable Map<String, ClusterLocksDescriptor> named) {
		LockEngine engine = backend.engine();
		if (!(engine.backend() instanceof ClusterLocks locks)) {
			return new ClusterLocksDescriptor(engine.backendName(), false, unsupported(backend), true, List.of(),
					null, named);
		}
		Listing listing = locks.listLocks(backend.prefix(), this.maxListed);
		Instant now = engine.clock().instant();
		List<BackendLock> own = listing.locks().stream().filter((lock) -> isKeyOf(lock.key(), backend)).toList();
		List<ClusterLockDescriptor> described = own.stream()
			.filter((lock) -> PermitSlots.slotOf(lock.key()) == null)
			.map((lock) -> new ClusterLockDescriptor(shown(backend, lock.key(), shown), lock.instance(),
					lock.fencingToken(), lock.remainingMillis(), expires(lock, now)))
			.toList();
		List<ClusterSemaphoreDescriptor> semaphores = new ArrayList<>();
		bySemaphore(own, BackendLock::key).forEach((key, permits) -> semaphores.add(new ClusterSemaphoreDescriptor(
				shown(backend, key, shown), permits.stream().map((lock) -> new ClusterPermitDescriptor(
						PermitSlots.slotOf(lock.key()), shown(backend, lock.key(), shown), lock.instance(),
						lock.fencingToken(), lock.remainingMillis(), expires(lock, now))).toList())));
		String note = listing.complete() ? null
				: "Listing stopped at its bound (management.endpoint.locks.max-listed=" + this.maxListed + ")";
		return new ClusterLocksDescriptor(engine.backendName(), true, note, listing.complete(), described,
				semaphores.isEmpty() ? null : semaphores, named);
	}

	private static @Nullable Instant expires(BackendLock lock, Instant now) {
		return (lock.remainingMillis() >= 0) ? now.plusMillis(lock.remainingMillis()) : null;
	}

	/**
	 * The permits among {@code held}, by the key of their semaphore (a slot key less {@code #<slot>}), in key
	 * order, each semaphore's by slot; the check slot {@code #-1} is none (OBS-15).
	 */
	static <T> Map<String, List<T>> bySemaphore(List<T> held, Function<T, String> keyOf) {
		Map<String, List<T>> semaphores = new TreeMap<>();
		for (T lease : held) {
			String key = keyOf.apply(lease);
			Integer slot = PermitSlots.slotOf(key);
			if (slot != null && slot >= 0) {
				semaphores.computeIfAbsent(key.substring(0, key.lastIndexOf('#')), (k) -> new ArrayList<>()).add(lease);
			}
		}
		semaphores.values()
			.forEach((permits) -> permits.sort(Comparator.comparing((lease) -> PermitSlots.slotOf(keyOf.apply(lease)))));
		return semaphores;
	}

	/**
	 * @param backendName the backend that holds {@code key} ({@value #DEFAULT_BACKEND} or a named
	 * one); {@code null}: the one backend whose key it is ({@link #owners})
	 */
	ForcedReleaseDescriptor forceRelease(SecurityContext securityContext, String key, @Nullable Long fencingToken,
			@Nullable String backendName) {
		List<Backend> owners = owners(key);
		Backend backend;
		if (backendName != null) {
			backend = this.backends.stream().filter((known) -> known.name().equals(backendName)).findFirst().orElse(null);
			if (backend == null) {
				return new ForcedReleaseDescriptor(key, false,
						"No backend '" + backendName + "': set backend to one of " + names(this.backends));
			}
			if (!owners.contains(backend)) {
				return new ForcedReleaseDescriptor(key, false, "Not a lock of " + backend.described() + ": "
						+ (owners.isEmpty() ? noneOf() : "a key of " + prefixes(owners) + ": set backend to "
								+ String.join(" or ", names(owners))));
			}
		}
		else {
			if (owners.isEmpty()) {
				return new ForcedReleaseDescriptor(key, false, "Not a lock of this application: " + noneOf());
			}
			if (owners.size() > 1) {
				return new ForcedReleaseDescriptor(key, false, "A key of each of the backends " + prefixes(owners)
						+ " (on different servers): set backend to the one that holds the lock");
			}
			backend = owners.get(0);
		}
		return forceRelease(securityContext, key, fencingToken, backend);
	}

	/** Why a key is of no backend: the keys of each. */
	private String noneOf() {
		return "the keys of " + prefixes(this.backends) + " are <prefix><name> or <prefix><name>:<key>";
	}

	private ForcedReleaseDescriptor forceRelease(SecurityContext securityContext, String key,
			@Nullable Long fencingToken, Backend backend) {
		if (!(backend.engine().backend() instanceof ClusterLocks locks)) {
			return new ForcedReleaseDescriptor(key, false, unsupported(backend));
		}
		String target = key;
		if (isMasked(key)) {
			// a masked key names one of 65,536 fingerprints: one match proves something only in a whole listing,
			// or among the locks of the fencing token given (the backend checks it too)
			Listing listing = locks.listLocks(backend.prefix(), this.maxListed);
			if (!listing.complete() && fencingToken == null) {
				return new ForcedReleaseDescriptor(key, false, "The listing is incomplete (more than "
						+ "management.endpoint.locks.max-listed=" + this.maxListed + " locks, or Redis stopped its SCAN):"
						+ " a masked key may name a lock not listed; give the whole key (shown with"
						+ " management.endpoint.locks.show-values) or the lock's fencingToken");
			}
			List<BackendLock> matching = listing.locks()
				.stream()
				.filter((lock) -> isKeyOf(lock.key(), backend) && shown(backend, lock.key(), false).equals(key)
						&& (fencingToken == null || lock.fencingToken() == fencingToken))
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
		String shownKey = shown(backend, target, false);
		String of = (this.backends.size() == 1) ? "" : " of " + backend.described();
		if (released) {
			logger.warn("Lock '" + shownKey + "'" + of + " released by force by " + caller
					+ " through the locks endpoint: its holder loses it at its next renewal");
			return new ForcedReleaseDescriptor(key, true, null);
		}
		logger.warn(caller + " asked the locks endpoint to release lock '" + shownKey + "'" + of + " by force"
				+ ((fencingToken != null) ? " with fencing token " + fencingToken : "") + ": nobody held it");
		return new ForcedReleaseDescriptor(key, false, (fencingToken != null)
				? "Not held, or held with another fencing token" : "Not held");
	}

	/**
	 * The backends whose key {@code key} is: it starts with their key prefix, then is
	 * {@code <name>} or {@code <name>:<key>}, encoded (KEY-1: no ':' in either). Of backends on one
	 * client at most one (NBK-6); several only on different servers, where only the operator knows
	 * which holds the lock.
	 */
	private List<Backend> owners(String key) {
		return this.backends.stream().filter((backend) -> isKeyOf(key, backend)).toList();
	}

	private static boolean isKeyOf(String key, Backend backend) {
		String prefix = backend.prefix();
		if (!key.startsWith(prefix)) {
			return false;
		}
		int colon = key.indexOf(':', prefix.length());
		return key.length() > prefix.length() && colon != prefix.length()
				&& (colon < 0 || key.indexOf(':', colon + 1) < 0);
	}

	/** {@code [default: 'holdfast:', jobs: 'holdfast:jobs::']}. */
	private static String prefixes(List<Backend> backends) {
		return backends.stream()
			.map((backend) -> backend.name() + ": '" + backend.prefix() + "'")
			.toList()
			.toString();
	}

	private static List<String> names(List<Backend> backends) {
		return backends.stream().map(Backend::name).toList();
	}

	private String unsupported(Backend backend) {
		String others = names(this.backends.stream()
			.filter((other) -> other.engine().backend() instanceof ClusterLocks)
			.toList()).toString();
		return "The " + backend.engine().backendName() + " backend" + (backend.name().equals(DEFAULT_BACKEND) ? ""
				: " '" + backend.name() + "'") + " cannot list or release the locks of other instances"
				+ ((this.backends.size() > 1) ? " (the backends that can: " + others + ")" : "");
	}

	private static String shown(Backend backend, String key, boolean shown) {
		return shown ? key : masked(key, backend.prefix());
	}

	/**
	 * {@code key} masked by {@link LockSettings#masked}; a permit's slot key as its semaphore's masked key and
	 * {@code #<slot>} ({@code …:******#3f2a#2}), one fingerprint for a semaphore and its permits (OBS-15).
	 */
	static String masked(String key, String prefix) {
		Integer slot = PermitSlots.slotOf(key);
		return (slot != null) ? LockSettings.masked(key.substring(0, key.lastIndexOf('#')), prefix) + "#" + slot
				: LockSettings.masked(key, prefix);
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
	 * @param locks the locks, ordered by key, permits left out
	 * @param semaphores the semaphores with permits held, ordered by key; {@code null}, absent in the JSON, for none
	 * @param backends the same of each named backend ({@code holdfast.backends.<name>}), by name;
	 * {@code null}, absent in the JSON, without named backends
	 */
	public record ClusterLocksDescriptor(String backend, boolean supported, @Nullable String note, boolean complete,
			List<ClusterLockDescriptor> locks, @Nullable List<ClusterSemaphoreDescriptor> semaphores,
			@Nullable Map<String, ClusterLocksDescriptor> backends) implements OperationResponseBody {

		/** Without semaphores. */
		public ClusterLocksDescriptor(String backend, boolean supported, @Nullable String note, boolean complete,
				List<ClusterLockDescriptor> locks, @Nullable Map<String, ClusterLocksDescriptor> backends) {
			this(backend, supported, note, complete, locks, null, backends);
		}

		/** Without named backends and semaphores. */
		public ClusterLocksDescriptor(String backend, boolean supported, @Nullable String note, boolean complete,
				List<ClusterLockDescriptor> locks) {
			this(backend, supported, note, complete, locks, null, null);
		}

	}

	/**
	 * A semaphore with permits held on the backend.
	 *
	 * @param key its backend key (its permits' keys less {@code #<slot>}), its key part masked unless shown
	 * @param permits the permits held, by slot
	 */
	public record ClusterSemaphoreDescriptor(String key, List<ClusterPermitDescriptor> permits) {
	}

	/**
	 * A permit held on the backend: one slot's lock.
	 *
	 * @param slot the slot's index
	 * @param key the slot's backend key, its key part masked unless shown
	 * @param instance the name of the instance that holds it, when the backend tells
	 * @param fencingToken its holder's fencing token
	 * @param remainingMillis how long it lives unless renewed, by the backend's clock; -1 unknown
	 * @param expires when it expires unless renewed, by this instance's clock
	 */
	public record ClusterPermitDescriptor(int slot, String key, @Nullable String instance, long fencingToken,
			long remainingMillis, @Nullable Instant expires) {
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
