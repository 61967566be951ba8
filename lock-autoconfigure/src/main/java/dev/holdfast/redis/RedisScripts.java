package dev.holdfast.redis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * The Lua scripts of the Redis backend. Keys are wrapped in a hash tag ({@code {<key>}}), so that
 * a lock, its fencing counter and its recorded waiters share a slot on Redis Cluster.
 */
final class RedisScripts {

	// A failed attempt marks the lock as contended in the lock's own value, so the mark lives,
	// is renewed and is deleted with the lock, and needs no key of its own. A waiting attempt
	// (ARGV[3] > 0) also records its owner in the waiters' sorted set KEYS[3], scored with the
	// server time (ms) after which the record is stale. A lock reserved for a waiter (value '*'
	// .. owner, see HAND_ON) is taken only by that owner. An acquisition removes its own record
	// and marks its lock if other waiters remain recorded, so that its release hands the lock on.
	// One integer answers (no array for the client to decode): the fencing token (> 0) when
	// acquired; when held, -1 - the holder's PTTL, or 0 when the holder has no expiry.
	static final RedisScript<Long> ACQUIRE = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local owner = ARGV[1]
			local holder = nil
			local taken = redis.call('SET', KEYS[1], owner, 'NX', 'PX', ARGV[2])
			if not taken then
				holder = redis.call('GET', KEYS[1])
				if holder == '*' .. owner or holder == '*' .. owner .. '*' then
					redis.call('SET', KEYS[1], owner, 'PX', ARGV[2])
					taken = true
				end
			end
			if taken then
				local marked = holder and string.sub(holder, -1) == '*'
				if redis.call('EXISTS', KEYS[3]) == 1 then
					redis.call('ZREM', KEYS[3], owner)
					if redis.call('EXISTS', KEYS[3]) == 1 then marked = true end
				end
				if marked then redis.call('APPEND', KEYS[1], '*') end
				local time = redis.call('TIME')
				local token = tonumber(time[1]) * 1000000 + tonumber(time[2])
				local last = tonumber(redis.call('GET', KEYS[2]))
				if last and last >= token then token = last + 1 end
				if token >= 9007199254740992 then
					redis.call('DEL', KEYS[1])
					return redis.error_reply('fencing counter ' .. KEYS[2] .. ' reached 2^53')
				end
				redis.call('SET', KEYS[2], string.format('%d', token), 'PX', FENCE_TTL_MILLIS)
				return token
			end
			if holder and string.sub(holder, -1) ~= '*' then redis.call('APPEND', KEYS[1], '*') end
			local recordFor = tonumber(ARGV[3])
			if recordFor and recordFor > 0 then
				local time = redis.call('TIME')
				local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
				redis.call('ZADD', KEYS[3], string.format('%d', now + recordFor), owner)
				if redis.call('PTTL', KEYS[3]) < recordFor then
					redis.call('PEXPIRE', KEYS[3], string.format('%d', recordFor))
				end
			end
			local remaining = redis.call('PTTL', KEYS[1])
			if remaining < 0 then return 0 end
			return -1 - remaining
			""".replace("FENCE_TTL_MILLIS", Long.toString(RedisLockBackend.FENCE_TTL_MILLIS)), Long.class);

	// Hands the lock (held or reserved; its value in `holder`) to one recorded waiter. First the
	// releasing process's next local waiter ARGV[4] (if given and not '') is recorded for ARGV[5]
	// ms, as its own attempt would record it. Stale records (score <= Redis TIME in ms) are
	// dropped, one of the others is drawn by TIME's microseconds (no client argument), removed, and
	// the lock set to the reservation '*' .. waiter for a claim window of max(ARGV[3], the
	// record's remaining time), which covers the waiter's next poll; the grant '{key}' .. waiter
	// is published. Answers 3 when the drawn waiter is ARGV[4], else 2. With no waiter recorded
	// (no set at all: one EXISTS, as for a lock contended only by try-once callers),
	// the lock is deleted and, if it was contended, its key (without the braces) is published.
	private static final String HAND_ON = """
			local nextLocal = ARGV[4]
			if nextLocal == '' then nextLocal = nil end
			if not nextLocal and redis.call('EXISTS', KEYS[2]) == 0 then
				redis.call('DEL', KEYS[1])
				if string.sub(holder, -1) == '*' then
					redis.call('PUBLISH', ARGV[2], string.sub(KEYS[1], 2, -2))
				end
				return 1
			end
			local time = redis.call('TIME')
			local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
			if nextLocal then
				local recordFor = tonumber(ARGV[5])
				redis.call('ZADD', KEYS[2], string.format('%d', now + recordFor), nextLocal)
				if redis.call('PTTL', KEYS[2]) < recordFor then
					redis.call('PEXPIRE', KEYS[2], string.format('%d', recordFor))
				end
			end
			redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%d', now))
			local waiting = redis.call('ZCARD', KEYS[2])
			if waiting > 0 then
				local index = tonumber(time[2]) % waiting
				local drawn = redis.call('ZRANGE', KEYS[2], index, index, 'WITHSCORES')
				local window = math.max(tonumber(ARGV[3]), tonumber(drawn[2]) - now)
				redis.call('ZREM', KEYS[2], drawn[1])
				redis.call('SET', KEYS[1], '*' .. drawn[1], 'PX', string.format('%d', window))
				redis.call('PUBLISH', ARGV[2], KEYS[1] .. drawn[1])
				if drawn[1] == nextLocal then return 3 end
				return 2
			end
			redis.call('DEL', KEYS[1])
			if string.sub(holder, -1) == '*' then
				redis.call('PUBLISH', ARGV[2], string.sub(KEYS[1], 2, -2))
			end
			return 1
			""";

	// Owner-checked. An uncontended lock (no '*') has no recorded waiter: see ACQUIRE. A
	// contended one goes to a recorded waiter, or is deleted and announced (HAND_ON).
	// Answers 0 (not held by the owner), 1 (released), 2 (handed to a waiter) or 3 (handed to
	// the releasing process's next waiter ARGV[4]).
	static final RedisScript<Long> RELEASE = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local holder = redis.call('GET', KEYS[1])
			if holder == ARGV[1] then
				redis.call('DEL', KEYS[1])
				return 1
			end
			if holder ~= ARGV[1] .. '*' then return 0 end
			""" + HAND_ON, Long.class);

	// A waiter gives up: its record goes, and a lock reserved for it is handed on (HAND_ON).
	// A lock it took (value owner, not '*' .. owner) is left alone. Answers as RELEASE.
	static final RedisScript<Long> WITHDRAW = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			redis.call('ZREM', KEYS[2], ARGV[1])
			local holder = redis.call('GET', KEYS[1])
			if holder ~= '*' .. ARGV[1] and holder ~= '*' .. ARGV[1] .. '*' then return 0 end
			""" + HAND_ON, Long.class);

	@SuppressWarnings("rawtypes")
	static final RedisScript<List> RENEW = RedisScript.of("""
			local renewed = {}
			for i = 1, #KEYS do
				local holder = redis.call('GET', KEYS[i])
				local owner = ARGV[2 * i - 1]
				if holder == owner or holder == owner .. '*' then
					redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])
					renewed[#renewed + 1] = i
				end
			end
			return renewed
			""", List.class);

	/**
	 * The tick claim, shared with the redlock backend: judged by the server's clock, the record
	 * only moves forward; answers {outcome, server time in ms}.
	 */
	static final RedisScript<List> CLAIM_TICK = RedisScript.of(load("dev/holdfast/lua/claim-tick.lua"), List.class);

	private RedisScripts() {
	}

	private static String load(String path) {
		try {
			return new ClassPathResource(path, RedisScripts.class.getClassLoader())
				.getContentAsString(StandardCharsets.UTF_8);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot read the Lua script " + path, ex);
		}
	}

}
