package dev.holdfast.actuate;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

import dev.holdfast.LeaseInfo;
import dev.holdfast.actuate.ClusterLocksView.ClusterLocksDescriptor;
import dev.holdfast.actuate.ClusterLocksView.ForcedReleaseDescriptor;
import dev.holdfast.actuate.JobsView.JobRunDescriptor;
import dev.holdfast.core.LockEngine;
import dev.holdfast.core.LockSettings;
import dev.holdfast.semaphore.PermitSlots;

/**
 * The {@code locks} Actuator endpoint: the leases this instance holds now, including the locks
 * of {@code @SingleInstanceScheduled} jobs while they run (the job name, its lock key, and an
 * expiry within the lease time, renewed while the run lasts), not a job lock kept for
 * {@code lockAtLeastFor} after its run;
 * at {@code locks/cluster}, the locks every instance holds on the backend ({@link ClusterLocksView});
 * at {@code locks/jobs}, this instance's scheduled jobs ({@link JobsView}); and, as write
 * operations, the release of a lock by force and the run of a job now. Exposed like any other
 * endpoint: over JMX by default, over the web only when
 * {@code management.endpoints.web.exposure.include} names it. Its default access is read-only: the
 * write operations exist only with {@code management.endpoint.locks.access=unrestricted}, and are
 * secured as Boot secures every endpoint's operations.
 * <p>
 * Lock keys end with values taken from method arguments, which often are user data (account
 * ids, e-mail addresses). As Boot's {@code env} and {@code configprops} endpoints do with property
 * values, the key part is shown only as {@code management.endpoint.locks.show-values} allows
 * ({@link Show#NEVER} by default): otherwise the key reads {@code <prefix><name>:******#3f2a},
 * with the fingerprint that log lines and exception messages show for it
 * ({@link LockSettings#masked}).
 */
@Endpoint(id = "locks", defaultAccess = Access.READ_ONLY)
public class LocksEndpoint {

	private final LockEngine engine;

	private final String instance;

	private final Show showValues;

	private final Set<String> roles;

	private final ClusterLocksView cluster;

	private final @Nullable JobsView jobs;

	private final Map<String, LockEngine> named;

	/**
	 * Lists the leases of {@code engine} with their keys masked.
	 */
	public LocksEndpoint(LockEngine engine) {
		this(engine, "", Show.NEVER, Set.of(), ClusterLocksView.DEFAULT_MAX_LISTED, null);
	}

	/**
	 * Lists the leases of {@code engine}.
	 * @param instance the name of this instance ({@code holdfast.instance-name})
	 * @param showValues when the key part of lock keys is shown
	 * @param roles the roles that see it with {@link Show#WHEN_AUTHORIZED}; any authenticated
	 * user when empty
	 * @param maxListed the most locks that {@code locks/cluster} lists
	 * @param jobs the {@code locks/jobs} view, {@code null} without scheduled jobs
	 */
	public LocksEndpoint(LockEngine engine, String instance, Show showValues, Collection<String> roles,
			int maxListed, @Nullable JobsView jobs) {
		this(engine, instance, showValues, roles, maxListed, jobs, Map.of());
	}

	/**
	 * Lists the leases of {@code engine}, and those of each engine of {@code named}.
	 * @param named the engines of the named backends ({@code holdfast.backends.<name>}), by name
	 */
	public LocksEndpoint(LockEngine engine, String instance, Show showValues, Collection<String> roles,
			int maxListed, @Nullable JobsView jobs, Map<String, LockEngine> named) {
		this.named = new TreeMap<>(named);
		this.engine = engine;
		this.instance = instance;
		this.showValues = showValues;
		this.roles = Set.copyOf(roles);
		this.cluster = new ClusterLocksView(engine, maxListed, named);
		this.jobs = jobs;
	}

	/**
	 * The leases this instance holds, ordered by key, with the key part of each key masked
	 * unless {@code show-values} allows it for {@code securityContext}.
	 */
	@ReadOperation
	public LocksDescriptor locks(SecurityContext securityContext) {
		boolean shown = shown(securityContext);
		Map<String, BackendLeases> named = new TreeMap<>();
		this.named.forEach((name, engine) -> {
			BackendLeases held = held(engine, shown);
			named.put(name, new BackendLeases(engine.backendName(), held.leases(), held.semaphores()));
		});
		BackendLeases held = held(this.engine, shown);
		return new LocksDescriptor(this.engine.backendName(), this.instance, held.leases(), held.semaphores(),
				named.isEmpty() ? null : named);
	}

	/** The leases of {@code engine} but its permits, and its semaphores with their permits (OBS-15). */
	private static BackendLeases held(LockEngine engine, boolean shown) {
		String prefix = engine.keyPrefix();
		List<LeaseInfo> infos = engine.heldLeases().stream().sorted(Comparator.comparing(LeaseInfo::key)).toList();
		List<LeaseDescriptor> leases = infos.stream()
			.filter((info) -> PermitSlots.slotOf(info.key()) == null)
			.map((info) -> new LeaseDescriptor(info, shown ? info.key() : LockSettings.masked(info.key(), prefix)))
			.toList();
		List<SemaphoreDescriptor> semaphores = new ArrayList<>();
		ClusterLocksView.bySemaphore(infos, LeaseInfo::key).forEach((key, permits) -> semaphores.add(
				new SemaphoreDescriptor(permits.get(0).name(), shown ? key : LockSettings.masked(key, prefix),
						permits.stream().map((info) -> new PermitDescriptor(PermitSlots.slotOf(info.key()),
								shown ? info.key() : ClusterLocksView.masked(info.key(), prefix), info.fencingToken(),
								info.acquiredAt(), info.expiresAt(), info.valid())).toList())));
		return new BackendLeases(engine.backendName(), leases, semaphores.isEmpty() ? null : semaphores);
	}

	/**
	 * {@code cluster}: the locks held on the backend by every instance, with the instance that
	 * holds each, bounded, and those of each named backend under its name; keys shown as
	 * {@link #locks} shows them. {@code jobs}: this instance's
	 * scheduled jobs, with what the backend holds of them ({@link JobsView}). {@code null} (not
	 * found) for another scope.
	 */
	@ReadOperation
	public @Nullable OperationResponseBody scope(SecurityContext securityContext, @Selector String scope) {
		return switch (scope) {
			case "cluster" -> this.cluster.list(shown(securityContext));
			case "jobs" -> (this.jobs != null) ? this.jobs.describe() : new JobsView.JobsDescriptor(
					this.engine.backendName(), List.of());
			default -> null;
		};
	}

	/**
	 * Releases the lock at {@code key}, whoever holds it: its holder's next renewal fails, so the
	 * holder is told it lost the lock (WARN, {@code holdfast.lock.lost}), and the next holder's
	 * fencing token is larger. Logged at WARN with the caller's principal.
	 * @param key the lock's backend key as {@code locks/cluster} shows it; a masked key is
	 * accepted when exactly one listed lock has it (and {@code fencingToken}, if given), refused when the
	 * listing is incomplete unless {@code fencingToken} is given
	 * @param fencingToken release only if the holder's token is this one, so that a lock taken
	 * by another holder since it was listed is left alone
	 * @param backend with named backends, the one that holds the lock ({@code default} for the
	 * default backend), refused unless {@code key} is one of its keys; when not given, the one
	 * backend whose key {@code key} is
	 */
	@WriteOperation
	public ForcedReleaseDescriptor release(SecurityContext securityContext, String key, @Nullable Long fencingToken,
			@Nullable String backend) {
		return this.cluster.forceRelease(securityContext, key, fencingToken, backend);
	}

	/**
	 * {@link #release(SecurityContext, String, Long, String)} without {@code backend}, for Java
	 * callers of the endpoint before named backends; not an operation of its own.
	 */
	public ForcedReleaseDescriptor release(SecurityContext securityContext, String key, @Nullable Long fencingToken) {
		return release(securityContext, key, fencingToken, null);
	}

	/**
	 * {@code jobs/<name>}: runs this instance's job {@code name} once now, unless its job lock is
	 * held (a run anywhere, or its lock kept for {@code lockAtLeastFor}): one attempt on the job
	 * lock, answered at once; the run goes on on the job's scheduler. HTTP status: 200 started,
	 * 409 busy, 404 an unknown job (the answer names this instance's jobs), 503 when this instance
	 * is stopping or the backend failed. Logged at INFO with the caller's principal.
	 */
	@WriteOperation
	public WebEndpointResponse<JobRunDescriptor> runJob(SecurityContext securityContext, @Selector String scope,
			@Selector String name) {
		if (!"jobs".equals(scope)) {
			return new WebEndpointResponse<>(WebEndpointResponse.STATUS_NOT_FOUND);
		}
		JobRunDescriptor answer = (this.jobs != null) ? this.jobs.runNow(securityContext, name, this.instance)
				: JobsView.unknown(name, List.of());
		int status = switch (answer.outcome()) {
			case "started" -> WebEndpointResponse.STATUS_OK;
			case "busy" -> 409;
			case "unknown" -> WebEndpointResponse.STATUS_NOT_FOUND;
			default -> WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE;
		};
		return new WebEndpointResponse<>(answer, status);
	}

	private boolean shown(SecurityContext securityContext) {
		return this.showValues.isShown(securityContext, this.roles);
	}

	/**
	 * The leases one instance holds on its backend.
	 *
	 * @param backend the backend name
	 * @param instance the name of this instance ({@code holdfast.instance-name})
	 * @param leases the leases, ordered by key, permits left out
	 * @param semaphores the semaphores of which this instance holds permits, ordered by key; {@code null},
	 * absent in the JSON, for none
	 * @param backends the leases held on each named backend ({@code holdfast.backends.<name>}), by name;
	 * {@code null}, absent in the JSON, without named backends
	 */
	public record LocksDescriptor(String backend, String instance, List<LeaseDescriptor> leases,
			@Nullable List<SemaphoreDescriptor> semaphores, @Nullable Map<String, BackendLeases> backends)
			implements OperationResponseBody {
	}

	/**
	 * The leases held on one named backend.
	 *
	 * @param type the backend's type ({@code jdbc}, ...)
	 * @param leases the leases, ordered by key, permits left out
	 * @param semaphores the semaphores of which this instance holds permits, ordered by key; {@code null} for none
	 */
	public record BackendLeases(String type, List<LeaseDescriptor> leases,
			@Nullable List<SemaphoreDescriptor> semaphores) {
	}

	/**
	 * A semaphore of which this instance holds permits.
	 *
	 * @param name the semaphore's name
	 * @param key its backend key (its permits' keys less {@code #<slot>}), its key part masked unless shown
	 * @param permits the permits held here, by slot
	 */
	public record SemaphoreDescriptor(String name, String key, List<PermitDescriptor> permits) {
	}

	/**
	 * A permit held here: the lease of one slot of its semaphore.
	 *
	 * @param slot the slot's index
	 * @param key the slot's backend key as a forced release takes it, its key part masked unless shown
	 * @param fencingToken the fencing token of the slot's acquisition
	 * @param acquired when it was acquired
	 * @param expires when it expires unless renewed
	 * @param valid whether this instance still holds it for sure
	 */
	public record PermitDescriptor(int slot, String key, long fencingToken, Instant acquired, Instant expires,
			boolean valid) {
	}

	/**
	 * One held lease.
	 *
	 * @param name the lock name
	 * @param key the backend key, its key part masked unless shown
	 * @param fencingToken the fencing token of the acquisition
	 * @param acquired when it was acquired
	 * @param expires when it expires unless renewed
	 * @param valid whether this instance still holds it for sure
	 * @param mode {@code exclusive} or {@code read}, as the meters' {@code mode} tag ({@link LeaseInfo#mode()}, OBS-16)
	 * @param holds the holds open on it here: of a read lease, all its local readers' ({@link LeaseInfo#holds()})
	 */
	public record LeaseDescriptor(String name, String key, long fencingToken, Instant acquired, Instant expires,
			boolean valid, String mode, int holds) {

		LeaseDescriptor(LeaseInfo info, String key) {
			this(info.name(), key, info.fencingToken(), info.acquiredAt(), info.expiresAt(), info.valid(), info.mode(),
					info.holds());
		}

	}

}
