package dev.holdfast.actuate;

import java.time.Instant;
import java.util.Comparator;
import java.util.List;

import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LeaseInfo;

/**
 * The {@code locks} Actuator endpoint: the leases this instance holds now, including the locks
 * of {@code @SingleInstanceScheduled} jobs while they run (the job name, its lock key, and an
 * expiry at {@code lockAtMostFor}). Locks held by other instances are not listed, nor a job lock
 * kept for {@code lockAtLeastFor} after its run. Exposed like any other endpoint: over JMX by
 * default, over the web only when {@code management.endpoints.web.exposure.include} names it.
 */
@Endpoint(id = "locks")
public class LocksEndpoint {

	private final DefaultLockTemplate template;

	/**
	 * Lists the leases of {@code template}.
	 */
	public LocksEndpoint(DefaultLockTemplate template) {
		this.template = template;
	}

	/**
	 * The leases this instance holds, ordered by key.
	 */
	@ReadOperation
	public LocksDescriptor locks() {
		List<LeaseDescriptor> leases = this.template.heldLeases()
			.stream()
			.sorted(Comparator.comparing(LeaseInfo::key))
			.map(LeaseDescriptor::new)
			.toList();
		return new LocksDescriptor(this.template.backend().name(), leases);
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
	 * @param key the backend key
	 * @param fencingToken the fencing token of the acquisition
	 * @param acquired when it was acquired
	 * @param expires when it expires unless renewed
	 * @param valid whether this instance still holds it for sure
	 */
	public record LeaseDescriptor(String name, String key, long fencingToken, Instant acquired, Instant expires,
			boolean valid) {

		LeaseDescriptor(LeaseInfo info) {
			this(info.name(), info.key(), info.fencingToken(), info.acquiredAt(), info.expiresAt(), info.valid());
		}

	}

}
