package dev.holdfast.zookeeper;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.holdfast.spi.HeldLock;
import dev.holdfast.test.server.ZooKeeperServer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A lock node's data names the instance that holds it, {@code <ttl millis> <instance>}, written
 * by the create and by every renewal: ZooKeeper does not store the owner token.
 */
class ZooKeeperInstanceNameTests {

	private static ZooKeeperServer server;

	private static CuratorFramework observer;

	@BeforeAll
	static void startServer() throws Exception {
		server = ZooKeeperServer.start();
		observer = ZooKeeperClients.connect(server.connectString());
	}

	@AfterAll
	static void stopServer() throws Exception {
		observer.close();
		server.close();
	}

	@Test
	void lockNodeDataNamesTheHoldingInstanceAfterCreateAndRenewal() throws Exception {
		try (ZooKeeperLockBackend backend = ZooKeeperClients.backend(server.connectString())) {
			String key = "holdfast:zk-" + UUID.randomUUID();
			String owner = "AAAA.1@zk-web-1";
			assertThat(backend.acquire(key, owner, Duration.ofSeconds(20), Duration.ZERO).result().acquired()).isTrue();
			String parent = "/holdfast/locks/" + ZooKeeperPaths.encode(key);
			List<String> children = observer.getChildren().forPath(parent);
			assertThat(children).hasSize(1);
			String node = parent + "/" + children.get(0);
			assertThat(new String(observer.getData().forPath(node), StandardCharsets.US_ASCII))
				.isEqualTo("20000 zk-web-1");
			assertThat(backend.renew(List.of(new HeldLock(key, owner, Duration.ofSeconds(25))))).containsExactly(key);
			assertThat(new String(observer.getData().forPath(node), StandardCharsets.US_ASCII))
				.isEqualTo("25000 zk-web-1");
			assertThat(backend.release(key, owner)).isTrue();
		}
	}

}
