-- Claims a tick of a scheduled job, judged by this server's clock: the tick must be due now within
-- the tolerance, and the record of the last claimed tick only moves forward.
-- KEYS[1]: the job's tick record. ARGV[1]: the tick in epoch milliseconds, ARGV[2]: the tolerance
-- in milliseconds, ARGV[3]: time to live of the record in milliseconds.
-- Returns {outcome, server time in epoch milliseconds}: outcome 1 when claimed, 0 when that tick
-- or a later one was claimed, 2 when the tick is not due by this server's clock.
-- Shared by the redis and redlock backends. The record's key and value are those of the previous
-- version (which passed the time to live as ARGV[2] and judged no clock), so both versions can
-- claim one record during a rolling upgrade.
if redis.replicate_commands ~= nil then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local tick = tonumber(ARGV[1])
if math.abs(now - tick) > tonumber(ARGV[2]) then
	return {2, now}
end
local last = tonumber(redis.call('GET', KEYS[1]) or '-1')
if last ~= nil and last >= tick then
	return {0, now}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return {1, now}
