package dev.holdfast.autoconfigure;

import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;

import dev.holdfast.LeaseInfo;
import dev.holdfast.actuate.ClusterLocksView;
import dev.holdfast.actuate.JobsView;
import dev.holdfast.actuate.LocksEndpoint;
import dev.holdfast.aop.LockExpressionRoot;

/**
 * What Holdfast reads at run time that an ahead-of-time compiled application (a GraalVM native
 * image) must keep: the jdbc schema scripts and the Lua scripts, which are classpath resources;
 * the SpEL root object of {@code @DistributedLock} keys, whose getters expressions call
 * reflectively; the records that the {@code locks} endpoint serialises to JSON; and the two
 * private fields of the PostgreSQL driver that the listening connection adjusts
 * ({@code PostgresNotificationWait}), without which each release notification is 1 ms late.
 */
class HoldfastRuntimeHints implements RuntimeHintsRegistrar {

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		hints.resources().registerPattern("dev/holdfast/jdbc/schema-*.sql");
		hints.resources().registerPattern("dev/holdfast/lua/*.lua");
		hints.reflection()
			.registerType(LockExpressionRoot.class, MemberCategory.INVOKE_PUBLIC_METHODS)
			.registerType(LeaseInfo.class, MemberCategory.INVOKE_PUBLIC_METHODS, MemberCategory.ACCESS_DECLARED_FIELDS)
			.registerType(LocksEndpoint.LocksDescriptor.class, MemberCategory.INVOKE_PUBLIC_METHODS,
					MemberCategory.ACCESS_DECLARED_FIELDS)
			.registerType(LocksEndpoint.LeaseDescriptor.class, MemberCategory.INVOKE_PUBLIC_METHODS,
					MemberCategory.ACCESS_DECLARED_FIELDS);
		for (Class<?> descriptor : List.of(ClusterLocksView.ClusterLocksDescriptor.class,
				ClusterLocksView.ClusterLockDescriptor.class, ClusterLocksView.ForcedReleaseDescriptor.class,
				ClusterLocksView.ClusterSemaphoreDescriptor.class, ClusterLocksView.ClusterPermitDescriptor.class,
				LocksEndpoint.SemaphoreDescriptor.class, LocksEndpoint.PermitDescriptor.class,
				JobsView.JobsDescriptor.class, JobsView.JobDescriptor.class, JobsView.JobRunDescriptor.class)) {
			hints.reflection()
				.registerType(descriptor, MemberCategory.INVOKE_PUBLIC_METHODS, MemberCategory.ACCESS_DECLARED_FIELDS);
		}
		hints.reflection()
			.registerType(TypeReference.of("org.postgresql.core.QueryExecutorBase"),
					(type) -> type.onReachableType(TypeReference.of("org.postgresql.PGConnection")).withField("pgStream"))
			.registerType(TypeReference.of("org.postgresql.core.PGStream"),
					(type) -> type.onReachableType(TypeReference.of("org.postgresql.PGConnection"))
						.withField("nextStreamAvailableCheckTime"));
	}

}
