package dev.holdfast.scheduling;

import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.RedisServer;

/**
 * Job leases on three real redis-servers as Redlock nodes, each context with its own clients.
 */
class RedlockJobLeaseTests extends AbstractJobLeaseTests {

	private static List<RedisServer> nodes;

	@BeforeAll
	static void startNodes() {
		nodes = Stream.generate(RedisServer::start).limit(3).toList();
	}

	@AfterAll
	static void stopNodes() {
		nodes.forEach(RedisServer::close);
	}

	@Override
	protected ApplicationContextRunner runner() {
		return new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withPropertyValues("holdfast.backend=redlock", "holdfast.redlock.nodes="
					+ nodes.stream().map(RedisServer::uri).collect(Collectors.joining(",")));
	}

	@Override
	protected String expectedBackend() {
		return "redlock";
	}

}
