package dev.holdfast.core;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Owner tokens: 128 bits from {@link SecureRandom} drawn once per template, followed by a counter.
 * Every token carries the 128 random bits that make it unguessable and unique to this process,
 * and the counter makes it unique to one acquisition: a token is never reused.
 */
final class OwnerTokens {

	private final String instance;

	private final AtomicLong counter = new AtomicLong();

	OwnerTokens() {
		byte[] random = new byte[16];
		new SecureRandom().nextBytes(random);
		this.instance = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
	}

	String next() {
		// One concatenation, no intermediate string for the counter.
		return this.instance + '.' + this.counter.incrementAndGet();
	}

}
