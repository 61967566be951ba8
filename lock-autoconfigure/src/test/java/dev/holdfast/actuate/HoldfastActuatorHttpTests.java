package dev.holdfast.actuate;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;

import dev.holdfast.HeldLeases;
import dev.holdfast.LeaderElections;
import dev.holdfast.Leadership;
import dev.holdfast.Lease;
import dev.holdfast.LeaseInfo;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

/**
 * The endpoint, health and metrics as an operator reads them: over HTTP from a running
 * application.
 */
@SpringBootTest(classes = HoldfastActuatorHttpTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "holdfast.backend=memory", "management.endpoints.web.exposure.include=locks,leaders,health,metrics",
				"management.endpoint.health.show-details=always", "management.endpoint.leaders.access=unrestricted" })
class HoldfastActuatorHttpTests {

	private final HttpClient http = HttpClient.newHttpClient();

	@LocalServerPort
	int port;

	@Autowired
	LockTemplate locks;

	@Autowired
	MeterRegistry meters;

	@Autowired
	LeaderElections elections;

	@Autowired
	HeldLeases heldLeases;

	@Test
	void endpointHealthAndMetricsDescribeAHeldLock() throws Exception {
		String name = "report-" + UUID.randomUUID();
		this.locks.executeLocked(name, "2024-01", LockOptions.defaults(), () -> null);
		try (Lease lease = this.locks.acquire(name, "2024-02", LockOptions.defaults())) {
			DocumentContext held = get("/actuator/locks");
			assertThat(held.read("$.backend", String.class)).isEqualTo("memory");
			assertThat(held.read("$.leases[0].name", String.class)).isEqualTo(name);
			assertThat(lease.key()).endsWith(":2024-02");
			assertThat(held.read("$.leases[0].key", String.class)).as("key part masked by default")
				.matches("holdfast:" + name + ":\\*{6}#[0-9a-f]{4}");
			assertThat(held.read("$.leases[0].fencingToken", Long.class)).isEqualTo(lease.fencingToken());
			assertThat(held.read("$.leases[0].valid", Boolean.class)).isTrue();
			assertThat(held.read("$.leases[0].acquired", String.class)).isEqualTo(lease.acquiredAt().toString());
			assertThat(held.read("$.leases[0].expires", String.class)).isNotBlank();

			DocumentContext health = get("/actuator/health");
			assertThat(health.read("$.status", String.class)).isEqualTo("UP");
			assertThat(health.read("$.components.holdfast.status", String.class)).isEqualTo("UP");
			assertThat(health.read("$.components.holdfast.details.backend", String.class)).isEqualTo("memory");
			assertThat(health.read("$.components.holdfast.details.held", Integer.class)).isEqualTo(1);

			DocumentContext acquired = get("/actuator/metrics/holdfast.lock.acquire?tag=name:" + name
					+ "&tag=outcome:acquired");
			assertThat(acquired.read("$.measurements[?(@.statistic == 'COUNT')].value", double[].class))
				.containsExactly(2.0);
			// Boot's meter observation handler makes the timers from the observations: it adds "error".
			assertThat(acquired.read("$.availableTags[*].tag", String[].class)).contains("backend", "error");
			DocumentContext heldTimer = get("/actuator/metrics/holdfast.lock.held?tag=name:" + name);
			assertThat(heldTimer.read("$.measurements[?(@.statistic == 'COUNT')].value", double[].class))
				.containsExactly(1.0);
			assertThat(heldTimer.read("$.availableTags[*].tag", String[].class)).contains("outcome");
			DocumentContext holding = get("/actuator/metrics/holdfast.lock.held.active?tag=name:" + name);
			assertThat(holding.read("$.measurements[?(@.statistic == 'ACTIVE_TASKS')].value", double[].class))
				.containsExactly(1.0);
			assertThat(get("/actuator/metrics").read("$.names", String[].class)).contains("holdfast.lock.acquire",
					"holdfast.lock.held");
		}
		// One source per timer: two registrations with different tag keys would break Prometheus.
		assertThat(tagKeys("holdfast.lock.acquire")).hasSize(1);
		assertThat(tagKeys("holdfast.lock.held")).hasSize(1);
		assertThat(get("/actuator/locks").read("$.leases.length()", Integer.class)).isZero();
	}

	/** OBS-16: a lease's mode in the meters' words, and a read lease once with its local readers' holds. */
	@Test
	void eachLeaseShowsItsModeAndAReadLeaseTheHoldsOfItsLocalReaders() throws Exception {
		String name = "catalog-" + UUID.randomUUID();
		LockOptions read = LockOptions.defaults().mode(LockMode.READ);
		CountDownLatch secondReads = new CountDownLatch(1);
		CountDownLatch done = new CountDownLatch(1);
		ExecutorService secondReader = Executors.newSingleThreadExecutor();
		try (Lease firstRead = this.locks.acquire(name, "prices", read)) {
			Future<?> second = secondReader.submit(() -> {
				try (Lease secondRead = this.locks.acquire(name, "prices", read)) {
					secondReads.countDown();
					return done.await(20, TimeUnit.SECONDS);
				}
			});
			assertThat(secondReads.await(10, TimeUnit.SECONDS)).isTrue();
			try (Lease permit = this.locks.acquirePermit(name + "-pool", null, 2, LockOptions.defaults());
					Lease exclusive = this.locks.acquire(name + "-export", null, LockOptions.defaults())) {
				DocumentContext held = get("/actuator/locks");
				String readLease = leaseNamed(name);
				assertThat(held.read(readLease + ".fencingToken", long[].class)).as("one lease for both readers")
					.containsExactly(firstRead.fencingToken());
				assertThat(held.read(readLease + ".mode", String[].class)).containsExactly("read");
				assertThat(held.read(readLease + ".holds", int[].class)).containsExactly(2);
				String exclusiveLease = leaseNamed(name + "-export");
				assertThat(held.read(exclusiveLease + ".mode", String[].class)).containsExactly("exclusive");
				assertThat(held.read(exclusiveLease + ".holds", int[].class)).containsExactly(1);
				assertThat(held.read("$.semaphores[?(@.name == '" + name + "-pool')].permits[*].fencingToken",
						long[].class))
					.containsExactly(permit.fencingToken());
				assertThat(this.heldLeases.heldLeases()).filteredOn((info) -> info.name().startsWith(name))
					.extracting(LeaseInfo::name, LeaseInfo::mode, LeaseInfo::holds)
					.containsExactlyInAnyOrder(tuple(name, "read", 2), tuple(name + "-pool", "permit", 1),
							tuple(name + "-export", "exclusive", 1));
			}
			done.countDown();
			assertThat(second.get(10, TimeUnit.SECONDS)).isEqualTo(true);
			assertThat(get("/actuator/locks").read(leaseNamed(name) + ".holds", int[].class)).as("the second left")
				.containsExactly(1);
		}
		finally {
			secondReader.shutdownNow();
		}
	}

	@Test
	void withoutNamedBackendsTheEndpointsAnswerAsBefore() throws Exception {
		try (Lease lease = this.locks.acquire("report-" + UUID.randomUUID(), null, LockOptions.defaults())) {
			assertThat(get("/actuator/locks").read("$", Map.class).keySet()).containsExactlyInAnyOrder("backend",
					"instance", "leases");
			assertThat(get("/actuator/locks/cluster").read("$", Map.class).keySet())
				.containsExactlyInAnyOrder("backend", "supported", "complete", "locks");
			assertThat(get("/actuator/leaders").read("$", Map.class).keySet()).containsExactlyInAnyOrder("backend",
					"groups");
			assertThat(get("/actuator/metrics/" + TickClockMetrics.OFFSET).read("$.availableTags[*].tag", List.class))
				.containsExactly("backend");
			assertThat(this.meters.get(TickClockMetrics.OFFSET).tag("backend", "memory").gauge()).isNotNull();
		}
		try (Leadership leadership = this.elections.join("report-" + UUID.randomUUID())) {
			await().atMost(Duration.ofSeconds(20)).until(leadership::isLeader);
			assertThat(send("POST", "/actuator/leaders/" + leadership.group(), "{}").read("$", Map.class).keySet())
				.containsExactlyInAnyOrder("group", "yielded", "fencingToken");
			assertThat(send("POST", "/actuator/leaders/" + leadership.group(), "{}").read("$", Map.class))
				.as("not leading: no reason either")
				.containsOnlyKeys("group", "yielded");
		}
	}

	/** The distinct sets of tag keys of the meters named {@code name}. */
	private List<List<String>> tagKeys(String name) {
		return this.meters.find(name)
			.meters()
			.stream()
			.map(Meter::getId)
			.filter((id) -> id.getType() == Meter.Type.TIMER)
			.map((id) -> id.getTags().stream().map(Tag::getKey).sorted().toList())
			.distinct()
			.toList();
	}

	private static String leaseNamed(String name) {
		return "$.leases[?(@.name == '" + name + "')]";
	}

	private DocumentContext get(String path) throws IOException, InterruptedException {
		return send("GET", path, null);
	}

	private DocumentContext send(String method, String path, String body) throws IOException, InterruptedException {
		HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
			.header("Content-Type", "application/json")
			.method(method, (body != null) ? HttpRequest.BodyPublishers.ofString(body)
					: HttpRequest.BodyPublishers.noBody())
			.build();
		HttpResponse<String> response = this.http.send(request, HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(path + ": " + response.body()).isEqualTo(200);
		return JsonPath.parse(response.body());
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		/** Open to all: the endpoints' security is {@link LocksEndpointSecurityTests}' concern. */
		@Bean
		SecurityFilterChain openToAll(HttpSecurity http) throws Exception {
			return http.authorizeHttpRequests((requests) -> requests.anyRequest().permitAll())
				.csrf((csrf) -> csrf.disable())
				.build();
		}

	}

}
