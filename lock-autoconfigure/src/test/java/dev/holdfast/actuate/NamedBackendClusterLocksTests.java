package dev.holdfast.actuate;

import java.time.Duration;
import java.util.List;
import java.util.UUID;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.LeaderElections;
import dev.holdfast.Lease;
import dev.holdfast.Leadership;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.actuate.ClusterLocksView.ClusterLockDescriptor;
import dev.holdfast.actuate.ClusterLocksView.ClusterLocksDescriptor;
import dev.holdfast.actuate.ClusterLocksView.ForcedReleaseDescriptor;
import dev.holdfast.actuate.LeadersEndpoint.YieldDescriptor;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastLeaderAutoConfiguration;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.PostgresServer;
import dev.holdfast.test.server.RedisServer;
import dev.holdfast.test.server.ZooKeeperServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code locks/cluster}, the forced release and the {@code leaders} yield on named backends
 * (NBK-9 in docs/DESIGN.md): the default backend and a named {@code jobs} on one real PostgreSQL
 * database, a named {@code zk} on a real ZooKeeper, a named {@code cache} on a real Redis and a
 * named {@code local}, the application's backend that cannot list the locks of other instances.
 */
class NamedBackendClusterLocksTests {

	private static RedisServer redis;

	private static ZooKeeperServer zooKeeper;

	private static PostgresServer postgres;

	private final String name = "report-" + UUID.randomUUID();

	@BeforeAll
	static void startServers() {
		redis = RedisServer.start();
		zooKeeper = ZooKeeperServer.start();
		postgres = PostgresServer.shared();
	}

	@AfterAll
	static void stopServers() {
		redis.close();
		zooKeeper.close();
	}

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, DataRedisAutoConfiguration.class,
				HoldfastAutoConfiguration.class, HoldfastLeaderAutoConfiguration.class,
				HoldfastActuatorAutoConfiguration.class, EndpointAutoConfiguration.class))
		.withUserConfiguration(LocksOnlyConfiguration.class)
		.withPropertyValues("spring.datasource.url=" + postgres.jdbcUrl(), "spring.datasource.username=postgres",
				"spring.datasource.password=postgres", "spring.data.redis.port=" + redis.port(),
				"holdfast.backend=jdbc", "holdfast.jdbc.initialize-schema=always", "holdfast.backends.jobs.type=jdbc",
				"holdfast.backends.zk.type=zookeeper",
				"holdfast.backends.zk.zookeeper.connect-string=" + zooKeeper.connectString(),
				"holdfast.backends.cache.type=redis", "holdfast.backends.local.bean=localLocks", "holdfast.lease-time=3s",
				"management.endpoint.locks.show-values=always", "management.endpoints.web.exposure.include=locks,leaders");

	@Test
	void theClusterViewListsEachNamedBackendsLocksUnderItsNameAndTheDefaultsWithoutThem() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			List<Lease> leases = acquireOnEach(context);
			try {
				ClusterLocksDescriptor cluster = (ClusterLocksDescriptor) context.getBean(LocksEndpoint.class)
					.scope(SecurityContext.NONE, "cluster");
				assertThat(cluster.backend()).isEqualTo("jdbc");
				assertThat(keys(cluster)).as("the jobs backend's lock on the same database is not the default's")
					.containsExactly("holdfast:" + this.name + ":2024");
				assertThat(cluster.backends()).containsOnlyKeys("cache", "jobs", "local", "zk");
				assertThat(keys(cluster.backends().get("jobs"))).containsExactly("holdfast:jobs::" + this.name + ":2024");
				assertThat(keys(cluster.backends().get("zk"))).containsExactly("holdfast:zk::" + this.name + ":2024");
				assertThat(cluster.backends().get("zk").backend()).isEqualTo("zookeeper");
				assertThat(keys(cluster.backends().get("cache"))).containsExactly("holdfast:cache::" + this.name + ":2024");
				assertThat(cluster.backends().get("cache").locks().get(0).instance()).isNotBlank();
				ClusterLocksDescriptor local = cluster.backends().get("local");
				assertThat(local.supported()).isFalse();
				assertThat(local.note()).isEqualTo("The locks-only backend 'local' cannot list or release the locks of other"
						+ " instances (the backends that can: [default, cache, jobs, zk])");
			}
			finally {
				leases.forEach(Lease::close);
			}
		});
	}

	@Test
	void aForcedReleaseGoesToTheBackendWhoseKeysTheKeyIsOrToTheOneNamed() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			LocksEndpoint endpoint = context.getBean(LocksEndpoint.class);
			List<Lease> leases = acquireOnEach(context);
			Lease own = leases.get(0);
			Lease jobs = leases.get(1);
			Lease zk = leases.get(2);
			Lease cache = leases.get(3);
			try {
				assertThat(endpoint.release(SecurityContext.NONE, jobs.key(), null, "zk").reason())
					.isEqualTo("Not a lock of the backend 'zk': a key of [jobs: 'holdfast:jobs::']: set backend to jobs");
				assertThat(endpoint.release(SecurityContext.NONE, "app:" + this.name, null, null).reason())
					.isEqualTo("Not a lock of this application: the keys of [default: 'holdfast:', cache: 'holdfast:cache::',"
							+ " jobs: 'holdfast:jobs::', local: 'holdfast:local::', zk: 'holdfast:zk::'] are"
							+ " <prefix><name> or <prefix><name>:<key>");
				assertThat(endpoint.release(SecurityContext.NONE, jobs.key(), null, "jbos").reason())
					.isEqualTo("No backend 'jbos': set backend to one of [default, cache, jobs, local, zk]");
				assertThat(endpoint.release(SecurityContext.NONE, "holdfast:local::" + this.name, null, null).reason())
					.startsWith("The locks-only backend 'local' cannot list or release the locks of other instances");

				assertThat(endpoint.release(SecurityContext.NONE, jobs.key(), jobs.fencingToken(), null).released())
					.isTrue();
				String masked = LockSettings.masked(zk.key(), "holdfast:zk::");
				assertThat(endpoint.release(SecurityContext.NONE, masked, null, null).released()).as(masked).isTrue();
				assertThat(endpoint.release(SecurityContext.NONE, cache.key(), null, "cache").released()).isTrue();
				await().atMost(Duration.ofSeconds(20))
					.until(() -> !jobs.isValid() && !zk.isValid() && !cache.isValid());
				assertThat(own.isValid()).as("the default backend's lock of the same name").isTrue();
				assertThat(endpoint.release(SecurityContext.NONE, own.key(), null, null).released()).isTrue();
			}
			finally {
				leases.forEach(Lease::close);
			}
		});
	}

	@Test
	void aKeyOfANamedBackendOnTheDefaultsDatabaseIsNotReleasedAsTheDefaults() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			LocksEndpoint endpoint = context.getBean(LocksEndpoint.class);
			List<Lease> leases = acquireOnEach(context);
			Lease jobs = leases.get(1);
			try {
				ForcedReleaseDescriptor refused = endpoint.release(SecurityContext.NONE, jobs.key(), null, "default");
				assertThat(refused.released()).isFalse();
				assertThat(refused.reason()).isEqualTo("Not a lock of the jdbc backend: a key of"
						+ " [jobs: 'holdfast:jobs::']: set backend to jobs");
				ClusterLocksDescriptor cluster = (ClusterLocksDescriptor) endpoint.scope(SecurityContext.NONE, "cluster");
				assertThat(keys(cluster.backends().get("jobs"))).as("still held").containsExactly(jobs.key());
				assertThat(jobs.isValid()).isTrue();
			}
			finally {
				leases.forEach(Lease::close);
			}
		});
	}

	@Test
	void aKeyOfTwoBackendsOnTwoServersIsListedByBothAndReleasedOnlyWhereTheOperatorSays() {
		this.runner
			.withPropertyValues("holdfast.backends.tenant-a.type=redis", "holdfast.backends.tenant-a.key-prefix=holdfast:tenant-a:")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				LocksEndpoint endpoint = context.getBean(LocksEndpoint.class);
				String key = "k" + UUID.randomUUID().toString().replace("-", "");
				// default lock 'tenant-a' key <key> on PostgreSQL; tenant-a's lock <key> on Redis: one key string
				Lease onDefault = context.getBean(LockTemplate.class).acquire("tenant-a", key, LockOptions.defaults());
				Lease onTenant = template(context, "tenant-a").acquire(key, null, LockOptions.defaults());
				try {
					assertThat(onDefault.key()).isEqualTo(onTenant.key()).isEqualTo("holdfast:tenant-a:" + key);
					ClusterLocksDescriptor cluster = (ClusterLocksDescriptor) endpoint.scope(SecurityContext.NONE,
							"cluster");
					assertThat(cluster.locks()).extracting(ClusterLockDescriptor::key).contains(onDefault.key());
					assertThat(cluster.backends().get("tenant-a").locks()).extracting(ClusterLockDescriptor::key)
						.contains(onTenant.key());

					ForcedReleaseDescriptor refused = endpoint.release(SecurityContext.NONE, onDefault.key(), null, null);
					assertThat(refused.released()).isFalse();
					assertThat(refused.reason()).isEqualTo("A key of each of the backends [default: 'holdfast:',"
							+ " tenant-a: 'holdfast:tenant-a:'] (on different servers): set backend to the one that"
							+ " holds the lock");
					assertThat(endpoint.release(SecurityContext.NONE, onDefault.key(), null, "default").released())
						.isTrue();
					await().atMost(Duration.ofSeconds(20)).until(() -> !onDefault.isValid());
					assertThat(onTenant.isValid()).isTrue();
				}
				finally {
					onDefault.close();
					onTenant.close();
				}
			});
	}

	@Test
	void aLeaderGroupOfANamedBackendIsYieldedThereAndTheDefaultsPathSaysWhichToUse() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			context.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0],
					context.getSourceApplicationContext(), Duration.ZERO));
			Leadership onZk = context.getBean("holdfastLeaderElections.zk", LeaderElections.class).join(this.name);
			await().atMost(Duration.ofSeconds(20)).until(onZk::isLeader);
			long token = onZk.term().orElseThrow().fencingToken();
			LeadersEndpoint endpoint = context.getBean(LeadersEndpoint.class);
			assertThat(endpoint.group(this.name)).as("not joined on the default backend").isNull();
			assertThat(endpoint.groupOn("zk", this.name)).satisfies((group) -> assertThat(group.leader()).isTrue());
			assertThat(endpoint.groupOn("cache", this.name)).isNull();

			WebEndpointResponse<YieldDescriptor> refused = endpoint.yield(SecurityContext.NONE, this.name);
			assertThat(refused.getStatus()).isEqualTo(404);
			assertThat(refused.getBody().reason()).isEqualTo("Joined on a named backend, not on the default one:"
					+ " yield it with POST /actuator/leaders/zk/" + this.name);
			WebEndpointResponse<YieldDescriptor> unknown = endpoint.yieldOn(SecurityContext.NONE, "zkk", this.name);
			assertThat(unknown.getStatus()).isEqualTo(404);
			assertThat(unknown.getBody().reason()).isEqualTo("No backend 'zkk': the named backends are [cache, jobs,"
					+ " local, zk]");
			assertThat(endpoint.yieldOn(SecurityContext.NONE, "cache", this.name).getStatus()).isEqualTo(404);
			assertThat(onZk.isLeader()).isTrue();

			YieldDescriptor yielded = endpoint.yieldOn(SecurityContext.NONE, "zk", this.name).getBody();
			assertThat(yielded.yielded()).isTrue();
			assertThat(yielded.fencingToken()).isEqualTo(token);
			assertThat(onZk.term()).isEmpty();
		});
	}

	@Configuration(proxyBeanMethods = false)
	static class LocksOnlyConfiguration {

		@Bean(defaultCandidate = false)
		LockBackend localLocks() {
			return LocksEndpointTests.locksOnly();
		}

	}

	/** A lock {@code <name>:2024} on the default backend, then on jobs, zk and cache. */
	private List<Lease> acquireOnEach(AssertableApplicationContext context) {
		return List.of(context.getBean(LockTemplate.class), template(context, "jobs"), template(context, "zk"),
				template(context, "cache"))
			.stream()
			.map((template) -> template.acquire(this.name, "2024", LockOptions.defaults()))
			.toList();
	}

	private static LockTemplate template(AssertableApplicationContext context, String backend) {
		return context.getBean("holdfastLockTemplate." + backend, LockTemplate.class);
	}

	/** The keys listed of this test's locks: the database is shared with other tests. */
	private List<String> keys(ClusterLocksDescriptor cluster) {
		return cluster.locks().stream().map(ClusterLockDescriptor::key).filter((key) -> key.contains(this.name)).toList();
	}

}
