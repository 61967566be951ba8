package dev.holdfast.autoconfigure;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.tomcat.autoconfigure.servlet.TomcatServletWebServerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;

import dev.holdfast.Lease;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockOptions;
import dev.holdfast.actuate.LocksEndpoint;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.InstanceNames;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code holdfast.instance-name}: the readable name that every owner token carries to the
 * backend and that endpoints show, never the token itself.
 */
class InstanceNameTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner().withConfiguration(
			AutoConfigurations.of(HoldfastAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class,
					EndpointAutoConfiguration.class));

	@Test
	void theConfiguredNameIsInEveryOwnerTokenTheBackendStoresAndTheEndpointShowsIt() {
		OwnerRecordingBackend backend = new OwnerRecordingBackend();
		this.runner.withBean(InMemoryLockBackend.class, () -> backend)
			.withPropertyValues("holdfast.instance-name=orders-7:8080", "management.endpoints.web.exposure.include=locks")
			.run((context) -> {
				DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
				try (Lease lease = template.acquire("report", null, LockOptions.defaults())) {
					assertThat(backend.owners).singleElement()
						.satisfies((owner) -> assertThat(InstanceNames.of(owner)).isEqualTo("orders-7:8080"));
					LocksEndpoint.LocksDescriptor locks = context.getBean(LocksEndpoint.class).locks(SecurityContext.NONE);
					assertThat(locks.instance()).isEqualTo("orders-7:8080");
					assertThat(locks.toString()).doesNotContain(backend.owners.get(0));
				}
			});
	}

	@Test
	void withoutAWebServerTheDefaultNameIsThePidAtTheHost() {
		this.runner.withPropertyValues("holdfast.backend=memory").run((context) -> {
			String name = context.getBean(DefaultLockTemplate.class).settings().instanceName();
			assertThat(name).startsWith(ProcessHandle.current().pid() + "@");
			assertThat(InstanceNames.check(name)).isEqualTo(name);
		});
	}

	@Test
	void aWebApplicationOnAFixedPortIsNamedByItsHostAndPort() throws IOException {
		int port;
		try (ServerSocket socket = new ServerSocket(0)) {
			port = socket.getLocalPort();
		}
		try (ConfigurableApplicationContext context = new SpringApplicationBuilder(WebApp.class)
			.properties("holdfast.backend=memory", "server.port=" + port, "spring.main.banner-mode=off")
			.run()) {
			String name = context.getBean(DefaultLockTemplate.class).settings().instanceName();
			assertThat(name).endsWith(":" + port).doesNotContain("@");
		}
	}

	@Test
	void anInvalidNameFailsAtStartupNamingTheProperty() {
		this.runner.withPropertyValues("holdfast.backend=memory", "holdfast.instance-name=web 1").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("holdfast.instance-name");
		});
	}

	/** The memory backend, recording the owner tokens it is given. */
	static class OwnerRecordingBackend extends InMemoryLockBackend {

		final List<String> owners = new CopyOnWriteArrayList<>();

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			this.owners.add(owner);
			return super.tryAcquire(key, owner, ttl);
		}

	}

	/** A servlet web server and Holdfast only: the rest of the test class path's auto-configuration costs seconds. */
	@SpringBootConfiguration
	@ImportAutoConfiguration({ TomcatServletWebServerAutoConfiguration.class, HoldfastAutoConfiguration.class })
	static class WebApp {

	}

}
