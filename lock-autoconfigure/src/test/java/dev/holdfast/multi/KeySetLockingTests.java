package dev.holdfast.multi;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.Leases;
import dev.holdfast.LockContext;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.OnLocked;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;

import static dev.holdfast.aop.AnnotationStartupFailures.assertStartupFailure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code @DistributedLock(keys = ...)} and {@link LockTemplate#acquireAll} on the memory backend,
 * in a Spring context: the keys are taken in their canonical order, once each, all or none within
 * one wait time, and released in reverse; each key is reentrant and has its own fencing token.
 */
class KeySetLockingTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
		.withBean(RecordingBackend.class)
		.withBean(Transfers.class);

	@Test
	void keysAreTakenInTheirCanonicalOrderOnceEachAndReleasedInReverse() {
		this.runner.run((context) -> {
			RecordingBackend backend = context.getBean(RecordingBackend.class);
			context.getBean(Transfers.class).transfer("b", "a");
			context.getBean(Transfers.class).transfer("a", "b");
			context.getBean(Transfers.class).transfer("c", "c");
			assertThat(backend.calls).containsExactly("acquire transfer:a", "acquire transfer:b", "release transfer:b",
					"release transfer:a", "acquire transfer:a", "acquire transfer:b", "release transfer:b",
					"release transfer:a", "acquire transfer:c", "release transfer:c");
		});
	}

	@Test
	void eachKeyHasItsOwnFencingToken() {
		this.runner.run((context) -> {
			Map<String, Long> tokens = context.getBean(Transfers.class).transfer("x", "y");
			assertThat(tokens).containsOnlyKeys("x", "y");
			assertThat(tokens.get("x")).isNotEqualTo(tokens.get("y"));
			assertThat(tokens.values()).allMatch((token) -> token > 0);
		});
	}

	@Test
	void aKeyHeldElsewhereReleasesTheKeysTakenAndSkipsOrThrows() {
		this.runner.run((context) -> {
			RecordingBackend backend = context.getBean(RecordingBackend.class);
			Transfers transfers = context.getBean(Transfers.class);
			try (Lease held = otherInstance(context).acquire("transfer", "b", LockOptions.defaults())) {
				backend.calls.clear();
				assertThat(transfers.skipping("a", "b")).isNull();
				assertThat(backend.calls).startsWith("acquire transfer:a", "acquire transfer:b")
					.endsWith("release transfer:a")
					.doesNotContain("acquire transfer:c");
				assertThatThrownBy(() -> transfers.throwing("c", "b")).isInstanceOf(LockNotAcquiredException.class)
					.hasMessageContaining("transfer:")
					.hasMessageEndingWith("within PT0.1S");
				// nothing of the failed calls is left held: another instance takes a and c at once
				assertThat(otherInstance(context).tryAcquireAll("transfer", List.of("a", "c"),
						LockOptions.defaults().waitTime(Duration.ZERO))).isPresent();
			}
		});
	}

	@Test
	void oneWaitTimeCoversAllKeys() {
		this.runner.run((context) -> {
			LockTemplate other = otherInstance(context);
			Lease a = other.acquire("transfer", "a", LockOptions.defaults());
			Lease b = other.acquire("transfer", "b", LockOptions.defaults());
			Thread releaseA = new Thread(() -> sleepThenClose(a, 400));
			releaseA.start();
			long start = System.nanoTime();
			// a is free after 400 ms of the 500 ms; b stays held: the call waits about 500 ms in all, not 900
			assertThat(context.getBean(Transfers.class).skipping("a", "b")).isNull();
			Duration took = Duration.ofNanos(System.nanoTime() - start);
			assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(450)).isLessThan(Duration.ofMillis(800));
			releaseA.join();
			b.close();
		});
	}

	@Test
	void eachKeyIsReentrant() {
		this.runner.run((context) -> {
			LockTemplate template = context.getBean(LockTemplate.class);
			try (Lease outer = template.acquire("transfer", "a", LockOptions.defaults())) {
				assertThat(context.getBean(Transfers.class).throwing("a", "b")).isEqualTo("ran");
				assertThat(outer.isValid()).as("the outer hold of a after the inner call released").isTrue();
			}
		});
	}

	@Test
	void aFutureHoldsEveryKeyUntilItCompletes() {
		this.runner.run((context) -> {
			CompletableFuture<String> work = new CompletableFuture<>();
			CompletableFuture<String> result = context.getBean(Transfers.class).later("a", "b", work);
			LockOptions once = LockOptions.defaults().waitTime(Duration.ZERO);
			assertThat(otherInstance(context).tryAcquire("transfer", "b", once)).as("b while the future runs").isEmpty();
			work.complete("done");
			assertThat(result.get(5, TimeUnit.SECONDS)).isEqualTo("done");
			assertThat(otherInstance(context).tryAcquireAll("transfer", List.of("a", "b"), once)).isPresent();
		});
	}

	@Test
	void collectionsAndArraysGiveOneKeyPerElement() {
		this.runner.run((context) -> {
			RecordingBackend backend = context.getBean(RecordingBackend.class);
			Transfers transfers = context.getBean(Transfers.class);
			assertThat(transfers.all("p", new String[] { "r", "q" }, List.of("q", "s"))).isEqualTo(4);
			assertThat(backend.calls).filteredOn((call) -> call.startsWith("acquire"))
				.containsExactly("acquire batch:p", "acquire batch:q", "acquire batch:r", "acquire batch:s");
		});
	}

	@Test
	void aNullElementOrNoKeyAtAllIsAnErrorNamingTheExpression() {
		this.runner.run((context) -> {
			Transfers transfers = context.getBean(Transfers.class);
			List<String> withNull = new ArrayList<>(List.of("q"));
			withNull.add(null);
			assertThatIllegalArgumentException().isThrownBy(() -> transfers.all("p", new String[0], withNull))
				.withMessageContaining("\"#more\"")
				.withMessageContaining(Transfers.class.getName() + ".all")
				.withMessageContaining("null");
			assertThatIllegalArgumentException().isThrownBy(() -> transfers.all(null, new String[0], List.of()))
				.withMessageContaining("\"#first\"")
				.withMessageContaining("evaluated to null");
			assertThatIllegalArgumentException().isThrownBy(() -> transfers.none(List.of()))
				.withMessageContaining("[\"#ids\"]")
				.withMessageContaining("gave no key");
		});
	}

	@Test
	void theTemplateRefusesNullAndNoKeys() {
		this.runner.run((context) -> {
			LockTemplate template = context.getBean(LockTemplate.class);
			List<String> withNull = new ArrayList<>(List.of("a"));
			withNull.add(null);
			assertThatIllegalArgumentException()
				.isThrownBy(() -> template.acquireAll("transfer", withNull, LockOptions.defaults()))
				.withMessageContaining("Key 1 of the 2 keys of lock 'transfer' is null");
			assertThatIllegalArgumentException()
				.isThrownBy(() -> template.acquireAll("transfer", List.of(), LockOptions.defaults()))
				.withMessageContaining("No keys were given for lock 'transfer'");
		});
	}

	@Test
	void theTemplatesLeasesGiveEachKeysTokenAndReleaseAllOnClose() {
		this.runner.run((context) -> {
			LockTemplate template = context.getBean(LockTemplate.class);
			Leases leases = template.acquireAll("transfer", List.of(7, 3, 7), LockOptions.defaults());
			assertThat(leases.leases()).hasSize(2);
			assertThat(leases.leases().get(0).key()).endsWith("transfer:3");
			assertThat(leases.fencingToken(3)).isEqualTo(leases.leases().get(0).fencingToken());
			assertThat(leases.fencingToken(7)).isEqualTo(leases.leases().get(1).fencingToken());
			assertThat(leases.isValid()).isTrue();
			assertThatThrownBy(leases::fencingToken).isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("fencingToken(key)");
			assertThatIllegalArgumentException().isThrownBy(() -> leases.lease(5));
			leases.close();
			assertThat(leases.isValid()).isFalse();
			Optional<String> ran = otherInstance(context).tryExecuteLocked("transfer", 3,
					LockOptions.defaults().waitTime(Duration.ZERO), () -> "free");
			assertThat(ran).contains("free");
		});
	}

	@Test
	void keyAndKeysTogetherFailAtStartupNamingTheFix() {
		assertStartupFailure(BothKeyAndKeys.class, "has both key and keys", "keys = {\"#from\", ...}");
	}

	@Test
	void keysOnAReactiveMethodFailAtStartup() {
		assertStartupFailure(ReactiveKeys.class, "uses keys", "LockTemplate.acquireAll");
	}

	@Test
	void anEmptyKeysExpressionFailsAtStartup() {
		assertStartupFailure(EmptyKeysExpression.class, "an empty expression in keys", "keys = {\"#from.id\"");
	}

	@Test
	void aKeysExpressionNamingNoParameterOrHoldingAPlaceholderFailsAtStartup() {
		assertStartupFailure(UnknownVariableInKeys.class, "refers to #nope", "#p0");
		assertStartupFailure(PlaceholderInKeys.class, "${...} placeholder", "name = \"orders-${tenant}\"");
	}

	/** Another instance of the application on the same backend. */
	private static LockTemplate otherInstance(AssertableApplicationContext context) {
		return new DefaultLockTemplate(context.getBean(RecordingBackend.class), LockSettings.defaults());
	}

	private static void sleepThenClose(Lease lease, long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		lease.close();
	}

	/** The memory backend, recording the acquisitions and releases it grants, by key. */
	static class RecordingBackend extends InMemoryLockBackend {

		final List<String> calls = new CopyOnWriteArrayList<>();

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			AcquireResult result = super.tryAcquire(key, owner, ttl);
			this.calls.add("acquire " + key.substring(key.indexOf(':') + 1));
			return result;
		}

		@Override
		public boolean release(String key, String owner) {
			boolean released = super.release(key, owner);
			this.calls.add("release " + key.substring(key.indexOf(':') + 1));
			return released;
		}

	}

	static class Transfers {

		@DistributedLock(name = "transfer", keys = { "#from", "#to" }, waitTime = "2s")
		public Map<String, Long> transfer(String from, String to) {
			Leases leases = LockContext.requireLeases();
			Map<String, Long> tokens = new TreeMap<>();
			tokens.put(from, leases.fencingToken(from));
			tokens.put(to, leases.fencingToken(to));
			return tokens;
		}

		@DistributedLock(name = "transfer", keys = { "#from", "#to" }, waitTime = "500ms", onLocked = OnLocked.SKIP)
		public String skipping(String from, String to) {
			return "ran";
		}

		@DistributedLock(name = "transfer", keys = { "#from", "#to" }, waitTime = "100ms")
		public String throwing(String from, String to) {
			return "ran";
		}

		@DistributedLock(name = "transfer", keys = { "#from", "#to" }, waitTime = "1s")
		public CompletableFuture<String> later(String from, String to, CompletableFuture<String> work) {
			return work;
		}

		@DistributedLock(name = "batch", keys = { "#first", "#others", "#more" })
		public int all(String first, String[] others, Collection<String> more) {
			return LockContext.requireLeases().leases().size();
		}

		@DistributedLock(name = "batch", keys = "#ids")
		public int none(List<String> ids) {
			return 0;
		}

	}

	static class BothKeyAndKeys {

		@DistributedLock(key = "#from", keys = { "#from", "#to" })
		public void transfer(String from, String to) {
		}

	}

	static class ReactiveKeys {

		@DistributedLock(keys = { "#from", "#to" })
		public Mono<Void> transfer(String from, String to) {
			return Mono.empty();
		}

	}

	static class UnknownVariableInKeys {

		@DistributedLock(keys = { "#from", "#nope" })
		public void transfer(String from, String to) {
		}

	}

	static class PlaceholderInKeys {

		@DistributedLock(keys = { "#from", "'${tenant}' + #to" })
		public void transfer(String from, String to) {
		}

	}

	static class EmptyKeysExpression {

		@DistributedLock(keys = { "#from", " " })
		public void transfer(String from, String to) {
		}

	}

}
