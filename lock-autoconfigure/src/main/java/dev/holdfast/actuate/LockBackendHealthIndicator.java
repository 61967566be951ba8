package dev.holdfast.actuate;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.LockBackend;

/**
 * Health of the lock backend: UP when it can serve locks, DOWN when it cannot be reached or
 * cannot serve them (Redlock below quorum), UNKNOWN when the backend cannot check itself (it
 * does not implement {@link BackendHealth}). Details: the backend name, how many leases this
 * instance holds, and what the backend reports.
 */
public class LockBackendHealthIndicator extends AbstractHealthIndicator {

	private final DefaultLockTemplate template;

	/**
	 * Checks the backend of {@code template}.
	 */
	public LockBackendHealthIndicator(DefaultLockTemplate template) {
		super("Holdfast lock backend health check failed");
		this.template = template;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		LockBackend backend = this.template.backend();
		builder.withDetail("backend", backend.name()).withDetail("held", this.template.heldLeases().size());
		if (!(backend instanceof BackendHealth health)) {
			builder.unknown();
			return;
		}
		BackendHealth.Check check = health.checkHealth();
		builder.withDetails(check.details());
		if (check.up()) {
			builder.up();
		}
		else {
			builder.down();
		}
	}

}
