package dev.holdfast.actuate;

import java.security.Principal;
import java.time.Instant;
import java.util.Comparator;
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
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

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
 * itself), and the instance that leads it with why it may be unknown ({@link LeaderInstanceStatus}):
 * this instance's own name, without I/O, where it leads; else read from a {@link ClusterLocks}
 * backend, the followed groups' keys alone, awaited at most 1 s and off the caller's thread.
 * {@code POST /actuator/leaders/{group}} yields the group's leadership, so that another
 * instance leads, for example before a deploy; {@code leaders/{backend}/{group}} reads and
 * yields a group of a named backend ({@code holdfast.backends.<name>}). Its default access is
 * read-only: the yield exists only with {@code management.endpoint.leaders.access=unrestricted},
 * and is secured as Boot secures every write operation. A yield is logged at WARN with the caller's principal.
 */
@Endpoint(id = "leaders", defaultAccess = Access.READ_ONLY)
public class LeadersEndpoint {

	private static final Log logger = LogFactory.getLog(LeadersEndpoint.class);

	/** The lock name of the groups' leases: {@code <prefix>leader:<group>} (DESIGN.md "Leadership"). */
	private static final String LEADER_LOCK = "leader";

	private final Source source;

	private final Map<String, Source> named = new TreeMap<>();

	private final String instanceName;

	/**
	 * Lists the groups of {@code elections}, and those of each named backend's, read and yielded
	 * at {@code leaders/<backend>/<group>}.
	 * @param instanceName this instance's name ({@code holdfast.instance-name})
	 * @param named the elections and engine of each named backend ({@code holdfast.backends.<name>})
	 */
	public LeadersEndpoint(DefaultLeaderElections elections, LockEngine engine, String instanceName,
			Map<String, Backend> named) {
		this.source = new Source(elections, engine);
		this.instanceName = instanceName;
		named.forEach((name, backend) -> this.named.put(name, new Source(backend.elections(), backend.engine())));
	}

	/**
	 * A named backend's leader elections and the engine they hold their leases on.
	 *
	 * @param elections its leader elections
	 * @param engine its engine
	 */
	public record Backend(DefaultLeaderElections elections, LockEngine engine) {
	}

	/** One backend's elections and engine, and the reader of its leader leases (none: it cannot list them). */
	private record Source(DefaultLeaderElections elections, LockEngine engine, @Nullable LeaderInstances instances) {

		Source(DefaultLeaderElections elections, LockEngine engine) {
			this(elections, engine,
					(engine.backend() instanceof ClusterLocks locks) ? new LeaderInstances(locks) : null);
		}

	}

	/** The groups this instance joined, ordered by name. */
	@ReadOperation
	public LeadersDescriptor leaders() {
		Map<String, List<GroupDescriptor>> named = new TreeMap<>();
		this.named.forEach((name, backend) -> named.put(name, groups(backend)));
		return new LeadersDescriptor(this.source.engine().backendName(), groups(this.source),
				named.isEmpty() ? null : named);
	}

	private List<GroupDescriptor> groups(Source backend) {
		List<Leadership> joined = backend.elections().leaderships();
		List<LeaseInfo> held = backend.engine().heldLeases();
		Map<String, Optional<BackendLock>> instances = leaderInstances(backend, joined);
		return joined.stream()
			.sorted(Comparator.comparing(Leadership::group))
			.map((leadership) -> describe(leadership, held, instances, backend))
			.toList();
	}

	/** One group, or nothing (404) when this instance did not join it. */
	@ReadOperation
	public @Nullable GroupDescriptor group(@Selector String group) {
		return group(this.source, group);
	}

	/**
	 * {@code leaders/<backend>/<group>}: one group of a named backend, or nothing (404) when this
	 * instance did not join it there.
	 */
	@ReadOperation
	public @Nullable GroupDescriptor groupOn(@Selector String backend, @Selector String group) {
		Source source = this.named.get(backend);
		return (source != null) ? group(source, group) : null;
	}

	private @Nullable GroupDescriptor group(Source backend, String group) {
		Optional<Leadership> found = find(backend, group);
		return found.isEmpty() ? null : describe(found.get(), backend.engine().heldLeases(),
				leaderInstances(backend, List.of(found.get())), backend);
	}

	/** The holders of the leases of the groups this instance does not lead, by key, as read within 1 s. */
	private static Map<String, Optional<BackendLock>> leaderInstances(Source backend, List<Leadership> joined) {
		if (backend.instances() == null) {
			return Map.of();
		}
		return backend.instances().read(joined.stream()
			.filter((leadership) -> leadership.term().isEmpty())
			.map((leadership) -> backend.engine().keyFor(LEADER_LOCK, leadership.group()))
			.toList());
	}

	/**
	 * Yields the leadership of {@code group} when this instance leads it: the term is revoked
	 * (reason {@code YIELDED}), its lease released, and this instance does not campaign again for
	 * a second, so that another instance leads. Nothing happens when it does not lead.
	 * @return what was done (200); 404 when this instance did not join the group on the default
	 * backend, with a {@code reason} naming the paths to use when it joined it on named backends
	 */
	@WriteOperation
	public WebEndpointResponse<YieldDescriptor> yield(SecurityContext securityContext, @Selector String group) {
		Optional<Leadership> found = find(this.source, group);
		if (found.isEmpty()) {
			List<String> joinedOn = this.named.entrySet()
				.stream()
				.filter((backend) -> find(backend.getValue(), group).isPresent())
				.map((backend) -> "POST /actuator/leaders/" + backend.getKey() + "/" + group)
				.toList();
			return joinedOn.isEmpty() ? notFound(null) : notFound(new YieldDescriptor(group, false, null,
					"Joined on a named backend, not on the default one: yield it with " + String.join(" or ", joinedOn)));
		}
		return new WebEndpointResponse<>(yieldTerm(securityContext, found.get(), ""));
	}

	/**
	 * {@code leaders/<backend>/<group>}: yields the leadership of {@code group} on the named
	 * backend {@code backend}, as {@link #yield(SecurityContext, String)} does on the default one.
	 * @return what was done (200); 404 when this instance did not join the group there, with a
	 * {@code reason} naming the backends when {@code backend} is none of them
	 */
	@WriteOperation
	public WebEndpointResponse<YieldDescriptor> yieldOn(SecurityContext securityContext, @Selector String backend,
			@Selector String group) {
		Source source = this.named.get(backend);
		if (source == null) {
			return notFound(new YieldDescriptor(group, false, null,
					"No backend '" + backend + "': the named backends are " + this.named.keySet()));
		}
		Optional<Leadership> found = find(source, group);
		return found.isEmpty() ? notFound(null)
				: new WebEndpointResponse<>(yieldTerm(securityContext, found.get(), " of backend '" + backend + "'"));
	}

	private static WebEndpointResponse<YieldDescriptor> notFound(@Nullable YieldDescriptor answer) {
		return new WebEndpointResponse<>(answer, WebEndpointResponse.STATUS_NOT_FOUND);
	}

	private static YieldDescriptor yieldTerm(SecurityContext securityContext, Leadership leadership, String of) {
		String group = leadership.group();
		Optional<LeaderTerm> term = leadership.term();
		String caller = caller(securityContext);
		if (term.isEmpty()) {
			logger.info("Leader group '" + group + "'" + of + ": yield asked by " + caller
					+ ", but this instance does not lead it");
			return new YieldDescriptor(group, false, null);
		}
		logger.warn("Leader group '" + group + "'" + of + ": term " + term.get().fencingToken() + " yielded by "
				+ caller + " through the leaders endpoint");
		leadership.yield();
		return new YieldDescriptor(group, true, term.get().fencingToken());
	}

	private static Optional<Leadership> find(Source backend, String group) {
		return backend.elections()
			.leaderships()
			.stream()
			.filter((joined) -> joined.group().equals(group))
			.findFirst();
	}

	private static String caller(SecurityContext securityContext) {
		Principal principal = securityContext.getPrincipal();
		return (principal != null) ? principal.getName() : "an unauthenticated caller";
	}

	private GroupDescriptor describe(Leadership leadership, List<LeaseInfo> held,
			Map<String, Optional<BackendLock>> instances, Source backend) {
		Optional<LeaderTerm> term = leadership.term();
		if (term.isEmpty()) {
			Optional<BackendLock> read = instances.get(backend.engine().keyFor(LEADER_LOCK, leadership.group()));
			String instance = (read != null) ? read.map(BackendLock::instance).orElse(null) : null;
			LeaderInstanceStatus status = (backend.instances() == null) ? LeaderInstanceStatus.NOT_SUPPORTED
					: (read == null) ? LeaderInstanceStatus.UNAVAILABLE
							: read.isEmpty() ? LeaderInstanceStatus.NO_LEADER
									: (instance == null) ? LeaderInstanceStatus.UNNAMED : LeaderInstanceStatus.READ;
			return new GroupDescriptor(leadership.group(), false, null, null, null, instance, status);
		}
		long token = term.get().fencingToken();
		Instant expires = held.stream()
			.filter((lease) -> LEADER_LOCK.equals(lease.name()) && lease.fencingToken() == token)
			.map(LeaseInfo::expiresAt)
			.findFirst()
			.orElse(null);
		return new GroupDescriptor(leadership.group(), true, token, term.get().since(), expires, this.instanceName,
				LeaderInstanceStatus.THIS_INSTANCE);
	}

	/**
	 * The leader groups one instance joined.
	 *
	 * @param backend the backend name
	 * @param groups the groups, ordered by name
	 * @param backends the groups of each named backend ({@code holdfast.backends.<name>}), by name;
	 * {@code null}, absent in the JSON, without named backends
	 */
	public record LeadersDescriptor(String backend, List<GroupDescriptor> groups,
			@Nullable Map<String, List<GroupDescriptor>> backends) implements OperationResponseBody {
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
	 * @param leaderInstance the name of the instance that leads the group ({@code holdfast.instance-name});
	 * {@code null} unless {@code leaderInstanceStatus} is {@code THIS_INSTANCE} or {@code READ}
	 * @param leaderInstanceStatus where {@code leaderInstance} comes from, or why it is unknown
	 */
	public record GroupDescriptor(String group, boolean leader, @Nullable Long fencingToken, @Nullable Instant since,
			@Nullable Instant expires, @Nullable String leaderInstance, LeaderInstanceStatus leaderInstanceStatus)
			implements OperationResponseBody {
	}

	/** Where a group's {@code leaderInstance} comes from, or why it is unknown. */
	public enum LeaderInstanceStatus {

		/** This instance leads: its own name, without a read of the backend. */
		THIS_INSTANCE,

		/** Read from the backend: the instance that holds the group's lease. */
		READ,

		/** The backend holds no live lease of the group: no instance leads it now. */
		NO_LEADER,

		/** A lease is held, but its owner token names no instance (not made by Holdfast's engine). */
		UNNAMED,

		/** The backend cannot tell who holds a lock of another instance (not a {@link ClusterLocks}). */
		NOT_SUPPORTED,

		/** The backend failed or did not answer within 1 s (logged at WARN once per outage). */
		UNAVAILABLE

	}

	/**
	 * The outcome of a yield.
	 *
	 * @param group the group name
	 * @param yielded whether a term was yielded (false: this instance did not lead the group)
	 * @param fencingToken the yielded term's fencing token
	 * @param reason why nothing was done (404): the group is on a named backend, or the backend
	 * named is none of them; {@code null}, absent in the JSON, otherwise
	 */
	public record YieldDescriptor(String group, boolean yielded, @Nullable Long fencingToken,
			@Nullable String reason) implements OperationResponseBody {

		/** A yield done, or nothing to yield: no {@code reason}. */
		public YieldDescriptor(String group, boolean yielded, @Nullable Long fencingToken) {
			this(group, yielded, fencingToken, null);
		}

	}

}
