package dev.holdfast.actuate;

import java.security.Principal;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

import dev.holdfast.LeaderTerm;
import dev.holdfast.Leadership;
import dev.holdfast.LeaseInfo;
import dev.holdfast.core.LockEngine;
import dev.holdfast.leader.DefaultLeaderElections;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.ClusterLocks.BackendLock;

/**
 * The {@code leaders} Actuator endpoint: each leader group this instance joined, whether it leads
 * it, the current term (its fencing token, since when, and when its lease expires unless
 * renewed: that instant moves forward at every renewal; the lease does not record the renewal
 * itself), and the instance that leads it where the backend can tell ({@link ClusterLocks}: one
 * bounded listing of the leader leases per read). {@code POST /actuator/leaders/{group}} yields the group's leadership, so that another
 * instance leads, for example before a deploy. Its default access is read-only: the yield exists
 * only with {@code management.endpoint.leaders.access=unrestricted}, and is secured as Boot
 * secures every write operation. A yield is logged at WARN with the caller's principal.
 */
@Endpoint(id = "leaders", defaultAccess = Access.READ_ONLY)
public class LeadersEndpoint {

	private static final Log logger = LogFactory.getLog(LeadersEndpoint.class);

	/** The lock name of the groups' leases: {@code <prefix>leader:<group>} (DESIGN.md "Leadership"). */
	private static final String LEADER_LOCK = "leader";

	private final DefaultLeaderElections elections;

	private final LockEngine engine;

	private final Map<String, Backend> named;

	public LeadersEndpoint(DefaultLeaderElections elections, LockEngine engine) {
		this(elections, engine, Map.of());
	}

	/**
	 * Lists the groups of {@code elections}, and those of each named backend's (read only: a yield
	 * through the endpoint names a group of {@code elections}).
	 * @param named the elections and engine of each named backend ({@code holdfast.backends.<name>})
	 */
	public LeadersEndpoint(DefaultLeaderElections elections, LockEngine engine, Map<String, Backend> named) {
		this.elections = elections;
		this.engine = engine;
		this.named = new TreeMap<>(named);
	}

	/**
	 * A named backend's leader elections and the engine they hold their leases on.
	 *
	 * @param elections its leader elections
	 * @param engine its engine
	 */
	public record Backend(DefaultLeaderElections elections, LockEngine engine) {
	}

	/** The groups this instance joined, ordered by name. */
	@ReadOperation
	public LeadersDescriptor leaders() {
		Map<String, List<GroupDescriptor>> named = new TreeMap<>();
		this.named.forEach((name, backend) -> named.put(name, groups(backend.elections(), backend.engine())));
		return new LeadersDescriptor(this.engine.backendName(), groups(this.elections, this.engine), named);
	}

	private static List<GroupDescriptor> groups(DefaultLeaderElections elections, LockEngine engine) {
		List<Leadership> joined = elections.leaderships();
		List<LeaseInfo> held = engine.heldLeases();
		Map<String, String> instances = joined.isEmpty() ? Map.of() : leaderInstances(engine);
		return joined.stream()
			.sorted(Comparator.comparing(Leadership::group))
			.map((leadership) -> describe(leadership, held, instances, engine))
			.toList();
	}

	/** One group, or nothing (404) when this instance did not join it. */
	@ReadOperation
	public @Nullable GroupDescriptor group(@Selector String group) {
		Optional<Leadership> found = find(group);
		return found.isEmpty() ? null
				: describe(found.get(), this.engine.heldLeases(), leaderInstances(this.engine), this.engine);
	}

	/**
	 * The instance holding each leader lease, by backend key, as the backend lists them (every
	 * application's group under the key prefix, {@value ClusterLocksView#DEFAULT_MAX_LISTED} at
	 * most); empty where it cannot tell or cannot be reached now.
	 */
	private static Map<String, String> leaderInstances(LockEngine engine) {
		if (!(engine.backend() instanceof ClusterLocks locks)) {
			return Map.of();
		}
		try {
			Map<String, String> instances = new HashMap<>();
			for (BackendLock lock : locks.listLocks(engine.keyPrefix() + LEADER_LOCK + ":",
					ClusterLocksView.DEFAULT_MAX_LISTED).locks()) {
				if (lock.instance() != null) {
					instances.put(lock.key(), lock.instance());
				}
			}
			return instances;
		}
		catch (RuntimeException ex) {
			logger.debug("The leaders endpoint could not list the leader leases; their instances are not shown", ex);
			return Map.of();
		}
	}

	/**
	 * Yields the leadership of {@code group} when this instance leads it: the term is revoked
	 * (reason {@code YIELDED}), its lease released, and this instance does not campaign again for
	 * a second, so that another instance leads. Nothing happens when it does not lead.
	 * @return what was done, or nothing (404) when this instance did not join the group
	 */
	@WriteOperation
	public @Nullable YieldDescriptor yield(SecurityContext securityContext, @Selector String group) {
		Optional<Leadership> found = find(group);
		if (found.isEmpty()) {
			return null;
		}
		Leadership leadership = found.get();
		Optional<LeaderTerm> term = leadership.term();
		String caller = caller(securityContext);
		if (term.isEmpty()) {
			logger.info("Leader group '" + group + "': yield asked by " + caller + ", but this instance does not lead it");
			return new YieldDescriptor(group, false, null);
		}
		logger.warn("Leader group '" + group + "': term " + term.get().fencingToken() + " yielded by " + caller
				+ " through the leaders endpoint");
		leadership.yield();
		return new YieldDescriptor(group, true, term.get().fencingToken());
	}

	private Optional<Leadership> find(String group) {
		return this.elections.leaderships().stream().filter((joined) -> joined.group().equals(group)).findFirst();
	}

	private static String caller(SecurityContext securityContext) {
		Principal principal = securityContext.getPrincipal();
		return (principal != null) ? principal.getName() : "an unauthenticated caller";
	}

	private static GroupDescriptor describe(Leadership leadership, List<LeaseInfo> held, Map<String, String> instances,
			LockEngine engine) {
		String instance = instances.isEmpty() ? null : instances.get(engine.keyFor(LEADER_LOCK, leadership.group()));
		Optional<LeaderTerm> term = leadership.term();
		if (term.isEmpty()) {
			return new GroupDescriptor(leadership.group(), false, null, null, null, instance);
		}
		long token = term.get().fencingToken();
		Instant expires = held.stream()
			.filter((lease) -> LEADER_LOCK.equals(lease.name()) && lease.fencingToken() == token)
			.map(LeaseInfo::expiresAt)
			.findFirst()
			.orElse(null);
		return new GroupDescriptor(leadership.group(), true, token, term.get().since(), expires, instance);
	}

	/**
	 * The leader groups one instance joined.
	 *
	 * @param backend the backend name
	 * @param groups the groups, ordered by name
	 * @param backends the groups of each named backend ({@code holdfast.backends.<name>}), by name
	 */
	public record LeadersDescriptor(String backend, List<GroupDescriptor> groups,
			Map<String, List<GroupDescriptor>> backends) implements OperationResponseBody {
	}

	/**
	 * One group joined.
	 *
	 * @param group the group name
	 * @param leader whether this instance leads it now
	 * @param fencingToken the current term's fencing token, while leading
	 * @param since when the current term was granted, while leading
	 * @param expires when the term's lease expires unless renewed (moves forward at each renewal),
	 * while leading
	 * @param leaderInstance the name of the instance that leads the group ({@code holdfast.instance-name}),
	 * where the backend can tell; {@code null} when no instance leads it or the backend cannot tell
	 */
	public record GroupDescriptor(String group, boolean leader, @Nullable Long fencingToken, @Nullable Instant since,
			@Nullable Instant expires, @Nullable String leaderInstance) implements OperationResponseBody {
	}

	/**
	 * The outcome of a yield.
	 *
	 * @param group the group name
	 * @param yielded whether a term was yielded (false: this instance did not lead the group)
	 * @param fencingToken the yielded term's fencing token
	 */
	public record YieldDescriptor(String group, boolean yielded, @Nullable Long fencingToken)
			implements OperationResponseBody {
	}

}
