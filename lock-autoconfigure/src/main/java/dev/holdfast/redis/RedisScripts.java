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

	// Takes the fencing token of a new holder into `token`: max(Redis TIME in microseconds, the
	// counter `fence` + 1), kept below 2^53 (Lua numbers are doubles). The one text of ACQUIRE
	// and HAND_ON, so that an acquisition and a handoff take tokens by the same rule.
	private static final String TAKE_TOKEN = """
			local tokenTime = redis.call('TIME')
			token = tonumber(tokenTime[1]) * 1000000 + tonumber(tokenTime[2])
			local last = tonumber(redis.call('GET', fence))
			if last and last >= token then token = last + 1 end
			if token >= 9007199254740992 then
				redis.call('DEL', KEYS[1])
				return redis.error_reply('fencing counter ' .. fence .. ' reached 2^53')
			end
			redis.call('SET', fence, string.format('%d', token), 'PX', FENCE_TTL_MILLIS)
			""".replace("FENCE_TTL_MILLIS", Long.toString(RedisLockBackend.FENCE_TTL_MILLIS));

	// A failed attempt marks the lock as contended in the lock's own value, so the mark lives,
	// is renewed and is deleted with the lock, and needs no key of its own. A waiting attempt
	// (ARGV[3] > 0) also records itself in the waiters' sorted set KEYS[3] as owner .. '|' .. ttl
	// (what a release needs to make it the holder), scored with the server time (ms) after which
	// the record is stale. A waiting attempt finds a lock that a release handed to its owner
	// (value owner or owner .. '*': a grant it has not heard yet) already its lock: it renews it
	// to ARGV[2] and answers the counter's value, the token that release took for it (only holders
	// take tokens). A try-once attempt (ARGV[3] = 0) is never recorded, so no release hands it a
	// lock; it finds the lock held by its own owner only when it is the same request run a second
	// time (Lettuce writes a command again after reconnecting when the first run's answer was
	// lost; owner tokens are unique per acquisition and never reused), and answers as that first
	// run did: the lock renewed to ARGV[2] (never shorter than the caller counts its lease, which
	// starts before the first run) and the counter's value, the token the first run took, never a
	// new one. Before, it answered "held" with its own owner as holder: the caller was told "not
	// acquired" and the lock stayed held by nobody for its lease. With ARGV[4] (any value:
	// a backend with replicas-to-ack) the record is the bare owner, the earlier version's format:
	// a release then only reserves the lock for it, and its next ACQUIRE (acknowledged by the
	// replicas) claims it, so no lock is handed over without that acknowledgement.
	// A lock reserved for a waiter of an earlier version (value '*' .. owner) is taken only by
	// that owner. An acquisition removes its own record and marks its lock if other waiters remain
	// recorded, so that its release hands the lock on.
	// One integer answers (no array for the client to decode): the fencing token (> 0) when
	// acquired; when held, -1 - the holder's PTTL, or 0 when the holder has no expiry.
	static final RedisScript<Long> ACQUIRE = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local owner = ARGV[1]
			local fence = KEYS[2]
			local recordFor = tonumber(ARGV[3])
			local record = owner .. '|' .. ARGV[2]
			if ARGV[4] then record = owner end
			local holder = nil
			local token = nil
			local taken = redis.call('SET', KEYS[1], owner, 'NX', 'PX', ARGV[2])
			if not taken then
				holder = redis.call('GET', KEYS[1])
				if holder == owner or holder == owner .. '*' then
					redis.call('PEXPIRE', KEYS[1], ARGV[2])
					token = tonumber(redis.call('GET', fence))
					taken = true
				elseif holder == '*' .. owner or holder == '*' .. owner .. '*' then
					redis.call('SET', KEYS[1], owner, 'PX', ARGV[2])
					taken = true
				end
			end
			if taken then
				local marked = holder and string.sub(holder, -1) == '*'
				if redis.call('EXISTS', KEYS[3]) == 1 then
					redis.call('ZREM', KEYS[3], record)
					if redis.call('EXISTS', KEYS[3]) == 1 then marked = true end
				end
				if marked and holder ~= owner .. '*' then redis.call('APPEND', KEYS[1], '*') end
				if token then return token end
			""" + TAKE_TOKEN + """
				return token
			end
			if holder and string.sub(holder, -1) ~= '*' then redis.call('APPEND', KEYS[1], '*') end
			if recordFor > 0 then
				local time = redis.call('TIME')
				local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
				redis.call('ZADD', KEYS[3], string.format('%d', now + recordFor), record)
				if redis.call('PTTL', KEYS[3]) < recordFor then
					redis.call('PEXPIRE', KEYS[3], string.format('%d', recordFor))
				end
			end
			local remaining = redis.call('PTTL', KEYS[1])
			if remaining < 0 then return 0 end
			return -1 - remaining
			""", Long.class);

	// Hands the lock (its value in `holder`) to one recorded waiter. First the releasing
	// process's next local waiter ARGV[4] (if given and not '': its record, owner .. '|' .. ttl)
	// is recorded for ARGV[5] ms, as its own attempt would record it. Stale records (score <=
	// Redis TIME in ms) are dropped, one of the others is drawn by TIME's microseconds (no client
	// argument) and removed, and the waiter made the holder as if its ACQUIRE had taken the lock:
	// the lock set to its owner (marked '*' while other records remain) with PX = its ttl, a
	// fencing token taken by the rule of ACQUIRE (TAKE_TOKEN; the counter is KEYS[1] .. ':fence',
	// in the lock's hash slot), and the grant '{key}' .. owner .. '#' .. token published. Answers
	// -token when the drawn waiter is ARGV[4], without publishing: the releasing process
	// dispatches that grant from the answer, and every other subscriber would only wake to ignore
	// it; else 2. A record of an earlier version or of replicas-to-ack (no '|') is reserved for its next
	// ACQUIRE as that version expects: the lock set to '*' .. owner for max(ARGV[3], the record's
	// remaining time) and the grant '{key}' .. owner published. With no waiter recorded (no set
	// at all: one EXISTS, as for a lock contended only by try-once callers), the lock is deleted
	// and, if it was contended, its key (without the braces) is published; answers 1.
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
				redis.call('ZREM', KEYS[2], drawn[1])
				local waiter, ttl = string.match(drawn[1], '^(.*)|(%d+)$')
				if waiter then
					local value = waiter
					if waiting > 1 then value = waiter .. '*' end
					redis.call('SET', KEYS[1], value, 'PX', ttl)
					local fence = KEYS[1] .. ':fence'
					local token = nil
			""" + TAKE_TOKEN + """
					if drawn[1] == nextLocal then return -token end
					redis.call('PUBLISH', ARGV[2], KEYS[1] .. waiter .. '#' .. string.format('%d', token))
					return 2
				end
				local window = math.max(tonumber(ARGV[3]), tonumber(drawn[2]) - now)
				redis.call('SET', KEYS[1], '*' .. drawn[1], 'PX', string.format('%d', window))
				redis.call('PUBLISH', ARGV[2], KEYS[1] .. drawn[1])
				return 2
			end
			redis.call('DEL', KEYS[1])
			if string.sub(holder, -1) == '*' then
				redis.call('PUBLISH', ARGV[2], string.sub(KEYS[1], 2, -2))
			end
			return 1
			""";

	// Owner-checked. An uncontended lock (no '*') has no recorded waiter (see ACQUIRE): it is
	// deleted, unless the releasing process names its next waiter (ARGV[4]), which then gets it
	// (HAND_ON: recorded and drawn like any record). A contended one goes to a recorded waiter,
	// or is deleted and announced (HAND_ON).
	// Answers 0 (not held by the owner), 1 (released), 2 (handed to a waiter) or -token (handed
	// to the releasing process's next waiter ARGV[4], which holds it under that fencing token).
	static final RedisScript<Long> RELEASE = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local holder = redis.call('GET', KEYS[1])
			if holder == ARGV[1] then
				if ARGV[4] == '' then
					redis.call('DEL', KEYS[1])
					return 1
				end
			elseif holder ~= ARGV[1] .. '*' then
				return 0
			end
			""" + HAND_ON, Long.class);

	// A waiter gives up: its records go, and a lock held by it (handed to it by a release whose
	// grant it did not use) or reserved for it (earlier version) is handed on (HAND_ON). The
	// client sends it only for an owner whose acquisition ended without the lock and never will
	// take it (owner tokens are never reused), so it never takes a lock from a holder in use.
	// Answers as RELEASE.
	static final RedisScript<Long> WITHDRAW = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local owner = ARGV[1]
			if redis.call('EXISTS', KEYS[2]) == 1 then
				local prefix = owner .. '|'
				for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
					if member == owner or string.sub(member, 1, #prefix) == prefix then
						redis.call('ZREM', KEYS[2], member)
					end
				end
			end
			local holder = redis.call('GET', KEYS[1])
			if holder ~= owner and holder ~= owner .. '*' and holder ~= '*' .. owner
					and holder ~= '*' .. owner .. '*' then
				return 0
			end
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
