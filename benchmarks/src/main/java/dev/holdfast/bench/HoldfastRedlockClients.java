package dev.holdfast.bench;

import java.time.Duration;
import java.util.List;

import org.redisson.api.RedissonClient;

import dev.holdfast.redlock.RedlockLockBackend;
import dev.holdfast.redlock.RedlockSettings;

/** Holdfast on its Redlock backend (one Redisson client per node), through {@code LockTemplate}. */
final class HoldfastRedlockClients {

	private HoldfastRedlockClients() {
	}

	static LockClient create(List<RedissonClient> clients) {
		// A 1 s node timeout instead of the default 200 ms: this 2-core machine runs other builds
		// at the same time, and a request that misses the timeout fails the attempt.
		RedlockSettings defaults = RedlockSettings.defaults();
		RedlockLockBackend backend = new RedlockLockBackend(clients,
				new RedlockSettings(Duration.ofSeconds(1), defaults.driftFactor(), defaults.minDrift()));
		return HoldfastClients.templateClient(HoldfastClients.template(backend),
				() -> clients.forEach(RedissonClient::shutdown));
	}

}
