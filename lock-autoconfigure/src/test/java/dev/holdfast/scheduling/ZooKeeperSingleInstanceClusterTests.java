package dev.holdfast.scheduling;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.ZooKeeperServer;

/**
 * Three instances on one in-process ZooKeeper server, each with its own Curator client built
 * from {@code holdfast.zookeeper.*}.
 */
class ZooKeeperSingleInstanceClusterTests extends AbstractSingleInstanceClusterTests {

	private static ZooKeeperServer server;

	@BeforeAll
	static void startServer() throws Exception {
		server = ZooKeeperServer.start();
	}

	@AfterAll
	static void stopServer() throws Exception {
		server.close();
	}

	@Override
	protected void configureBackend(SpringApplicationBuilder builder) {
		builder.sources(AutoConfig.class)
			.properties("holdfast.zookeeper.connect-string=" + server.connectString(), "holdfast.backend=zookeeper");
	}

	@Override
	protected String expectedBackend() {
		return "zookeeper";
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration(HoldfastAutoConfiguration.class)
	static class AutoConfig {

	}

}
