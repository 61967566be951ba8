package dev.holdfast.core;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The local per-key gate: one thread of this process at a time races for a key, in arrival
 * order, and the map of gates holds only keys that threads use.
 */
class RacerGateTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults());

	private final Racer racer = new Racer(this.template, this.backend, new OwnerTokens(), Duration.ofSeconds(1),
			null, null);

	private final ExecutorService threads = Executors.newFixedThreadPool(8);

	@AfterEach
	void close() {
		this.threads.shutdownNow();
		this.template.close();
	}

	@Test
	void oneThreadPerKeyPassesTheGateAndTheLastToLeaveRemovesIt() throws Exception {
		String[] keys = { "a", "b", "c" };
		AtomicInteger[] inside = { new AtomicInteger(), new AtomicInteger(), new AtomicInteger() };
		AtomicInteger overlaps = new AtomicInteger();
		CountDownLatch start = new CountDownLatch(1);
		List<Future<?>> all = new ArrayList<>();
		for (int t = 0; t < 8; t++) {
			int thread = t;
			all.add(this.threads.submit(() -> {
				start.await();
				for (int i = 0; i < 20_000; i++) {
					int k = (thread + i) % keys.length;
					Racer.Gate gate = this.racer.enterGate(keys[k]);
					try {
						if (gate.tryEnter(TimeUnit.SECONDS.toNanos(10))) {
							try {
								if (inside[k].incrementAndGet() > 1) {
									overlaps.incrementAndGet();
								}
								inside[k].decrementAndGet();
							}
							finally {
								gate.exit();
							}
						}
					}
					finally {
						this.racer.leaveGate(keys[k], gate);
					}
				}
				return null;
			}));
		}
		start.countDown();
		for (Future<?> future : all) {
			future.get(60, TimeUnit.SECONDS);
		}
		assertThat(overlaps).hasValue(0);
		assertThat(this.racer.gateCount()).isZero();
	}

	@Test
	void aGateItsLastUserLeftIsReplacedNotJoined() throws Exception {
		Racer.Gate first = this.racer.enterGate("k");
		Racer.Gate second = this.racer.enterGate("k");
		assertThat(second).isSameAs(first);
		this.racer.leaveGate("k", first);
		this.racer.leaveGate("k", second);
		assertThat(this.racer.gateCount()).isZero();
		assertThat(first.join()).isFalse();
		Racer.Gate next = this.racer.enterGate("k");
		assertThat(next).isNotSameAs(first);
		assertThat(next.tryEnter(0)).isTrue();
		assertThat(this.racer.enterGate("k").tryEnter(0)).isFalse();
	}

}
