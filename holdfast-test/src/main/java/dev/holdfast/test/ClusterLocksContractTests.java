package dev.holdfast.test;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.ClusterLocks.Listing;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

/**
 * The contract of {@link ClusterLocks}, for every backend that implements it: what an operator
 * sees of the locks of every instance, and the forced release. A test class implements this
 * interface and says how to get another client of the same store. Owner tokens are made as the
 * engine makes them, {@code <random>.<counter>@<instance>}.
 */
public interface ClusterLocksContractTests {

	Duration TTL = Duration.ofSeconds(30);

	/** Another client of the backend under test, as another instance of the application would be. */
	LockBackend newClusterClient();

	private static String prefix() {
		return "holdfast:ops-" + UUID.randomUUID().toString().substring(0, 8) + ":";
	}

	private static ClusterLocks locks(LockBackend backend) {
		return (ClusterLocks) backend;
	}

	@Test
	default void listingShowsTheLocksOfEveryInstanceWithHolderTokenAndRemainingTime() {
		String prefix = prefix();
		LockBackend web1 = newClusterClient();
		LockBackend web2 = newClusterClient();
		long first = web1.tryAcquire(prefix + "orders:1", "AAAA.1@web-1:8080", TTL).fencingToken();
		long second = web2.tryAcquire(prefix + "report", "BBBB.7@4242@worker-2", TTL).fencingToken();
		web2.tryAcquire(prefix + "released", "BBBB.8@4242@worker-2", TTL);
		web2.release(prefix + "released", "BBBB.8@4242@worker-2");
		if (web1 instanceof TickClaims ticks) {
			ticks.claimTick(prefix + "job", Instant.now(), Duration.ofDays(1), TTL);
		}
		newClusterClient().tryAcquire("holdfast:other-application:lock", "CCCC.1@elsewhere", TTL);

		Listing listing = locks(newClusterClient()).listLocks(prefix, 100);

		assertThat(listing.complete()).isTrue();
		assertThat(listing.locks()).extracting(BackendLock::key, BackendLock::instance, BackendLock::fencingToken)
			.as("live locks under the prefix, by key: not a released lock, a tick record or another prefix's lock")
			.containsExactly(tuple(prefix + "orders:1", "web-1:8080", first),
					tuple(prefix + "report", "4242@worker-2", second));
		assertThat(listing.locks()).allSatisfy((lock) -> assertThat(lock.remainingMillis()).as("remaining time")
			.isBetween(TTL.toMillis() - 10_000, TTL.toMillis()));
	}

	/** The lookup of one key (the leaders endpoint's): that key's holder only, not a longer key's; null when free. */
	@Test
	default void lookupOfOneKeyNamesItsHolderOnly() {
		String prefix = prefix();
		LockBackend web1 = newClusterClient();
		long token = web1.tryAcquire(prefix + "leader:a", "AAAA.1@web-1", TTL).fencingToken();
		newClusterClient().tryAcquire(prefix + "leader:ab", "BBBB.1@web-2", TTL);
		ClusterLocks other = locks(newClusterClient());

		assertThat(other.lock(prefix + "leader:a")).extracting(BackendLock::key, BackendLock::instance,
				BackendLock::fencingToken).containsExactly(prefix + "leader:a", "web-1", token);
		assertThat(other.lock(prefix + "leader:")).as("a key only other keys start with").isNull();
		web1.release(prefix + "leader:a", "AAAA.1@web-1");
		assertThat(other.lock(prefix + "leader:a")).as("released").isNull();
	}

	@Test
	default void listingIsBoundedAndSaysSo() {
		String prefix = prefix();
		LockBackend holder = newClusterClient();
		for (int i = 0; i < 5; i++) {
			assertThat(holder.tryAcquire(prefix + "lock-" + i, "DDDD." + i + "@web-1", TTL).acquired()).isTrue();
		}
		Listing bounded = locks(newClusterClient()).listLocks(prefix, 3);
		assertThat(bounded.locks()).hasSize(3);
		assertThat(bounded.complete()).isFalse();
		assertThat(locks(newClusterClient()).listLocks(prefix, 5).complete()).isTrue();
	}

	@Test
	default void forcedReleaseFreesTheLockItsHolderCannotRenewAndTheNextHolderGetsALargerToken() {
		String key = prefix() + "stuck";
		LockBackend holder = newClusterClient();
		AcquireResult held = holder.tryAcquire(key, "EEEE.1@web-1", TTL);
		assertThat(held.acquired()).isTrue();
		ClusterLocks operator = locks(newClusterClient());

		assertThat(operator.forceRelease(key, held.fencingToken() + 1)).as("another holder's token").isFalse();
		assertThat(newClusterClient().tryAcquire(key, "FFFF.1@web-2", TTL).acquired()).as("still held").isFalse();
		assertThat(operator.forceRelease(key, held.fencingToken())).isTrue();
		assertThat(operator.forceRelease(key, null)).as("nobody holds it now").isFalse();

		if (holder instanceof LeaseRenewal renewal) {
			assertThat(renewal.renew(List.of(new HeldLock(key, "EEEE.1@web-1", TTL))))
				.as("the released holder's renewal is refused")
				.isEqualTo(Set.of());
		}
		AcquireResult next = newClusterClient().tryAcquire(key, "FFFF.2@web-2", TTL);
		assertThat(next.acquired()).isTrue();
		assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
		assertThat(holder.release(key, "EEEE.1@web-1")).as("the released holder's release").isFalse();
	}

}
