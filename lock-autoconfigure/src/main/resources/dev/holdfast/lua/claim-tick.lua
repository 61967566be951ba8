-- Claims a tick of a scheduled job, judged by this server's clock: the tick must be due now within
-- the tolerance, and the record of the last claimed tick only moves forward.
-- KEYS[1]: the job's tick record. ARGV[1]: the tick in epoch milliseconds, ARGV[2]: the tolerance
-- in milliseconds, ARGV[3]: time to live of the record in milliseconds, ARGV[4]: the claim's id,
-- random and new for every claim.
-- Returns {outcome, server time in epoch milliseconds}: outcome 1 when claimed, 0 when that tick
-- or a later one was claimed, 2 when the tick is not due by this server's clock.
-- Shared by the redis and redlock backends.
-- The record is '<tick> <id>', so that a claim whose script ran but whose answer was lost, and that
-- the client sends again after reconnecting (Lettuce does, at its default reliability), finds its
-- own record and answers 1 again, whether or not the tick is still due: the first run accepted it
-- while it was due, and no other claim writes the same id.
if redis.replicate_commands ~= nil then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local value = ARGV[1] .. ' ' .. ARGV[4]
local record = redis.call('GET', KEYS[1])
if record == value then
	return {1, now}
end
local tick = tonumber(ARGV[1])
if math.abs(now - tick) > tonumber(ARGV[2]) then
	return {2, now}
end
local last = record and tonumber(string.match(record, '^%d+'))
if last and last >= tick then
	return {0, now}
end
redis.call('SET', KEYS[1], value, 'PX', ARGV[3])
return {1, now}
