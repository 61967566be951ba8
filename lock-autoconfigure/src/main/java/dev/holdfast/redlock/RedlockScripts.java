package dev.holdfast.redlock;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;

import org.springframework.core.io.ClassPathResource;

/**
 * The Lua scripts that the Redlock backend runs on each node, and how their replies read.
 */
final class RedlockScripts {

	// KEYS: lock, counter. ARGV: owner, ttl ms, counter retention ms.
	// Returns {1, candidate token} when granted, {0, pttl of the holder} when held.
	static final String ACQUIRE_TEXT = """
			local holder = redis.call('get', KEYS[1])
			if holder and holder ~= ARGV[1] then
				return {0, redis.call('pttl', KEYS[1])}
			end
			redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
			local now = redis.call('time')
			local floor = tonumber(now[1]) * 1000000 + math.floor(tonumber(now[2]) / 1000) * 1000
			local token = math.max((tonumber(redis.call('get', KEYS[2])) or 0) + 1, floor)
			redis.call('set', KEYS[2], string.format('%.0f', token), 'px', ARGV[3])
			return {1, token}
			""";

	// KEYS: lock, counter. ARGV: owner, token, counter retention ms. Raises the counter to the
	// token only while the owner still holds the lock on this node.
	static final String FENCE_TEXT = """
			if redis.call('get', KEYS[1]) ~= ARGV[1] then
				return 0
			end
			local current = tonumber(redis.call('get', KEYS[2])) or 0
			if tonumber(ARGV[2]) > current then
				redis.call('set', KEYS[2], ARGV[2], 'px', ARGV[3])
			end
			return 1
			""";

	// KEYS: lock. ARGV: owner, channel.
	static final String RELEASE_TEXT = """
			if redis.call('get', KEYS[1]) == ARGV[1] then
				redis.call('del', KEYS[1])
				redis.call('publish', ARGV[2], KEYS[1] .. ' ' .. ARGV[1])
				return 1
			end
			return 0
			""";

	// KEYS: lock 1..n. ARGV: owner 1, ttl ms 1, ..., owner n, ttl ms n.
	static final String RENEW_TEXT = """
			local renewed = {}
			for i, key in ipairs(KEYS) do
				if redis.call('get', key) == ARGV[2 * i - 1] then
					redis.call('pexpire', key, ARGV[2 * i])
					renewed[i] = 1
				else
					renewed[i] = 0
				end
			end
			return renewed
			""";

	/**
	 * The tick claim, shared with the redis backend: judged by the node's clock, the record only
	 * moves forward; answers {outcome, node time in ms}.
	 */
	static final String CLAIM_TICK_TEXT = load("dev/holdfast/lua/claim-tick.lua");

	static final Script<List<Object>> ACQUIRE = Script.list(ACQUIRE_TEXT);

	static final Script<Long> FENCE = Script.number(FENCE_TEXT);

	static final Script<Long> RELEASE = Script.number(RELEASE_TEXT);

	static final Script<List<Object>> RENEW = Script.list(RENEW_TEXT);

	static final Script<List<Object>> CLAIM_TICK = Script.list(CLAIM_TICK_TEXT);

	/** Every script, loaded on each connection before its first request. */
	static final List<Script<?>> ALL = List.of(ACQUIRE, FENCE, RELEASE, RENEW, CLAIM_TICK);

	private RedlockScripts() {
	}

	/**
	 * A script and its SHA-1 digest for {@code EVALSHA}; {@code R} is what its reply reads as: a
	 * list of numbers or a number.
	 */
	record Script<R>(byte[] text, byte[] sha) {

		static Script<List<Object>> list(String text) {
			return new Script<>(bytes(text), bytes(sha1(text)));
		}

		static Script<Long> number(String text) {
			return new Script<>(bytes(text), bytes(sha1(text)));
		}

		private static String sha1(String text) {
			try {
				return HexFormat.of()
					.formatHex(MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8)));
			}
			catch (NoSuchAlgorithmException ex) {
				throw new IllegalStateException("SHA-1 is not available", ex);
			}
		}

	}

	/**
	 * A script argument as UTF-8 bytes: arguments shared by the requests of a round are encoded
	 * once, here, and copied as they are into each node's buffer.
	 */
	static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

	/** A number argument as bytes (see {@link #bytes(String)}). */
	static byte[] bytes(long number) {
		return bytes(Long.toString(number));
	}

	/** Whether an acquire reply granted the lock. */
	static boolean isGranted(Object reply) {
		return reply instanceof List<?> list && list.size() == 2 && list.get(0) instanceof Number flag
				&& flag.longValue() == 1;
	}

	/** The candidate token of a granted acquire reply, or the holder's remaining time otherwise. */
	static long tokenOf(Object reply) {
		return ((Number) ((List<?>) reply).get(1)).longValue();
	}

	/** The outcome of a tick claim reply: 1 claimed, 0 taken, 2 not due, -1 not a claim reply. */
	static int claimOutcome(Object reply) {
		return (reply instanceof List<?> list && list.size() == 2 && list.get(0) instanceof Number outcome)
				? outcome.intValue() : -1;
	}

	/** The median of the node times in the tick claim replies of {@code round}. */
	static long medianClaimTime(Round round) {
		List<Long> times = new ArrayList<>();
		for (int n = 0; n < round.size(); n++) {
			if (round.result(n) instanceof List<?> reply && reply.size() == 2 && reply.get(1) instanceof Number time) {
				times.add(time.longValue());
			}
		}
		Collections.sort(times);
		return times.get(times.size() / 2);
	}

	/** Whether a reply is the number 1. */
	static boolean isOne(Object reply) {
		return reply instanceof Number number && number.longValue() == 1;
	}

	/** For each of {@code lockCount} locks, the number of nodes whose renew reply renewed it. */
	static int[] renewedCounts(Round round, int lockCount) {
		int[] counts = new int[lockCount];
		for (int n = 0; n < round.size(); n++) {
			if (round.result(n) instanceof List<?> reply) {
				for (int i = 0; i < lockCount && i < reply.size(); i++) {
					if (reply.get(i) instanceof Number number && number.longValue() == 1) {
						counts[i]++;
					}
				}
			}
		}
		return counts;
	}

	private static String load(String path) {
		try {
			return new ClassPathResource(path, RedlockScripts.class.getClassLoader())
				.getContentAsString(StandardCharsets.UTF_8);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot read the Lua script " + path, ex);
		}
	}

}
