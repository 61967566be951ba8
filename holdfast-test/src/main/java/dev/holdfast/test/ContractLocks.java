package dev.holdfast.test;

import java.time.Duration;
import java.util.UUID;

import dev.holdfast.LockOptions;

/**
 * What {@link LockBackendContractTests} and {@link ExclusionContractTests} lock: a name of their
 * own per test, and the options of an acquisition that waits.
 */
final class ContractLocks {

	private ContractLocks() {
	}

	static String uniqueName() {
		return "contract-" + UUID.randomUUID();
	}

	/** Waits {@link ExclusionContractTests#FREE_LOCK_WAIT} for a lock that should be free. */
	static LockOptions free() {
		return waitFor(ExclusionContractTests.FREE_LOCK_WAIT);
	}

	static LockOptions waitFor(Duration wait) {
		return LockOptions.defaults().waitTime(wait);
	}

}
