package dev.holdfast.core;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Owner tokens {@code <128 random bits drawn once per template>.<counter>@<instance name>}: unguessable,
 * never reused, and naming the holder's instance for operators ({@link dev.holdfast.spi.InstanceNames}).
 */
final class OwnerTokens {

	private final String instance;

	private final String suffix;

	private final AtomicLong counter = new AtomicLong();

	OwnerTokens(String instanceName) {
		byte[] random = new byte[16];
		new SecureRandom().nextBytes(random);
		this.instance = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
		this.suffix = "@" + instanceName;
	}

	String next() {
		// One concatenation, no intermediate string for the counter.
		return this.instance + '.' + this.counter.incrementAndGet() + this.suffix;
	}

}
