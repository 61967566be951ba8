package dev.holdfast.scheduling;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;

import dev.holdfast.LockListener;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.EngineLease;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@link JobLocks#keepFor} on a backend that cannot set a lock's time to live: the lock is
 * released later from the scheduler, unless its time to live ends first. A release after it would
 * report the lease lost (the engine reports a lease that is no longer valid at its release, F3),
 * although no run holds it any more.
 */
class JobLocksKeepTests {

	private final AtomicInteger lost = new AtomicInteger();

	private final DefaultLockTemplate template = new DefaultLockTemplate(
			new LocksOnlyBackend(new InMemoryLockBackend()), LockSettings.defaults(), new LockListener() {

				@Override
				public void leaseLost(String name, String backend) {
					JobLocksKeepTests.this.lost.incrementAndGet();
				}

			});

	private final ThreadPoolTaskScheduler scheduler = new ThreadPoolTaskScheduler();

	private final JobLocks locks;

	JobLocksKeepTests() {
		this.scheduler.initialize();
		this.locks = new JobLocks(this.template, LockListener.NONE, this.scheduler, new TickClock(),
				Duration.ofSeconds(1));
	}

	@AfterEach
	void close() {
		this.scheduler.destroy();
		this.template.close();
	}

	@Test
	void keepingALockBeyondItsTimeToLiveLetsItExpireUnreported() {
		EngineLease lease = this.locks.tryAcquire("job", null, Duration.ofMillis(300));
		assertThat(lease).isNotNull();
		assertThat(this.locks.keepFor(lease, Duration.ofMillis(600), null)).isTrue();
		await().atMost(Duration.ofSeconds(5)).until(this::free);
		// Past the end of the keep, when a release sent from the scheduler would have come.
		await().during(Duration.ofMillis(700)).atMost(Duration.ofSeconds(2)).until(() -> this.lost.get() == 0);
	}

	@Test
	void aLockKeptWithinItsTimeToLiveIsReleasedWhenTheKeepEnds() {
		EngineLease lease = this.locks.tryAcquire("job", null, Duration.ofSeconds(5));
		assertThat(lease).isNotNull();
		assertThat(this.locks.keepFor(lease, Duration.ofMillis(300), null)).isTrue();
		assertThat(free()).as("free while kept").isFalse();
		await().atMost(Duration.ofSeconds(3)).until(this::free);
		assertThat(this.lost).hasValue(0);
	}

	private boolean free() {
		EngineLease other = this.locks.tryAcquire("job", null, Duration.ofSeconds(5));
		if (other == null) {
			return false;
		}
		other.close();
		return true;
	}

}
