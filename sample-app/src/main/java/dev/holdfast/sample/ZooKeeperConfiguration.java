package dev.holdfast.sample;

import java.nio.file.Path;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Profile;

/**
 * The {@code zookeeper} profile: the application's own Curator client, which Holdfast detects
 * and uses, and, unless {@code sample.zookeeper.embedded=false}, a ZooKeeper server embedded in
 * the first instance.
 */
@Configuration(proxyBeanMethods = false)
@Profile("zookeeper")
class ZooKeeperConfiguration {

	@Bean(destroyMethod = "close")
	@ConditionalOnProperty(name = "sample.zookeeper.embedded", havingValue = "true", matchIfMissing = true)
	EmbeddedZooKeeper embeddedZooKeeper(@Value("${sample.zookeeper.port:2181}") int port,
			@Value("${sample.zookeeper.dir:./data/zookeeper}") Path dir) {
		return EmbeddedZooKeeper.startUnlessRunning(port, dir);
	}

	@Bean(initMethod = "start", destroyMethod = "close")
	CuratorFramework curatorFramework(ObjectProvider<EmbeddedZooKeeper> embedded,
			@Value("${sample.zookeeper.connect-string}") String connectString) {
		embedded.getIfAvailable(); // the server, if this instance serves it, starts first
		return CuratorFrameworkFactory.builder()
			.connectString(connectString)
			.sessionTimeoutMs(15_000)
			.connectionTimeoutMs(5_000)
			.retryPolicy(new ExponentialBackoffRetry(100, 3, 1000))
			.build();
	}

}
