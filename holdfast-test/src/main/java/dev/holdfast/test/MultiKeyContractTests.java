package dev.holdfast.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.Leases;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockEngine;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.WaitQueue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The contract of locking several keys at once ({@link LockTemplate#acquireAll}), on a backend's
 * single-key leases: two instances make random transfers between a few accounts, each holding
 * both accounts' locks, with no lost update and no call kept waiting until its wait time (which
 * a deadlock would cause). {@link LockBackendContractTests} runs it on every backend.
 */
public interface MultiKeyContractTests {

	/** How long the transfers run in the test: {@code InMemoryContractTests} runs them this long. */
	Duration TRANSFERS_RUN_FOR = Duration.ofSeconds(10);

	/**
	 * How long the transfers run by default: every backend's contract class runs them, some 24 times
	 * per CI run of this project (a contract class took 8-22 s before), so 3 s rather than 10.
	 */
	Duration SUITE_TRANSFERS_RUN_FOR = Duration.ofSeconds(3);

	/** Far above any transfer's wait for its two locks: a call that waits this long was stuck. */
	Duration TRANSFER_WAIT = Duration.ofSeconds(30);

	/** A lock template on a new client of the backend: another instance of the application. */
	LockTemplate anotherInstance();

	/** The executor that runs {@code threads} concurrent callers. */
	ExecutorService callers(int threads);

	/** How long {@link #transfersBetweenTwoInstancesLoseNoUpdateAndNeverDeadlock} runs. */
	default Duration transfersRunFor() {
		return SUITE_TRANSFERS_RUN_FOR;
	}

	@Test
	default void transfersBetweenTwoInstancesLoseNoUpdateAndNeverDeadlock() throws Exception {
		String name = "contract-transfer-" + UUID.randomUUID();
		int accounts = 5;
		int threadsPerInstance = 8;
		// read, then written back later: two transfers of one account at once would lose an update
		Map<String, Long> balances = new ConcurrentHashMap<>();
		Map<String, AtomicLong> expected = new ConcurrentHashMap<>();
		for (int i = 0; i < accounts; i++) {
			balances.put("account-" + i, 0L);
			expected.put("account-" + i, new AtomicLong());
		}
		AtomicInteger transfers = new AtomicInteger();
		AtomicInteger stuck = new AtomicInteger();
		AtomicInteger invalid = new AtomicInteger();
		LockOptions options = LockOptions.defaults().waitTime(TRANSFER_WAIT);
		// made before the clock starts: the first client may start a shared server
		List<LockTemplate> instances = List.of(anotherInstance(), anotherInstance());
		for (LockTemplate template : instances) {
			// Each instance's first calls, also before the clock: a client's first connection is not
			// what this measures (a new Lettuce factory opens its shared connection on its first
			// command, which all 16 callers would wait for: 2.2 s of the 3 s on a busy machine; an
			// application's startup probe opens it, RED-9), nor waiters polling while the release
			// subscription the first waiter opens does not listen yet (Lettuce: the first 0.5-1 s).
			template.tryAcquire(name + "-first-call", "key", options).ifPresent(Lease::close);
			template.tryAcquireAll(name + "-first-call", List.of("key-1", "key-2"), options).ifPresent(Leases::close);
			if (template instanceof LockEngine engine && engine.backend() instanceof ReleaseEvents events
					&& !(events instanceof WaitQueue) && events.announcesReleases()) {
				if (template instanceof DefaultLockTemplate holdfast) {
					// What an application's start does: open the subscription the first waiter would
					// (PostgreSQL's LISTEN too, once its first statement told it can announce).
					holdfast.prepare();
				}
				try {
					await().atMost(Duration.ofSeconds(10)).until(events::isListening);
				}
				catch (ConditionTimeoutException ex) {
					// Best effort: a template of another engine opens it for its first waiter.
				}
			}
		}
		long end = System.nanoTime() + transfersRunFor().toNanos();
		ExecutorService pool = callers(threadsPerInstance * 2);
		List<Future<?>> calls = new ArrayList<>();
		try {
			for (LockTemplate template : instances) {
				for (int t = 0; t < threadsPerInstance; t++) {
					calls.add(pool.submit(() -> {
						ThreadLocalRandom random = ThreadLocalRandom.current();
						while (System.nanoTime() < end) {
							String from = "account-" + random.nextInt(accounts);
							String to = "account-" + random.nextInt(accounts);
							if (from.equals(to)) {
								continue;
							}
							long amount = 1 + random.nextInt(100);
							Optional<Leases> held = template.tryAcquireAll(name, List.of(from, to), options);
							if (held.isEmpty()) {
								stuck.incrementAndGet();
								continue;
							}
							try (Leases leases = held.get()) {
								long fromBalance = balances.get(from);
								long toBalance = balances.get(to);
								Thread.yield();
								balances.put(from, fromBalance - amount);
								balances.put(to, toBalance + amount);
								if (!leases.isValid()) {
									invalid.incrementAndGet();
								}
							}
							expected.get(from).addAndGet(-amount);
							expected.get(to).addAndGet(amount);
							transfers.incrementAndGet();
						}
						return null;
					}));
				}
			}
			for (Future<?> call : calls) {
				call.get(transfersRunFor().plus(TRANSFER_WAIT).toSeconds() + 30, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		System.out.printf("%s: %d transfers in %s, %d stuck at the wait time%n",
				MultiKeyContractTests.class.getSimpleName(), transfers.get(), transfersRunFor(), stuck.get());
		assertThat(stuck).as("transfers that waited %s for their two locks", TRANSFER_WAIT).hasValue(0);
		assertThat(invalid).as("transfers whose leases were no longer valid at their end").hasValue(0);
		assertThat(transfers.get()).as("transfers made").isGreaterThan(0);
		for (Map.Entry<String, AtomicLong> account : expected.entrySet()) {
			assertThat(balances.get(account.getKey())).as("balance of %s after %s transfers (a lost update)",
					account.getKey(), transfers.get())
				.isEqualTo(account.getValue().get());
		}
	}

}
