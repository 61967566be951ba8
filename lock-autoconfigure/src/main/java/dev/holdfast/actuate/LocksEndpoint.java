package dev.holdfast.actuate;

import java.time.Instant;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Set;

import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

import dev.holdfast.LeaseInfo;
import dev.holdfast.core.LockEngine;
import dev.holdfast.core.LockSettings;

/**
 * The {@code locks} Actuator endpoint: the leases this instance holds now, including the locks
 * of {@code @SingleInstanceScheduled} jobs while they run (the job name, its lock key, and an
 * expiry at {@code lockAtMostFor}). Locks held by other instances are not listed, nor a job lock
 * kept for {@code lockAtLeastFor} after its run. Exposed like any other endpoint: over JMX by
 * default, over the web only when {@code management.endpoints.web.exposure.include} names it.
 * <p>
 * Lock keys end with values taken from method arguments, which often are user data (account
 * ids, e-mail addresses). As Boot's {@code env} and {@code configprops} endpoints do with property
 * values, the key part is shown only as {@code management.endpoint.locks.show-values} allows
 * ({@link Show#NEVER} by default): otherwise the key reads {@code <prefix><name>:******#3f2a},
 * with the fingerprint that log lines and exception messages show for it
 * ({@link LockSettings#masked}).
 */
@Endpoint(id = "locks")
public class LocksEndpoint {

	private final LockEngine engine;

	private final Show showValues;

	private final Set<String> roles;

	/**
	 * Lists the leases of {@code engine} with their keys masked.
	 */
	public LocksEndpoint(LockEngine engine) {
		this(engine, Show.NEVER, Set.of());
	}

	/**
	 * Lists the leases of {@code engine}.
	 * @param showValues when the key part of lock keys is shown
	 * @param roles the roles that see it with {@link Show#WHEN_AUTHORIZED}; any authenticated
	 * user when empty
	 */
	public LocksEndpoint(LockEngine engine, Show showValues, Collection<String> roles) {
		this.engine = engine;
		this.showValues = showValues;
		this.roles = Set.copyOf(roles);
	}

	/**
	 * The leases this instance holds, ordered by key, with the key part of each key masked
	 * unless {@code show-values} allows it for {@code securityContext}.
	 */
	@ReadOperation
	public LocksDescriptor locks(SecurityContext securityContext) {
		boolean shown = this.showValues.isShown(securityContext, this.roles);
		String prefix = this.engine.keyPrefix();
		List<LeaseDescriptor> leases = this.engine.heldLeases()
			.stream()
			.sorted(Comparator.comparing(LeaseInfo::key))
			.map((info) -> new LeaseDescriptor(info, shown ? info.key() : LockSettings.masked(info.key(), prefix)))
			.toList();
		return new LocksDescriptor(this.engine.backendName(), leases);
	}

	/**
	 * The leases one instance holds on its backend.
	 *
	 * @param backend the backend name
	 * @param leases the leases, ordered by key
	 */
	public record LocksDescriptor(String backend, List<LeaseDescriptor> leases) implements OperationResponseBody {
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
	 */
	public record LeaseDescriptor(String name, String key, long fencingToken, Instant acquired, Instant expires,
			boolean valid) {

		LeaseDescriptor(LeaseInfo info, String key) {
			this(info.name(), key, info.fencingToken(), info.acquiredAt(), info.expiresAt(), info.valid());
		}

	}

}
