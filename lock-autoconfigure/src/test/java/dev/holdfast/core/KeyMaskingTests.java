package dev.holdfast.core;

import java.time.Duration;
import java.util.UUID;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Mono;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Lock keys end with values from method arguments, often user data: exception messages and WARN
 * logs show the lock name and mask the key part unless {@code showKeyValues} is on.
 */
@ExtendWith(OutputCaptureExtension.class)
class KeyMaskingTests {

	private static final String EMAIL = "alice@example.com";

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final String name = "orders-" + UUID.randomUUID();

	@Test
	void messagesAndLogsMaskTheKeyPartByDefault(CapturedOutput output) {
		String masked = LockSettings.defaults().shown("holdfast:" + this.name + ":" + EMAIL);
		try (DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults());
				DefaultLockTemplate other = new DefaultLockTemplate(this.backend, LockSettings.defaults())) {
			try (Lease held = other.acquire(this.name, EMAIL, LockOptions.defaults())) {
				assertThatExceptionOfType(LockNotAcquiredException.class)
					.isThrownBy(() -> template.acquire(this.name, EMAIL, LockOptions.defaults()))
					.withMessageContaining("'" + masked + "'")
					.withMessageNotContaining(EMAIL)
					.satisfies((ex) -> assertThat(ex.getLockKey()).isEqualTo(held.key()));
			}
			template.acquire(this.name, EMAIL, LockOptions.defaults());
		}
		// Closed with the lease in use: the lost-lease WARN names the lock, not the value.
		assertThat(output).contains("Holdfast lost lock '" + masked + "'").doesNotContain(EMAIL);
	}

	@Test
	void maskedKeysCarryAFingerprintThatEqualKeysShare() {
		LockSettings settings = LockSettings.defaults();
		String alice = settings.shown("holdfast:orders:" + EMAIL);
		String bob = settings.shown("holdfast:orders:bob@example.com");
		assertThat(alice).matches("holdfast:orders:\\*{6}#[0-9a-f]{4}")
			.isEqualTo(settings.shown("holdfast:orders:" + EMAIL))
			.isNotEqualTo(bob)
			.doesNotContain(EMAIL);
		assertThat(bob).matches("holdfast:orders:\\*{6}#[0-9a-f]{4}");
		// the whole key is hashed: the same value under another lock name is another lock
		assertThat(settings.shown("holdfast:payments:" + EMAIL)).doesNotEndWith(alice.substring(alice.length() - 5));
		// a shortened key, and a key without a key part (nothing to mask, nothing to tell apart)
		assertThat(settings.shown("holdfast:orders#QvXn0VY9")).matches("holdfast:orders#\\*{6}#[0-9a-f]{4}");
		assertThat(settings.shown("holdfast:orders")).isEqualTo("holdfast:orders");
	}

	@Test
	void backendFailureMessagesMaskTheKeyPart() {
		InMemoryLockBackend failing = new InMemoryLockBackend() {
			@Override
			public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
				throw new LockBackendException("Redis acquire of lock '" + key + "' timed out", null);
			}
		};
		try (DefaultLockTemplate template = new DefaultLockTemplate(failing, LockSettings.defaults())) {
			assertThatExceptionOfType(LockBackendException.class)
				.isThrownBy(() -> template.acquire(this.name, EMAIL, LockOptions.defaults()))
				.withMessageMatching("Redis acquire of lock 'holdfast:" + this.name + ":\\*{6}#[0-9a-f]{4}' timed out");
		}
	}

	@Test
	void failedRenewalsAndReleasesAreLoggedWithTheKeyPartMasked(CapturedOutput output) {
		InMemoryLockBackend failing = new InMemoryLockBackend() {
			@Override
			public java.util.Set<String> renew(java.util.Collection<dev.holdfast.spi.HeldLock> locks) {
				throw new LockBackendException("Redis renewal of '" + locks.iterator().next().key() + "' timed out", null);
			}

			@Override
			public boolean release(String key, String owner) {
				throw new LockBackendException("Redis release of lock '" + key + "' timed out", null);
			}
		};
		try (DefaultLockTemplate template = new DefaultLockTemplate(failing, LockSettings.defaults())) {
			Lease lease = template.acquire(this.name, EMAIL, LockOptions.defaults().leaseTime(Duration.ofMillis(300)));
			org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> !lease.isValid());
			lease.close();
		}
		String masked = LockSettings.defaults().shown("holdfast:" + this.name + ":" + EMAIL);
		assertThat(output).contains("Holdfast could not renew")
			.contains("Redis renewal of '" + masked + "' timed out")
			.contains("Redis release of lock '" + masked + "' timed out")
			.doesNotContain(EMAIL);
	}

	@Test
	void annotatedMonoThatFindsItsLockHeldFailsWithTheKeyPartMasked() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withBean(LockBackend.class, () -> this.backend)
			.withBean(Orders.class)
			.run((context) -> {
				try (DefaultLockTemplate other = new DefaultLockTemplate(this.backend, LockSettings.defaults());
						Lease held = other.acquire("orders", EMAIL, LockOptions.defaults())) {
					assertThatExceptionOfType(LockNotAcquiredException.class)
						.isThrownBy(() -> context.getBean(Orders.class).fulfil(EMAIL).block(Duration.ofSeconds(5)))
						.withMessageContaining("'holdfast:orders:******#")
						.withMessageNotContaining(EMAIL);
				}
			});
	}

	@Test
	void showKeyValuesShowsKeysAsTheyAre() {
		LockSettings settings = LockSettings.defaults().withKeyValuesShown(true);
		try (DefaultLockTemplate template = new DefaultLockTemplate(this.backend, settings);
				DefaultLockTemplate other = new DefaultLockTemplate(this.backend, settings);
				Lease held = other.acquire(this.name, EMAIL, LockOptions.defaults())) {
			assertThatExceptionOfType(LockNotAcquiredException.class)
				.isThrownBy(() -> template.acquire(this.name, EMAIL, LockOptions.defaults()))
				.withMessageContaining("'holdfast:" + this.name + ":" + EMAIL + "'");
		}
	}

	static class Orders {

		@DistributedLock(name = "orders", key = "#email")
		Mono<String> fulfil(String email) {
			return Mono.just("done");
		}

	}

}
