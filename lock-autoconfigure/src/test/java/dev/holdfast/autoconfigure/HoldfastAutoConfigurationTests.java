package dev.holdfast.autoconfigure;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.NestedExceptionUtils;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;

@ExtendWith(OutputCaptureExtension.class)
class HoldfastAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class));

	@Test
	void withoutAnyBackendLocksAreInMemoryWithAWarning(CapturedOutput output) {
		this.runner.run((context) -> {
			assertThat(context).hasSingleBean(InMemoryLockBackend.class).hasSingleBean(LockTemplate.class);
			assertThat(output).contains("keeps locks in memory");
		});
	}

	@Test
	void explicitMemoryBackendDoesNotWarn(CapturedOutput output) {
		this.runner.withPropertyValues("holdfast.backend=memory").run((context) -> {
			assertThat(context).hasSingleBean(InMemoryLockBackend.class);
			assertThat(output).doesNotContain("keeps locks in memory");
		});
	}

	@Test
	void propertiesReachTheTemplate() {
		this.runner
			.withPropertyValues("holdfast.backend=memory", "holdfast.key-prefix=app:", "holdfast.lease-time=45s",
					"holdfast.wait-time=2s", "holdfast.poll-interval=100ms", "holdfast.max-key-length=120")
			.run((context) -> {
				DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
				assertThat(template.settings().leaseTime()).isEqualTo(Duration.ofSeconds(45));
				assertThat(template.settings().waitTime()).isEqualTo(Duration.ofSeconds(2));
				assertThat(template.settings().pollInterval()).isEqualTo(Duration.ofMillis(100));
				assertThat(template.settings().maxKeyLength()).isEqualTo(120);
				try (Lease lease = template.acquire("job", null, LockOptions.defaults())) {
					assertThat(lease.key()).isEqualTo("app:job");
				}
			});
	}

	@Test
	void knownPropertiesInAnySpellingAndTheirEntriesStartTheApplication() {
		this.runner
			.withPropertyValues("holdfast.backend=memory", "holdfast.leaseTime=5s", "holdfast.wait_time=1s",
					"holdfast.aop.order=1", "holdfast.redlock.nodes[0]=redis://127.0.0.1:1",
					"holdfast.zookeeper.retry.max-retries=3", "holdfast.scheduling.lock-at-most-for=10m")
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void anUnknownPropertyFailsAtStartupNamingTheNearestKnownOne() {
		this.runner.withPropertyValues("holdfast.backend=memory", "holdfast.lock-at-most-for=10m").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure()))
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("Holdfast has no property 'holdfast.lock-at-most-for'");
		});
	}

	@Test
	void anUnknownPropertyIsAWarningWhenFailingOnThemIsOff(CapturedOutput output) {
		this.runner
			.withPropertyValues("holdfast.backend=memory", "holdfast.lock-at-most-for=10m",
					"holdfast.fail-on-unknown-properties=false")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(output).contains("WARN").contains("Holdfast has no property 'holdfast.lock-at-most-for'");
			});
	}

	@Test
	void userBackendBeanWins() {
		this.runner.withUserConfiguration(UserBackend.class).run((context) -> {
			assertThat(context).hasSingleBean(LockBackend.class);
			assertThat(context.getBean(DefaultLockTemplate.class).backend())
				.isSameAs(context.getBean("myBackend"));
		});
	}

	@Test
	void userTemplateBeanWins() {
		this.runner.withUserConfiguration(UserTemplate.class).run((context) -> {
			assertThat(context).hasSingleBean(DefaultLockTemplate.class);
			assertThat(context.getBean(DefaultLockTemplate.class).settings().keyPrefix()).isEqualTo("mine:");
		});
	}

	@Test
	void userLockTemplateReplacesHoldfastsAndAnnotatedMethodsLockThroughIt() {
		this.runner.withPropertyValues("holdfast.backend=memory")
			.withUserConfiguration(UserLockTemplate.class)
			.withBean(GoodService.class)
			.run((context) -> {
				assertThat(context).hasSingleBean(LockTemplate.class)
					.doesNotHaveBean(DefaultLockTemplate.class)
					.doesNotHaveBean(GracefulLockShutdown.class);
				RecordingLockTemplate template = context.getBean(RecordingLockTemplate.class);
				GoodService service = context.getBean(GoodService.class);
				java.util.concurrent.ExecutorService otherThread = java.util.concurrent.Executors
					.newSingleThreadExecutor();
				try {
					assertThat(service.run(() -> otherThread
						.submit(() -> template.tryAcquire("good", 1, LockOptions.defaults()).isEmpty())
						.get())).as("the lock was held while the method ran").isTrue();
				}
				finally {
					otherThread.shutdownNow();
				}
				assertThat(template.acquired).contains("good");
				assertThat(template.tryAcquire("good", 1, LockOptions.defaults())).isPresent()
					.get()
					.satisfies(Lease::close);
			});
	}

	@Test
	void scheduledJobsWithAUserLockTemplateFailAtStartupNamingTheFix() {
		this.runner.withPropertyValues("holdfast.backend=memory")
			.withUserConfiguration(UserLockTemplate.class)
			.withBean(ScheduledService.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				LockConfigurationException ex = findCause(context.getStartupFailure(),
						LockConfigurationException.class);
				assertThat(ex.getMessage()).contains("LockTemplate bean");
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis.getAction()).contains("holdfast.scheduling.enabled=false");
			});
	}

	@Test
	void unknownBackendFailsNamingTheValidOnes() {
		this.runner.withPropertyValues("holdfast.backend=etcd").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).hasStackTraceContaining("holdfast.backend")
				.hasStackTraceContaining("etcd");
		});
	}

	@Test
	void redisBackendWithoutSpringDataRedisFailsWithAnAction() {
		this.runner.withClassLoader(new FilteredClassLoader("org.springframework.data.redis"))
			.withPropertyValues("holdfast.backend=redis")
			.run((context) -> {
				assertThat(context).hasFailed();
				LockConfigurationException ex = findCause(context.getStartupFailure(), LockConfigurationException.class);
				assertThat(ex.getMessage()).contains("holdfast.backend=redis");
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis.getAction()).contains("spring-boot-starter-data-redis");
			});
	}

	@Test
	void invalidKeyPrefixFailsAtStartup() {
		this.runner.withPropertyValues("holdfast.backend=memory", "holdfast.key-prefix={app}").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(findCause(context.getStartupFailure(), LockConfigurationException.class).getMessage())
				.contains("{app}");
		});
	}

	@Test
	void malformedKeyExpressionFailsTheContextNamingTheMethod() {
		this.runner.withPropertyValues("holdfast.backend=memory")
			.withBean(BrokenService.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				LockConfigurationException ex = findCause(context.getStartupFailure(),
						LockConfigurationException.class);
				assertThat(ex.getMessage()).contains(BrokenService.class.getName() + ".broken").contains("#id +");
			});
	}

	@Test
	void badDurationFailsTheContextWithAFailureAnalysis() {
		this.runner.withPropertyValues("holdfast.backend=memory", "job.wait=soon")
			.withBean(BadDurationService.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis.getDescription()).contains("waitTime = \"${job.wait}\"").contains("\"soon\"");
				assertThat(analysis.getAction()).contains("5s");
			});
	}

	@Test
	void annotatedBeansAreProxied() {
		this.runner.withPropertyValues("holdfast.backend=memory").withBean(GoodService.class).run((context) -> {
			GoodService service = context.getBean(GoodService.class);
			LockTemplate template = context.getBean(LockTemplate.class);
			java.util.concurrent.ExecutorService otherThread = java.util.concurrent.Executors.newSingleThreadExecutor();
			try {
				assertThat(service.run(() -> otherThread
					.submit(() -> template.tryAcquire("good", 1, LockOptions.defaults()).isEmpty())
					.get())).isTrue();
			}
			finally {
				otherThread.shutdownNow();
			}
			assertThat(template.tryAcquire("good", 1, LockOptions.defaults())).isPresent().get().satisfies(Lease::close);
		});
	}

	private static <T extends Throwable> T findCause(Throwable failure, Class<T> type) {
		Throwable current = failure;
		while (current != null) {
			if (type.isInstance(current)) {
				return type.cast(current);
			}
			current = current.getCause();
		}
		throw new AssertionError("No " + type.getSimpleName() + " in " + failure);
	}

	@Configuration(proxyBeanMethods = false)
	static class UserBackend {

		@Bean
		LockBackend myBackend() {
			return new InMemoryLockBackend();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UserTemplate {

		@Bean
		DefaultLockTemplate myTemplate() {
			return new DefaultLockTemplate(new InMemoryLockBackend(),
					dev.holdfast.core.LockSettings.defaults().withKeyPrefix("mine:"));
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UserLockTemplate {

		@Bean(destroyMethod = "close")
		RecordingLockTemplate myLockTemplate() {
			return new RecordingLockTemplate(new DefaultLockTemplate(new InMemoryLockBackend(),
					dev.holdfast.core.LockSettings.defaults().withKeyPrefix("mine:")));
		}

	}

	/** An application's own LockTemplate: not Holdfast's engine, and it records what it acquires. */
	static class RecordingLockTemplate implements LockTemplate, AutoCloseable {

		final java.util.List<String> acquired = new java.util.concurrent.CopyOnWriteArrayList<>();

		private final DefaultLockTemplate delegate;

		RecordingLockTemplate(DefaultLockTemplate delegate) {
			this.delegate = delegate;
		}

		@Override
		public <T extends @org.jspecify.annotations.Nullable Object, E extends Exception> T executeLocked(String name,
				@org.jspecify.annotations.Nullable Object key, LockOptions options, LockedAction<T, E> action)
				throws E {
			this.acquired.add(name);
			return this.delegate.executeLocked(name, key, options, action);
		}

		@Override
		public <T, E extends Exception> java.util.Optional<T> tryExecuteLocked(String name,
				@org.jspecify.annotations.Nullable Object key, LockOptions options, LockedAction<T, E> action)
				throws E {
			this.acquired.add(name);
			return this.delegate.tryExecuteLocked(name, key, options, action);
		}

		@Override
		public java.util.Optional<Lease> tryAcquire(String name, @org.jspecify.annotations.Nullable Object key,
				LockOptions options) {
			this.acquired.add(name);
			return this.delegate.tryAcquire(name, key, options);
		}

		@Override
		public Lease acquire(String name, @org.jspecify.annotations.Nullable Object key, LockOptions options) {
			this.acquired.add(name);
			return this.delegate.acquire(name, key, options);
		}

		@Override
		public void close() {
			this.delegate.close();
		}

	}

	static class ScheduledService {

		@dev.holdfast.SingleInstanceScheduled(fixedRate = "1h")
		public void job() {
		}

	}

	static class BrokenService {

		@DistributedLock(key = "#id +")
		public void broken(String id) {
		}

	}

	static class BadDurationService {

		@DistributedLock(waitTime = "${job.wait}")
		public void job() {
		}

	}

	static class GoodService {

		@DistributedLock(name = "good", key = "1")
		public boolean run(java.util.concurrent.Callable<Boolean> probe) throws Exception {
			return probe.call();
		}

	}

}
