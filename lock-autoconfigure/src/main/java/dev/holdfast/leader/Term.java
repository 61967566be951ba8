package dev.holdfast.leader;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;

import org.jspecify.annotations.Nullable;

import dev.holdfast.LeaderTerm;
import dev.holdfast.Lease;

/**
 * One term: the lease that makes it, until revoked.
 */
final class Term implements LeaderTerm {

	private final String group;

	private final Lease lease;

	private final Instant since;

	/** Completed when the term is revoked. */
	private final CompletableFuture<@Nullable Void> revocation = new CompletableFuture<>();

	Term(String group, Lease lease, Instant since) {
		this.group = group;
		this.lease = lease;
		this.since = since;
	}

	@Override
	public String group() {
		return this.group;
	}

	@Override
	public Instant since() {
		return this.since;
	}

	@Override
	public long fencingToken() {
		return this.lease.fencingToken();
	}

	@Override
	public boolean isValid() {
		return !this.revocation.isDone() && this.lease.isValid();
	}

	Lease lease() {
		return this.lease;
	}

	void revoke() {
		this.revocation.complete(null);
	}

	/** Completes when the term is revoked: what waits for the state after a term already past. */
	CompletableFuture<@Nullable Void> revocation() {
		return this.revocation;
	}

	/**
	 * How long until the lease's validity ends, by the monotonic clock: {@link Lease#expiresAt()}
	 * is that end shown on {@code clock}, read against the same clock now.
	 */
	Duration untilValidityEnd(Clock clock) {
		return Duration.between(clock.instant(), this.lease.expiresAt());
	}

	@Override
	public String toString() {
		return "LeaderTerm[" + this.group + ", token " + fencingToken() + ", since " + this.since + "]";
	}

}
