package dev.holdfast.scan;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link BackendChoice} looks a backend up outside its map's locks (NBK-3 in docs/DESIGN.md).
 */
class BackendChoiceTests {

	@Test
	void aLookupWaitingForALockDoesNotStopTheHolderOfThatLockFromGettingAnotherBackend() throws Exception {
		// Two names in one bin of the map's first table (16 bins), as Spring's lock and a lazy
		// bean's lookup could meet: one thread holds the lock (Spring's singleton lock) and gets
		// "b"; the other's lookup of "a" waits for that lock.
		String[] names = namesInOneBin();
		ReentrantLock singletonLock = new ReentrantLock();
		CountDownLatch lookingUp = new CountDownLatch(1);
		BackendChoice<String> choice = new BackendChoice<>(Set.of(names[0], names[1]), (name) -> {
			if (name.equals(names[0])) {
				lookingUp.countDown();
				singletonLock.lock();
				singletonLock.unlock();
			}
			return "engine of " + name;
		});
		singletonLock.lock();
		CompletableFuture<String> first;
		try {
			first = CompletableFuture.supplyAsync(() -> choice.get(names[0]));
			assertThat(lookingUp.await(10, TimeUnit.SECONDS)).isTrue();
			CompletableFuture<String> second = CompletableFuture.supplyAsync(() -> choice.get(names[1]));
			assertThat(second.get(10, TimeUnit.SECONDS)).as("not stuck behind the other lookup")
				.isEqualTo("engine of " + names[1]);
		}
		finally {
			singletonLock.unlock();
		}
		assertThat(first.get(Duration.ofSeconds(10).toMillis(), TimeUnit.MILLISECONDS))
			.isEqualTo("engine of " + names[0]);
	}

	/** Two backend names whose spread hashes fall in one of 16 bins. */
	private static String[] namesInOneBin() {
		for (int i = 1;; i++) {
			String candidate = "backend-" + i;
			if (bin(candidate) == bin("backend-0")) {
				return new String[] { "backend-0", candidate };
			}
		}
	}

	private static int bin(String key) {
		int h = key.hashCode();
		return (h ^ (h >>> 16)) & 15;
	}

}
