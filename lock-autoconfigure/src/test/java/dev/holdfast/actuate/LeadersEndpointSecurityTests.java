package dev.holdfast.actuate;

import java.time.Duration;
import java.util.UUID;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
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
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * The yield over HTTP with Spring Security and Boot's default security of the actuator, as
 * {@code LocksEndpointSecurityTests} does for the forced release: an anonymous call is refused,
 * an authenticated user's call yields and is logged with the user's name. The write operation
 * exists because {@code management.endpoint.leaders.access} allows it
 * ({@link LeadersEndpointReadOnlyByDefaultTests}).
 */
@SpringBootTest(classes = LeadersEndpointSecurityTests.App.class,
		properties = { "holdfast.backend=memory", "management.endpoints.web.exposure.include=leaders",
				"management.endpoint.leaders.access=unrestricted", "spring.security.user.name=ops",
				"spring.security.user.password=secret" })
@ExtendWith(OutputCaptureExtension.class)
class LeadersEndpointSecurityTests {

	@Autowired
	WebApplicationContext context;

	@Autowired
	LeaderElections elections;

	@Test
	void anonymousYieldIsRefusedAndAnAuthenticatedUsersYieldEndsTheTerm(CapturedOutput output) throws Exception {
		MockMvc mvc = MockMvcBuilders.webAppContextSetup(this.context).apply(springSecurity()).build();
		String group = "group-" + UUID.randomUUID();
		Leadership leadership = this.elections.join(group);
		long token = leadership.awaitLeadership(Duration.ofSeconds(5)).orElseThrow().fencingToken();

		mvc.perform(yieldRequest(group).with(csrf())).andExpect(status().isUnauthorized());
		assertThat(leadership.isLeader()).isTrue();
		assertThat(output).doesNotContain("yielded by");

		mvc.perform(get("/actuator/leaders").with(httpBasic("ops", "secret")))
			.andExpect(status().isOk())
			.andExpect(jsonPath("$.groups[0].leader").value(true))
			.andExpect(jsonPath("$.groups[0].fencingToken").value(token));
		mvc.perform(yieldRequest(group).with(httpBasic("ops", "secret")).with(csrf()))
			.andExpect(status().isOk())
			.andExpect(jsonPath("$.yielded").value(true))
			.andExpect(jsonPath("$.fencingToken").value(token));
		assertThat(leadership.isLeader()).isFalse();
		assertThat(output).contains("term " + token + " yielded by ops");
	}

	private static MockHttpServletRequestBuilder yieldRequest(String group) {
		return post("/actuator/leaders/" + group).contentType(MediaType.APPLICATION_JSON).content("{}");
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

	}

}
