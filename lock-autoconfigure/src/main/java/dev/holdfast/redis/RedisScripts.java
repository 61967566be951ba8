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

	// Takes the fencing token of a new holder of `lock` into `token`: max(Redis TIME in
	// microseconds, the counter `fence` + 1), kept below 2^53 (Lua numbers are doubles).
	private static final String TAKE_TOKEN = """
			local tokenTime = redis.call('TIME')
			token = tonumber(tokenTime[1]) * 1000000 + tonumber(tokenTime[2])
			local last = tonumber(redis.call('GET', fence))
			if last and last >= token then token = last + 1 end
			if token >= 9007199254740992 then
				redis.call('DEL', lock)
				return redis.error_reply('fencing counter ' .. fence .. ' reached 2^53')
			end
			redis.call('SET', fence, string.format('%d', token), 'PX', FENCE_TTL_MILLIS)
			""".replace("FENCE_TTL_MILLIS", Long.toString(RedisLockBackend.FENCE_TTL_MILLIS));

	// Takes lock i of ACQUIRE_ALL's keys and arguments into `token`: its owner's hold kept (a
	// resend: expiry reset, the counter's token), else set with a new token (TAKE_TOKEN).
	private static final String TAKE_ITH = """
			local lock = KEYS[2 * i - 1]
			local fence = KEYS[2 * i]
			local token = nil
			if redis.call('GET', lock) == ARGV[2 * i - 1] then
				redis.call('PEXPIRE', lock, ARGV[2 * i])
				token = tonumber(redis.call('GET', fence))
			else
				redis.call('SET', lock, ARGV[2 * i - 1], 'PX', ARGV[2 * i])
			""" + TAKE_TOKEN + """
			end
			""";

	// Keys: the lock {key}, its fencing counter {key}:fence, its waiters {key}:waiters (a sorted
	// set of owners, each scored with the server time in ms after which its record is stale).
	// The lock's value is its holder's owner, or '*' .. owner while a release reserves it for that
	// recorded waiter (owners never start with '*').
	//
	// ACQUIRE takes the lock when it is free or reserved for ARGV[1], with a new fencing token.
	// A waiting attempt (ARGV[3] = record duration in ms, > 0) removes its own record when it
	// takes the lock, and records itself when refused; a try-once attempt (ARGV[3] = 0) is never
	// recorded, so no release reserves a lock for it. A lock already held by ARGV[1] is the same
	// request run a second time (Lettuce writes a command again after reconnecting when the first
	// run's answer was lost; owner tokens are never reused): it answers as that first run did, the
	// lock's expiry reset to ARGV[2] and the counter's value, the token the first run took.
	// Answers one integer: the fencing token (> 0) when acquired; when refused, -1 - the lock's
	// PTTL, or 0 when it has no expiry.
	static final RedisScript<Long> ACQUIRE = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local owner = ARGV[1]
			local lock = KEYS[1]
			local fence = KEYS[2]
			local recordFor = tonumber(ARGV[3])
			local holder = redis.call('GET', KEYS[1])
			if holder == owner then
				redis.call('PEXPIRE', KEYS[1], ARGV[2])
				return tonumber(redis.call('GET', fence))
			end
			if not holder or holder == '*' .. owner then
				redis.call('SET', KEYS[1], owner, 'PX', ARGV[2])
				if recordFor > 0 then redis.call('ZREM', KEYS[3], owner) end
				local token = nil
			""" + TAKE_TOKEN + """
				return token
			end
			if recordFor > 0 then
				local time = redis.call('TIME')
				local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
				redis.call('ZADD', KEYS[3], string.format('%d', now + recordFor), owner)
				if redis.call('PTTL', KEYS[3]) < recordFor then redis.call('PEXPIRE', KEYS[3], ARGV[3]) end
			end
			local remaining = redis.call('PTTL', KEYS[1])
			if remaining < 0 then return 0 end
			return -1 - remaining
			""", Long.class);

	// Several locks, all or none (MKY-6). Keys: per lock i, {key} at 2i - 1 and {key}:fence at 2i;
	// ARGV: its owner at 2i - 1, its ttl in ms at 2i. Each lock is a try-once ACQUIRE: taken if
	// absent (a reserved one is another owner's), never recorded. A lock already held by its own
	// owner is this request run again (a resend): it keeps its token, as ACQUIRE answers. Any lock
	// held otherwise refuses them all: the locks its owners hold (from a first run whose answer was
	// lost) are deleted, and the answer is empty. A fencing counter at 2^53 - 1 of a lock to take
	// is an error reply; every refusal and error is found before the first write (no partial take).
	// Else answers the tokens, in order.
	@SuppressWarnings("rawtypes")
	static final RedisScript<List> ACQUIRE_ALL = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local count = #KEYS / 2
			for i = 1, count do
				local holder = redis.call('GET', KEYS[2 * i - 1])
				if holder and holder ~= ARGV[2 * i - 1] then
					for j = 1, count do
						if redis.call('GET', KEYS[2 * j - 1]) == ARGV[2 * j - 1] then redis.call('DEL', KEYS[2 * j - 1]) end
					end
					return {}
				end
				local last = tonumber(redis.call('GET', KEYS[2 * i]))
				if not holder and last and last + 1 >= 9007199254740992 then
					return redis.error_reply('fencing counter ' .. KEYS[2 * i] .. ' reached 2^53')
				end
			end
			local tokens = {}
			for i = 1, count do
			""" + TAKE_ITH + """
				tokens[i] = token
			end
			return tokens
			""", List.class);

	// The first free of several locks (SEM-7). Keys and ARGV as ACQUIRE_ALL's. A lock held by its
	// own owner is this request run again (a resend): it answers as that first run did (expiry
	// reset, its token), and takes no other. Else the first absent lock is taken as ACQUIRE_ALL
	// takes one (a reserved one is another owner's; no waiter recorded; a fencing counter at its
	// limit an error reply, the lock deleted again). Answers {index from 1, token}, or {} when
	// each lock is held.
	@SuppressWarnings("rawtypes")
	static final RedisScript<List> ACQUIRE_FIRST = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local i = nil
			for j = 1, #KEYS / 2 do
				local holder = redis.call('GET', KEYS[2 * j - 1])
				if holder == ARGV[2 * j - 1] then
					i = j
					break
				end
				if not holder and not i then i = j end
			end
			if not i then return {} end
			""" + TAKE_ITH + """
			return {i, token}
			""", List.class);

	// The end of RELEASE and WITHDRAW: frees the lock, or reserves it for one recorded waiter.
	// Keys: {key}, {key}:waiters, {key}:readwait, {key}:readers, {key}:fence.
	// ARGV[2] is the channel, ARGV[3] the reservation window in ms, also how long ARGV[4] (the
	// releasing process's next waiter, or '') is recorded at least before the draw: it may not
	// have attempted yet. A longer record of its own attempt is kept: cut to the window, a waiter
	// not drawn could be stale at the next release, which would free the lock unannounced while
	// it sleeps. Stale records (score <= Redis TIME in ms) are dropped; one of the others is
	// drawn by TIME's microseconds (no client argument), removed, and the lock set to
	// '*' .. waiter for the window; the reservation '{key}' .. waiter is published. With no live
	// record the lock is deleted and nothing is published, unless a reader waits (a live
	// {key}:readwait record) or the key is a permit slot's ('#' and one or two digits at its end,
	// not the check slot '#-1', nor a shortened key's hash: SEM-8): then the plain release '{key}'
	// is published (RWL-24).
	private static final String HAND_ON = """
			local nextLocal = ARGV[4]
			local slot = string.find(KEYS[1], '#%d%d?}$')
			if nextLocal == '' and redis.call('EXISTS', KEYS[2], KEYS[3]) == 0 then
				redis.call('DEL', KEYS[1])
				if slot then redis.call('PUBLISH', ARGV[2], KEYS[1]) end
				return 1
			end
			local time = redis.call('TIME')
			local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
			local window = tonumber(ARGV[3])
			if nextLocal ~= '' then
				local recorded = redis.call('ZSCORE', KEYS[2], nextLocal)
				if not recorded or tonumber(recorded) < now + window then
					redis.call('ZADD', KEYS[2], string.format('%d', now + window), nextLocal)
				end
				if redis.call('PTTL', KEYS[2]) < window then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
			end
			redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%d', now))
			local waiting = redis.call('ZCARD', KEYS[2])
			if waiting == 0 then
				redis.call('DEL', KEYS[1])
				if slot or redis.call('ZCOUNT', KEYS[3], string.format('(%d', now), '+inf') > 0 then
					redis.call('PUBLISH', ARGV[2], KEYS[1])
				end
				return 1
			end
			local index = tonumber(time[2]) % waiting
			local drawn = redis.call('ZRANGE', KEYS[2], index, index)[1]
			redis.call('ZREM', KEYS[2], drawn)
			redis.call('SET', KEYS[1], '*' .. drawn, 'PX', ARGV[3])
			redis.call('PUBLISH', ARGV[2], KEYS[1] .. drawn)
			return 1
			""";

	// A reader leaves a read-held lock (RWL-23): its entry '<generation>:<owner>' in {key}:readers
	// (the generation is the fence when the group formed, unchanged while it lives) is removed;
	// not found or stale: answers 0. The lock then expires with the latest live entry; with none
	// left the set is deleted and the code that follows (HAND_ON) frees or reserves the lock.
	private static final String READER_LEAVES = """
				local generation = redis.call('GET', KEYS[5])
				if not generation then return 0 end
				local member = generation .. ':' .. ARGV[1]
				local score = redis.call('ZSCORE', KEYS[4], member)
				if not score then return 0 end
				redis.call('ZREM', KEYS[4], member)
				local leftAt = redis.call('TIME')
				local leftNow = tonumber(leftAt[1]) * 1000 + math.floor(tonumber(leftAt[2]) / 1000)
				if tonumber(score) <= leftNow then return 0 end
				redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', string.format('%d', leftNow))
				local top = redis.call('ZREVRANGE', KEYS[4], 0, 0, 'WITHSCORES')[2]
				if top then
					redis.call('PEXPIREAT', KEYS[1], top)
					redis.call('PEXPIREAT', KEYS[4], top)
					return 1
				end
				redis.call('DEL', KEYS[4])
			""";

	// Owner-checked; answers 0 (not held by ARGV[1]) or 1 (freed, or reserved for a waiter). On a
	// read-held lock ('~readers') ARGV[1] is a reader leaving (READER_LEAVES).
	static final RedisScript<Long> RELEASE = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local holder = redis.call('GET', KEYS[1])
			if holder ~= ARGV[1] then
				if holder ~= '~readers' then return 0 end
			""" + READER_LEAVES + """
			end
			""" + HAND_ON, Long.class);

	// A waiter gives up (sent only for an owner whose acquisition ended without the lock): its
	// record goes (a writer's in {key}:waiters, a reader's in {key}:readwait), and a lock reserved
	// for it is handed on (HAND_ON, ARGV[4] = ''). A writer leaving no live writer record on a free
	// or read-held lock that readers wait for publishes the plain release '{key}' (RWL-24).
	// Answers 1 if a record or a reservation of ARGV[1] was found, else 0.
	static final RedisScript<Long> WITHDRAW = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local removed = redis.call('ZREM', KEYS[2], ARGV[1])
			local readerRemoved = redis.call('ZREM', KEYS[3], ARGV[1])
			local holder = redis.call('GET', KEYS[1])
			if holder ~= '*' .. ARGV[1] then
				if removed == 1 and (not holder or holder == '~readers') then
					local time = redis.call('TIME')
					local now = string.format('(%d', tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000))
					if redis.call('ZCOUNT', KEYS[2], now, '+inf') == 0 and redis.call('ZCOUNT', KEYS[3], now, '+inf') > 0 then
						redis.call('PUBLISH', ARGV[2], KEYS[1])
					end
				end
				return math.max(removed, readerRemoved)
			end
			""" + HAND_ON, Long.class);

	// A read hold (RWL-20..22). Keys: {key}, {key}:fence, {key}:waiters, {key}:readers,
	// {key}:readwait; ARGV: owner, ttl in ms, record duration in ms (0: try-once). Refused while
	// the lock is held otherwise (answers -1 - its PTTL, or 0) or a live writer record exists
	// (answers -1 - that record's remaining ms), then a waiting reader records itself in
	// {key}:readwait. Else the entry '<generation>:<owner>' is scored with TIME + ttl in ms
	// (a resend or join of a live entry only lengthens it, never shortens it: RWL-21; no ZADD GT,
	// Redis 6.2+), the lock is '~readers' expiring with the
	// latest entry, a free lock's older entries deleted first; answers the fence (stored from
	// TIME in µs where it was gone), whose expiry is refreshed.
	static final RedisScript<Long> ACQUIRE_SHARED = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local owner = ARGV[1]
			local recordFor = tonumber(ARGV[3])
			local time = redis.call('TIME')
			local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
			local holder = redis.call('GET', KEYS[1])
			local fence = redis.call('GET', KEYS[2])
			local refusal = nil
			if holder and (holder ~= '~readers' or not fence) then
				refusal = redis.call('PTTL', KEYS[1])
			else
				local writer = redis.call('ZREVRANGEBYSCORE', KEYS[3], '+inf', string.format('(%d', now),
					'WITHSCORES', 'LIMIT', 0, 1)
				if writer[1] then refusal = tonumber(writer[2]) - now end
			end
			if refusal then
				if recordFor > 0 then
					redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', string.format('%d', now))
					redis.call('ZADD', KEYS[5], string.format('%d', now + recordFor), owner)
					if redis.call('PTTL', KEYS[5]) < recordFor then redis.call('PEXPIRE', KEYS[5], ARGV[3]) end
				end
				if refusal < 0 then return 0 end
				return -1 - refusal
			end
			if not holder then
				redis.call('DEL', KEYS[4])
				if not fence then
					fence = string.format('%d', tonumber(time[1]) * 1000000 + tonumber(time[2]))
				end
				redis.call('SET', KEYS[2], fence, 'PX', FENCE_TTL_MILLIS)
				redis.call('SET', KEYS[1], '~readers')
			else
				redis.call('PEXPIRE', KEYS[2], FENCE_TTL_MILLIS)
				redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', string.format('%d', now))
			end
			local member = fence .. ':' .. owner
			local old = redis.call('ZSCORE', KEYS[4], member)
			if not old or tonumber(old) < now + tonumber(ARGV[2]) then
				redis.call('ZADD', KEYS[4], string.format('%d', now + tonumber(ARGV[2])), member)
			end
			local top = redis.call('ZREVRANGE', KEYS[4], 0, 0, 'WITHSCORES')[2]
			redis.call('PEXPIREAT', KEYS[1], top)
			redis.call('PEXPIREAT', KEYS[4], top)
			if recordFor > 0 then redis.call('ZREM', KEYS[5], owner) end
			return tonumber(fence)
			""".replace("FENCE_TTL_MILLIS", Long.toString(RedisLockBackend.FENCE_TTL_MILLIS)), Long.class);

	// Renews read holds (RWL-25). Keys per hold i: {key} at 3i - 2, {key}:fence at 3i - 1,
	// {key}:readers at 3i; ARGV: its owner at 2i - 1, its ttl in ms at 2i. A hold is renewed only
	// while its entry is live in the lock's live group (the lock '~readers', the entry of the
	// current fence); answers the indexes renewed.
	@SuppressWarnings("rawtypes")
	static final RedisScript<List> RENEW_SHARED = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local time = redis.call('TIME')
			local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
			local renewed = {}
			for i = 1, #KEYS / 3 do
				local lock, fence, readers = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
				local generation = redis.call('GET', fence)
				if generation and redis.call('GET', lock) == '~readers' then
					local member = generation .. ':' .. ARGV[2 * i - 1]
					local score = redis.call('ZSCORE', readers, member)
					if score and tonumber(score) > now then
						redis.call('ZADD', readers, string.format('%d', now + tonumber(ARGV[2 * i])), member)
						redis.call('ZREMRANGEBYSCORE', readers, '-inf', string.format('%d', now))
						local top = redis.call('ZREVRANGE', readers, 0, 0, 'WITHSCORES')[2]
						redis.call('PEXPIREAT', lock, top)
						redis.call('PEXPIREAT', readers, top)
						redis.call('PEXPIRE', fence, FENCE_TTL_MILLIS)
						renewed[#renewed + 1] = i
					end
				end
			end
			return renewed
			""".replace("FENCE_TTL_MILLIS", Long.toString(RedisLockBackend.FENCE_TTL_MILLIS)), List.class);

	@SuppressWarnings("rawtypes")
	static final RedisScript<List> RENEW = RedisScript.of("""
			local renewed = {}
			for i = 1, #KEYS do
				local holder = redis.call('GET', KEYS[i])
				local owner = ARGV[2 * i - 1]
				if holder == owner then
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
