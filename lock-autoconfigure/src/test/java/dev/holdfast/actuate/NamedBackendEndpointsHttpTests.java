package dev.holdfast.actuate;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;

import dev.holdfast.LeaderElections;
import dev.holdfast.Lease;
import dev.holdfast.Leadership;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.awaitility.Awaitility.await;

/**
 * A named backend's entries over HTTP, as an operator reaches them (NBK-9 in docs/DESIGN.md):
 * {@code locks/cluster}, the forced release with {@code backend}, and
 * {@code leaders/{backend}/{group}}.
 */
@SpringBootTest(classes = NamedBackendEndpointsHttpTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "holdfast.backend=memory", "holdfast.backends.side.type=memory",
				"management.endpoints.web.exposure.include=locks,leaders",
				"management.endpoint.locks.access=unrestricted", "management.endpoint.leaders.access=unrestricted" })
class NamedBackendEndpointsHttpTests {

	private final HttpClient http = HttpClient.newHttpClient();

	private final String name = "report-" + UUID.randomUUID();

	@LocalServerPort
	int port;

	@Autowired
	@Qualifier("side")
	LockTemplate side;

	@Autowired
	@Qualifier("side")
	LeaderElections sideElections;

	@Test
	void aNamedBackendsLockIsListedAndReleasedByForceOverHttp() throws Exception {
		Lease lease = this.side.acquire(this.name, null, LockOptions.defaults());
		try {
			DocumentContext cluster = send("GET", "/actuator/locks/cluster", null);
			assertThat(cluster.read("$.backends.side.locks[*].key", List.class))
				.as("among the other tests' leader leases")
				.contains("holdfast:side::" + this.name);
			DocumentContext released = send("POST", "/actuator/locks",
					"{\"key\": \"" + lease.key() + "\", \"backend\": \"side\"}");
			assertThat(released.read("$.released", Boolean.class)).isTrue();
		}
		finally {
			lease.close();
		}
	}

	@Test
	void aNamedBackendsGroupIsReadAndYieldedAtItsOwnPath() throws Exception {
		Leadership leadership = this.sideElections.join(this.name);
		await().atMost(Duration.ofSeconds(20)).until(leadership::isLeader);
		assertThat(send("GET", "/actuator/leaders/side/" + this.name, null).read("$.leader", Boolean.class)).isTrue();
		assertThat(send("POST", "/actuator/leaders/" + this.name, "{}", 404).read("$.reason", String.class))
			.endsWith("POST /actuator/leaders/side/" + this.name);
		assertThat(send("POST", "/actuator/leaders/sdie/" + this.name, "{}", 404).read("$.reason", String.class))
			.isEqualTo("No backend 'sdie': the named backends are [side]");
		assertThat(leadership.isLeader()).isTrue();
		DocumentContext yielded = send("POST", "/actuator/leaders/side/" + this.name, "{}");
		assertThat(yielded.read("$.yielded", Boolean.class)).isTrue();
		assertThat(leadership.term()).isEmpty();
	}

	@Test
	void aGroupNameWithASlashIsRefusedAtJoinAsTheEndpointWouldReadItAsBackendAndGroup() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.sideElections.join("team/relay"))
			.withMessage("Leader group 'team/relay' contains '/', which the leaders endpoint reads as"
					+ " <backend>/<group>: name it with another separator, such as 'team.relay'");
	}

	private DocumentContext send(String method, String path, String body) throws IOException, InterruptedException {
		return send(method, path, body, 200);
	}

	private DocumentContext send(String method, String path, String body, int status)
			throws IOException, InterruptedException {
		HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
			.header("Content-Type", "application/json")
			.method(method, (body != null) ? HttpRequest.BodyPublishers.ofString(body)
					: HttpRequest.BodyPublishers.noBody())
			.build();
		HttpResponse<String> response = this.http.send(request, HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(method + " " + path + ": " + response.body()).isEqualTo(status);
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
