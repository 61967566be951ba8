package dev.holdfast.actuate;

import java.time.Duration;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;

import dev.holdfast.LeaderElections;
import dev.holdfast.Leadership;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.httpBasic;
import static org.springframework.security.test.web.servlet.setup.SecurityMockMvcConfigurers.springSecurity;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * Without {@code management.endpoint.leaders.access=unrestricted} the {@code leaders} endpoint is
 * read-only: even an authenticated user cannot yield, and can still read.
 */
@SpringBootTest(classes = LeadersEndpointReadOnlyByDefaultTests.App.class,
		properties = { "holdfast.backend=memory", "management.endpoints.web.exposure.include=leaders",
				"spring.security.user.name=ops", "spring.security.user.password=secret" })
class LeadersEndpointReadOnlyByDefaultTests {

	@Autowired
	WebApplicationContext context;

	@Autowired
	LeaderElections elections;

	@Test
	void yieldIsRefusedUnlessTheEndpointsAccessAllowsWrites() throws Exception {
		MockMvc mvc = MockMvcBuilders.webAppContextSetup(this.context).apply(springSecurity()).build();
		String group = "group-" + UUID.randomUUID();
		Leadership leadership = this.elections.join(group);
		assertThat(leadership.awaitLeadership(Duration.ofSeconds(5))).isPresent();
		mvc.perform(yieldRequest(group).with(httpBasic("ops", "secret")).with(csrf()))
			.andExpect(status().is4xxClientError());
		assertThat(leadership.isLeader()).isTrue();
		mvc.perform(get("/actuator/leaders/" + group).with(httpBasic("ops", "secret"))).andExpect(status().isOk());
	}

	private static MockHttpServletRequestBuilder yieldRequest(String group) {
		return post("/actuator/leaders/" + group).contentType(MediaType.APPLICATION_JSON).content("{}");
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

	}

}
