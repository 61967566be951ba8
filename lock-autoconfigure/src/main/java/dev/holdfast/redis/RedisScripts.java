package dev.holdfast.redis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * The Lua scripts of the Redis backend. Keys are wrapped in a hash tag ({@code {<key>}}), so that
 * a lock and its fencing counter share a slot on Redis Cluster.
 */
final class RedisScripts {

	// A failed attempt marks the lock as contended in the lock's own value, so the mark lives,
	// is renewed and is deleted with the lock, and needs no key of its own.
	// One integer answers (no array for the client to decode): the fencing token (> 0) when
	// acquired; when held, -1 - the holder's PTTL, or 0 when the holder has no expiry.
	static final RedisScript<Long> ACQUIRE = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
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
			local holder = redis.call('GET', KEYS[1])
			if holder and string.sub(holder, -1) ~= '*' then redis.call('APPEND', KEYS[1], '*') end
			local remaining = redis.call('PTTL', KEYS[1])
			if remaining < 0 then return 0 end
			return -1 - remaining
			""".replace("FENCE_TTL_MILLIS", Long.toString(RedisLockBackend.FENCE_TTL_MILLIS)), Long.class);

	// Only a contended lock (see ACQUIRE) publishes its release: no pub/sub traffic otherwise.
	// The message is the lock's key without its hash tag braces.
	static final RedisScript<Long> RELEASE = RedisScript.of("""
			local holder = redis.call('GET', KEYS[1])
			if holder == ARGV[1] then
				redis.call('DEL', KEYS[1])
				return 1
			end
			if holder == ARGV[1] .. '*' then
				redis.call('DEL', KEYS[1])
				redis.call('PUBLISH', ARGV[2], string.sub(KEYS[1], 2, -2))
				return 1
			end
			return 0
			""", Long.class);

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
