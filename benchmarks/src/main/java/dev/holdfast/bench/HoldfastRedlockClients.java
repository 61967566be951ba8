package dev.holdfast.bench;

import java.time.Duration;
import java.util.List;

import dev.holdfast.redlock.RedlockLockBackend;
import dev.holdfast.redlock.RedlockSettings;

/**
 * Holdfast on its Redlock backend through {@code LockTemplate}, built as the auto-configuration
 * builds it ({@link RedlockLockBackend#connect}: one Redisson client per node on one shared small
 * event loop, and one pipelined script connection per node).
 */
final class HoldfastRedlockClients {

	private HoldfastRedlockClients() {
	}

	static LockClient create(List<Integer> ports) {
		// A 1 s node timeout instead of the default 200 ms: this 2-core machine runs other builds
		// at the same time, and a request that misses the timeout fails the attempt.
		RedlockSettings defaults = RedlockSettings.defaults();
		RedlockLockBackend backend = RedlockLockBackend.connect(
				ports.stream().map((port) -> "redis://127.0.0.1:" + port).toList(), null, null, Duration.ofSeconds(10),
				new RedlockSettings(Duration.ofSeconds(1), defaults.driftFactor(), defaults.minDrift()));
		return HoldfastClients.templateClient(HoldfastClients.template(backend), backend::close);
	}

}
