package dev.holdfast.actuate;

import java.time.Duration;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.actuate.LocksEndpointSecurityTests.NightlyJob;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.httpBasic;
import static org.springframework.security.test.web.servlet.setup.SecurityMockMvcConfigurers.springSecurity;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * Without {@code management.endpoint.locks.access=unrestricted} the {@code locks} endpoint is
 * read-only: even an authenticated user cannot release a lock by force or run a job now, and can
 * still read.
 */
@SpringBootTest(classes = LocksEndpointReadOnlyByDefaultTests.App.class,
		properties = { "holdfast.backend=memory", "management.endpoints.web.exposure.include=locks",
				"spring.security.user.name=ops", "spring.security.user.password=secret" })
class LocksEndpointReadOnlyByDefaultTests {

	@Autowired
	WebApplicationContext context;

	@Autowired
	LockTemplate locks;

	@Test
	void forcedReleaseIsRefusedUnlessTheEndpointsAccessAllowsWrites() throws Exception {
		MockMvc mvc = MockMvcBuilders.webAppContextSetup(this.context).apply(springSecurity()).build();
		try (Lease lease = this.locks.acquire("stuck-" + UUID.randomUUID(), null, LockOptions.defaults())) {
			mvc.perform(post("/actuator/locks").contentType(MediaType.APPLICATION_JSON)
				.content("{\"key\": \"" + lease.key() + "\"}")
				.with(httpBasic("ops", "secret"))
				.with(csrf())).andExpect(status().is4xxClientError());
			assertThat(lease.isValid()).isTrue();
			mvc.perform(get("/actuator/locks/cluster").with(httpBasic("ops", "secret"))).andExpect(status().isOk());
		}
	}

	@Test
	void runNowIsRefusedUnlessTheEndpointsAccessAllowsWrites() throws Exception {
		MockMvc mvc = MockMvcBuilders.webAppContextSetup(this.context).apply(springSecurity()).build();
		mvc.perform(post("/actuator/locks/jobs/nightly").contentType(MediaType.APPLICATION_JSON)
			.with(httpBasic("ops", "secret"))
			.with(csrf())).andExpect(status().is4xxClientError());
		NightlyJob job = this.context.getBean(NightlyJob.class);
		await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2)).until(() -> job.runs.get() == 0);
		mvc.perform(get("/actuator/locks/jobs").with(httpBasic("ops", "secret"))).andExpect(status().isOk());
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		NightlyJob nightlyJob() {
			return new NightlyJob();
		}

	}

}
