package dev.holdfast.scheduling;

import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.RedisServer;

/**
 * Instances on three real redis-servers as Redlock nodes, each instance with its own clients.
 */
class RedlockSingleInstanceClusterTests extends AbstractSingleInstanceClusterTests {

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
	protected void configureBackend(SpringApplicationBuilder builder) {
		builder.sources(AutoConfig.class)
			.properties("holdfast.backend=redlock",
					"holdfast.redlock.nodes=" + nodes.stream().map(RedisServer::uri).collect(Collectors.joining(",")));
	}

	@Override
	protected String expectedBackend() {
		return "redlock";
	}

	@Override
	protected String label() {
		return "redlock (3 nodes)";
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration(HoldfastAutoConfiguration.class)
	static class AutoConfig {

	}

}
