package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.NestedExceptionUtils;

import dev.holdfast.DistributedLock;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockMode;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@code @DistributedLock(mode = READ)} in an application context (RWL-9, RWL-10): served through
 * the advisor on a backend that gives read holds, refused at startup where it cannot be served.
 */
class ReadWriteStartupTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class));

	@Test
	void readMethodsHoldTogetherAndAWriteMethodWaitsForThem() {
		this.runner.withPropertyValues("holdfast.backend=memory").withUserConfiguration(ReadersConfiguration.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				Readers readers = context.getBean(Readers.class);
				// Each read waits inside its lock for the other: only readers that hold together return.
				CompletableFuture<String> other = CompletableFuture.supplyAsync(readers::read);
				assertThat(readers.read()).isEqualTo("read");
				assertThat(other.get(10, TimeUnit.SECONDS)).isEqualTo("read");
				CompletableFuture<String> holding = CompletableFuture.supplyAsync(readers::holdRead);
				readers.holdReading().await(5, TimeUnit.SECONDS);
				assertThatExceptionOfType(LockNotAcquiredException.class).isThrownBy(readers::write);
				readers.release().await(5, TimeUnit.SECONDS);
				assertThat(holding.get(10, TimeUnit.SECONDS)).isEqualTo("held");
				assertThat(readers.write()).isEqualTo("written");
			});
	}

	@Test
	void readOnABackendWithoutSharedLocksFailsAtStartup() {
		this.runner.withUserConfiguration(PlainBackendConfiguration.class, ReadersConfiguration.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure()))
					.isInstanceOf(LockConfigurationException.class)
					.hasMessageContaining("Readers.read has mode = READ")
					.hasMessageContaining("the plain backend cannot give read holds")
					.hasMessageContaining("SharedLocks");
			});
	}

	@Test
	void readOnANamedBackendWithoutSharedLocksFailsAtStartup() {
		this.runner.withPropertyValues("holdfast.backend=memory", "holdfast.backends.local.bean=localLocks")
			.withUserConfiguration(NamedPlainBackendConfiguration.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure()))
					.isInstanceOf(LockConfigurationException.class)
					.hasMessageContaining("NamedReaders.read has mode = READ")
					.hasMessageContaining("the plain backend cannot give read holds");
			});
	}

	@Test
	void readOnAReactiveMethodFailsAtStartup() {
		this.runner.withPropertyValues("holdfast.backend=memory")
			.withUserConfiguration(ReactiveReadersConfiguration.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure()))
					.isInstanceOf(LockConfigurationException.class)
					.hasMessageContaining("has mode = READ, which a method returning a reactive type");
			});
	}

	/** A backend without read holds: no {@code SharedLocks}. */
	static LockBackend plain() {
		InMemoryLockBackend memory = new InMemoryLockBackend();
		return new LockBackend() {

			@Override
			public String name() {
				return "plain";
			}

			@Override
			public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
				return memory.tryAcquire(key, owner, ttl);
			}

			@Override
			public boolean release(String key, String owner) {
				return memory.release(key, owner);
			}

		};
	}

	public static class Readers {

		final CyclicBarrier together = new CyclicBarrier(2);

		final CyclicBarrier holdReading = new CyclicBarrier(2);

		final CyclicBarrier release = new CyclicBarrier(2);

		// Through the proxy, whose own fields are not the bean's.
		public CyclicBarrier holdReading() {
			return this.holdReading;
		}

		public CyclicBarrier release() {
			return this.release;
		}

		@DistributedLock(name = "catalog", mode = LockMode.READ, waitTime = "5s")
		public String read() {
			try {
				this.together.await(5, TimeUnit.SECONDS);
			}
			catch (Exception ex) {
				throw new IllegalStateException("the other reader did not hold at the same time", ex);
			}
			return "read";
		}

		@DistributedLock(name = "catalog", mode = LockMode.READ, waitTime = "5s")
		public String holdRead() {
			try {
				this.holdReading.await(5, TimeUnit.SECONDS);
				this.release.await(5, TimeUnit.SECONDS);
			}
			catch (Exception ex) {
				throw new IllegalStateException(ex);
			}
			return "held";
		}

		@DistributedLock(name = "catalog", waitTime = "0s")
		public String write() {
			return "written";
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class ReadersConfiguration {

		@Bean
		Readers readers() {
			return new Readers();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class PlainBackendConfiguration {

		@Bean
		LockBackend plainBackend() {
			return plain();
		}

	}

	public static class NamedReaders {

		@DistributedLock(name = "catalog", mode = LockMode.READ, backend = "local")
		public String read() {
			return "read";
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class NamedPlainBackendConfiguration {

		@Bean(defaultCandidate = false)
		LockBackend localLocks() {
			return plain();
		}

		@Bean
		NamedReaders namedReaders() {
			return new NamedReaders();
		}

	}

	public static class ReactiveReaders {

		@DistributedLock(name = "catalog", mode = LockMode.READ)
		public Mono<String> read() {
			return Mono.just("read");
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class ReactiveReadersConfiguration {

		@Bean
		ReactiveReaders reactiveReaders() {
			return new ReactiveReaders();
		}

	}

}
