package dev.holdfast.actuate;

import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;

/**
 * What Holdfast knows about one lock when it observes an acquisition
 * ({@value LockMetricsListener#ACQUIRE}) or a hold ({@value LockMetricsListener#HELD}). Holdfast
 * records the name, backend, outcome and fencing token; the backend {@link #getKey() key} is
 * here for an {@link io.micrometer.observation.ObservationFilter} or convention of the
 * application's own, because keys can contain user data and are left out by default.
 */
public class LockObservationContext extends Observation.Context {

	private final String lockName;

	private final String key;

	private final String backend;

	private @Nullable Long fencingToken;

	public LockObservationContext(String lockName, String key, String backend) {
		this.lockName = lockName;
		this.key = key;
		this.backend = backend;
	}

	/** The lock name, without its key. */
	public String getLockName() {
		return this.lockName;
	}

	/** The backend key, {@code <prefix><name>[:<encoded key>]}; can contain user data. */
	public String getKey() {
		return this.key;
	}

	/** The backend's name: {@code redis}, {@code redlock}, {@code jdbc} or {@code memory}. */
	public String getBackend() {
		return this.backend;
	}

	/** The fencing token of the lease, once acquired. */
	public @Nullable Long getFencingToken() {
		return this.fencingToken;
	}

	void setFencingToken(long fencingToken) {
		this.fencingToken = fencingToken;
	}

}
