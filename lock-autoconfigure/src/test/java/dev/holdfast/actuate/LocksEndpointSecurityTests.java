package dev.holdfast.actuate;

import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.SingleInstanceScheduled;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.httpBasic;
import static org.springframework.security.test.web.servlet.setup.SecurityMockMvcConfigurers.springSecurity;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * The forced release over HTTP with Spring Security on the class path and Boot's default
 * security of the actuator: an anonymous call is refused, an authenticated user's call (with
 * the CSRF token Spring Security asks of every POST) releases the lock and is logged with the
 * user's name; so is a run of a job now. The write operations exist because {@code management.endpoint.locks.access}
 * allows it ({@link LocksEndpointReadOnlyByDefaultTests}).
 */
@SpringBootTest(classes = LocksEndpointSecurityTests.App.class,
		properties = { "holdfast.backend=memory", "management.endpoints.web.exposure.include=locks",
				"management.endpoint.locks.access=unrestricted", "spring.security.user.name=ops",
				"spring.security.user.password=secret" })
@ExtendWith(OutputCaptureExtension.class)
class LocksEndpointSecurityTests {

	@Autowired
	WebApplicationContext context;

	@Autowired
	LockTemplate locks;

	MockMvc mvc;

	@BeforeEach
	void mockMvc() {
		this.mvc = MockMvcBuilders.webAppContextSetup(this.context).apply(springSecurity()).build();
	}

	@Test
	void anonymousCallIsRefusedAndAnAuthenticatedUsersCallReleasesTheLock(CapturedOutput output) throws Exception {
		try (Lease lease = this.locks.acquire("stuck-" + UUID.randomUUID(), null, LockOptions.defaults())) {
			String body = "{\"key\": \"" + lease.key() + "\"}";
			this.mvc.perform(post("/actuator/locks").contentType(MediaType.APPLICATION_JSON).content(body).with(csrf()))
				.andExpect(status().isUnauthorized());
			// Without the CSRF token Spring Security refuses the POST before it asks who calls.
			this.mvc.perform(post("/actuator/locks").contentType(MediaType.APPLICATION_JSON).content(body))
				.andExpect(status().isForbidden());
			assertThat(output).doesNotContain("released by force");

			this.mvc
				.perform(post("/actuator/locks").contentType(MediaType.APPLICATION_JSON)
					.content(body)
					.with(httpBasic("ops", "secret"))
					.with(csrf()))
				.andExpect(status().isOk())
				.andExpect(jsonPath("$.released").value(true));
			assertThat(output).contains("released by force by ops");
		}
	}

	@Test
	void anonymousRunNowIsRefusedAndAnAuthenticatedUsersRunNowStartsTheJob(CapturedOutput output) throws Exception {
		NightlyJob job = this.context.getBean(NightlyJob.class);
		this.mvc.perform(post("/actuator/locks/jobs/nightly").contentType(MediaType.APPLICATION_JSON).with(csrf()))
			.andExpect(status().isUnauthorized());
		this.mvc.perform(post("/actuator/locks/jobs/nightly").contentType(MediaType.APPLICATION_JSON))
			.andExpect(status().isForbidden());
		assertThat(job.runs.get()).isZero();

		this.mvc
			.perform(post("/actuator/locks/jobs/nightly").contentType(MediaType.APPLICATION_JSON)
				.with(httpBasic("ops", "secret"))
				.with(csrf()))
			.andExpect(status().isOk())
			.andExpect(jsonPath("$.job").value("nightly"))
			.andExpect(jsonPath("$.outcome").value("started"));
		await().until(() -> job.runs.get() == 1);
		assertThat(output).contains("Job 'nightly' runs now on this instance, started by ops");

		this.mvc
			.perform(post("/actuator/locks/jobs/nightyl").contentType(MediaType.APPLICATION_JSON)
				.with(httpBasic("ops", "secret"))
				.with(csrf()))
			.andExpect(status().isNotFound())
			.andExpect(jsonPath("$.reason").value("No @SingleInstanceScheduled job 'nightyl' on this instance;"
					+ " its jobs: nightly"));
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		NightlyJob nightlyJob() {
			return new NightlyJob();
		}

	}

	static class NightlyJob {

		final AtomicInteger runs = new AtomicInteger();

		@SingleInstanceScheduled(cron = "0 0 0 1 1 *", name = "nightly")
		void nightly() {
			this.runs.incrementAndGet();
		}

	}

}
