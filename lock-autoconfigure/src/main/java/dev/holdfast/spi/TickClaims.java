package dev.holdfast.spi;

import java.time.Duration;
import java.time.Instant;

import org.jspecify.annotations.Nullable;

/**
 * A backend that decides which tick of a scheduled job runs, by its own clock, and records the
 * last claimed tick of the job in one entry. Optional: without it, the scheduler claims every tick
 * as a lock of its own, and which tick is due is decided by each instance's clock.
 */
public interface TickClaims {

	/**
	 * Claims {@code tick} of the job whose lock is at {@code key}, in one atomic step, if both:
	 * <ul>
	 * <li>the tick is due by the backend's own clock: {@code |now - tick| <= tolerance};</li>
	 * <li>no claim of that tick or a later one is recorded: the last claimed tick is stored
	 * beside the lock, at a key that no lock can use, and only ever moves forward.</li>
	 * </ul>
	 * A successful claim records the tick, and the record lives {@code ttl} from then; a refused
	 * claim changes nothing. A claim that is not due is refused whatever the record holds. A
	 * claim that the backend recorded but whose answer was lost, and that the client sends again
	 * (a resent request, a retry after reconnecting), is answered {@code CLAIMED}: the record
	 * tells a claim's own write from another claim's of the same tick.
	 * @param key the job's lock key
	 * @param tick the nominal fire time of the tick, in milliseconds
	 * @param tolerance how far from the tick the backend's clock may be
	 * @param ttl how long the record of a successful claim lives, longer than {@code 2 × tolerance}
	 * @return the outcome, with the backend's time when it decided; for one tick, at most one call
	 * in the cluster is {@link TickClaim.Outcome#CLAIMED}
	 * @throws dev.holdfast.LockBackendException when the backend cannot be reached; the claim may
	 * or may not have been recorded then
	 */
	TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl);

	/**
	 * The last tick claimed for the job whose lock is at {@code key}, as its live record holds it,
	 * for operators; {@code null} when no record lives, or when the backend does not read it (the
	 * default).
	 * @throws dev.holdfast.LockBackendException when the backend cannot be reached
	 */
	default @Nullable Instant lastClaimedTick(String key) {
		return null;
	}

	/**
	 * The answer to a claim.
	 *
	 * @param outcome what the backend decided
	 * @param backendTime the backend's clock when it decided, to the millisecond (for Redlock, the
	 * median of the nodes that answered)
	 */
	record TickClaim(Outcome outcome, Instant backendTime) {

		/** What the backend decided about a claim. */
		public enum Outcome {

			/** The tick was due and not claimed before: the caller runs it. */
			CLAIMED,

			/** The tick was due but this tick or a later one was already claimed. */
			TAKEN,

			/** By the backend's clock the tick is not due: too early or too late. */
			NOT_DUE,

			/**
			 * Redlock only: this claim won some nodes but no quorum, because claims of the same
			 * tick split the nodes; the tick ran elsewhere if another claim won a quorum, else nowhere.
			 */
			NO_QUORUM

		}

	}

}
