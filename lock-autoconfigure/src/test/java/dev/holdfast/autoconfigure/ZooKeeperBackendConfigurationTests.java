package dev.holdfast.autoconfigure;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.retry.RetryOneTime;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.condition.ConditionEvaluationReport;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.ZooKeeperServer;
import dev.holdfast.zookeeper.ZooKeeperLockBackend;

import static org.assertj.core.api.Assertions.assertThat;

@ExtendWith(OutputCaptureExtension.class)
class ZooKeeperBackendConfigurationTests {

	private static ZooKeeperServer server;

	private static CuratorFramework observer;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class));

	@BeforeAll
	static void startServer() throws Exception {
		server = ZooKeeperServer.start();
		observer = started(server.connectString());
	}

	@AfterAll
	static void stopServer() throws Exception {
		observer.close();
		server.close();
	}

	private static CuratorFramework started(String connectString) throws InterruptedException {
		CuratorFramework client = CuratorFrameworkFactory.newClient(connectString, 10_000, 3_000,
				new RetryOneTime(100));
		client.start();
		assertThat(client.blockUntilConnected(10, TimeUnit.SECONDS)).isTrue();
		return client;
	}

	@Test
	void startupNamesWhatChoseTheBackend(CapturedOutput output) throws Exception {
		this.runner
			.withPropertyValues("holdfast.backend=zookeeper", "holdfast.zookeeper.connect-string=" + server.connectString())
			.run((context) -> {
				assertThat(context).hasSingleBean(ZooKeeperLockBackend.class);
				assertThat(output).contains("Holdfast keeps locks in the zookeeper backend (holdfast.backend=zookeeper)")
					.doesNotContain("the application defines");
			});
		CuratorFramework client = started(server.connectString());
		try {
			this.runner.withBean(CuratorFramework.class, () -> client)
				.run((context) -> assertThat(output).contains("Holdfast keeps locks in the zookeeper backend "
						+ "(holdfast.backend is unset and a CuratorFramework bean exists)"));
		}
		finally {
			client.close();
		}
	}

	@Test
	void ownClientIsBuiltFromPropertiesAndClosedWithTheContext() throws Exception {
		String[] key = new String[1];
		this.runner
			.withPropertyValues("holdfast.backend=zookeeper", "holdfast.zookeeper.connect-string=" + server.connectString(),
					"holdfast.zookeeper.base-path=/apps/holdfast", "holdfast.zookeeper.session-timeout=10s",
					"holdfast.zookeeper.connection-timeout=3s", "holdfast.zookeeper.retry.max-retries=1")
			.run((context) -> {
				assertThat(context).hasSingleBean(ZooKeeperLockBackend.class);
				ZooKeeperLockBackend backend = context.getBean(ZooKeeperLockBackend.class);
				assertThat(backend.basePath()).isEqualTo("/apps/holdfast");
				key[0] = "holdfast:autoconfigure-" + System.nanoTime();
				assertThat(backend.tryAcquire(key[0], "owner", Duration.ofSeconds(30)).acquired()).isTrue();
				assertThat(observer.getChildren().forPath("/apps/holdfast/locks")).isNotEmpty();
			});
		// the context closed the client, and with its session the lock node went away
		assertThat(observer.getChildren().forPath("/apps/holdfast/locks/" + key[0].replace("/", "%2F"))).isEmpty();
	}

	@Test
	void connectStringSelectsZooKeeperWhenNoBackendIsNamedAndTheReportSaysWhy() {
		this.runner.withPropertyValues("holdfast.zookeeper.connect-string=" + server.connectString())
			.withBean(RedisConnectionFactory.class, () -> new LettuceConnectionFactory())
			.run((context) -> {
				assertThat(context).hasSingleBean(ZooKeeperLockBackend.class);
				assertThat(context.getBean(LockTemplate.class)
					.executeLocked("autoconfigure", null, LockOptions.defaults(), () -> "ran")).isEqualTo("ran");
				assertThat(whyZooKeeper(context)).contains("holdfast.zookeeper.connect-string is set");
			});
	}

	@Test
	void applicationCuratorBeanIsDetectedUsedAndLeftOpen() throws Exception {
		CuratorFramework client = started(server.connectString());
		try {
			// no destroy method: the context would close the client, which is not what is tested here
			this.runner.withBean(CuratorFramework.class, () -> client, (definition) -> definition.setDestroyMethodName(""))
				.withBean(RedisConnectionFactory.class, () -> new LettuceConnectionFactory())
				.run((context) -> {
					assertThat(context).hasSingleBean(ZooKeeperLockBackend.class);
					assertThat(whyZooKeeper(context)).contains("a CuratorFramework bean exists");
					assertThat(context.getBean(ZooKeeperLockBackend.class)
						.tryAcquire("holdfast:app-client", "owner", Duration.ofSeconds(5))
						.acquired()).isTrue();
				});
			assertThat(client.getState()).as("the backend leaves the application's client open")
				.isEqualTo(CuratorFrameworkState.STARTED);
		}
		finally {
			client.close();
		}
	}

	/** What the condition report ({@code --debug}) says about the zookeeper backend. */
	private static String whyZooKeeper(AssertableApplicationContext context) {
		ConditionEvaluationReport report = ConditionEvaluationReport.get(context.getBeanFactory());
		StringBuilder messages = new StringBuilder();
		report.getConditionAndOutcomesBySource()
			.get(ZooKeeperBackendConfiguration.class.getName())
			.forEach((outcome) -> messages.append(outcome.getOutcome().getMessage()).append('\n'));
		return messages.toString();
	}

	@Test
	void unstartedCuratorBeanFailsWithTheAction() {
		CuratorFramework client = CuratorFrameworkFactory.newClient(server.connectString(), new RetryOneTime(100));
		this.runner.withBean(CuratorFramework.class, () -> client).run((context) -> {
			assertThat(context).getFailure().rootCause().isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("LATENT");
			FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
			assertThat(analysis.getAction()).contains("initMethod = \"start\"");
		});
		client.close();
	}

	@Test
	void missingConnectStringFailsWithTheAction() {
		this.runner.withPropertyValues("holdfast.backend=zookeeper").run((context) -> {
			FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
			assertThat(analysis.getDescription()).contains("holdfast.zookeeper.connect-string is empty");
			assertThat(analysis.getAction()).contains("holdfast.zookeeper.connect-string");
		});
	}

	@Test
	void unreachableEnsembleFailsAtStartupWithFailFastNamingTheTimeout() throws Exception {
		int closedPort;
		try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			closedPort = socket.getLocalPort();
		}
		long start = System.nanoTime();
		this.runner
			.withPropertyValues("holdfast.backend=zookeeper", "holdfast.zookeeper.connect-string=127.0.0.1:" + closedPort,
					"holdfast.zookeeper.connection-timeout=500ms", "holdfast.fail-fast=true")
			.run((context) -> {
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis.getDescription()).isEqualTo("Holdfast could not reach its zookeeper backend at "
						+ "startup: not connected to 127.0.0.1:" + closedPort
						+ " within 500 ms (holdfast.zookeeper.connection-timeout)");
				assertThat(analysis.getAction()).contains("holdfast.zookeeper.*").contains("holdfast.fail-fast=false");
			});
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
	}

	@Test
	void invalidBasePathOrTimeoutFailsNamingTheProperty() {
		this.runner
			.withPropertyValues("holdfast.backend=zookeeper", "holdfast.zookeeper.connect-string=" + server.connectString(),
					"holdfast.zookeeper.base-path=holdfast/")
			.run((context) -> assertThat(context).getFailure().rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("holdfast.zookeeper.base-path"));
		this.runner
			.withPropertyValues("holdfast.backend=zookeeper", "holdfast.zookeeper.connect-string=" + server.connectString(),
					"holdfast.zookeeper.session-timeout=0s")
			.run((context) -> assertThat(context).getFailure().rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("holdfast.zookeeper.session-timeout"));
	}

	@Test
	void missingCuratorFailsWithTheAction() {
		this.runner.withPropertyValues("holdfast.backend=zookeeper")
			.withClassLoader(new FilteredClassLoader(CuratorFramework.class))
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("org.apache.curator:curator-framework"));
	}

	@Test
	void backsOffWhenTheApplicationDefinesABackend() {
		this.runner.withPropertyValues("holdfast.backend=zookeeper", "holdfast.zookeeper.connect-string=127.0.0.1:1")
			.withBean(LockBackend.class, InMemoryLockBackend::new)
			.run((context) -> assertThat(context).hasSingleBean(LockBackend.class)
				.doesNotHaveBean(ZooKeeperLockBackend.class));
	}

}
