-- Runs after `#!lua` and write_record.lua, joined in redis_log.rs.
-- Copy records into one store's log at the positions they hold in another log (a migration):
-- each must land at the next position, under a (kind, id) not taken, or nothing of it is written.
-- KEYS: head, key, kind, id, at, body, bykind, stream (as append.lua).
-- ARGV: position, kind, id, recorded_at, body for each record.
-- Reply: {0, position} copied, {1, head} out of order (the log's head is not position - 1),
-- {2, position} the (kind, id) is taken at position; the first refusal stops the batch.
local head, index = KEYS[1], KEYS[2]
local out = {}
for i = 1, #ARGV, 5 do
  local p, kind, id, at, body = tonumber(ARGV[i]), ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local current = tonumber(redis.call('GET', head) or '0')
  if current ~= p - 1 then
    out[#out + 1] = {1, current}
    return out
  end
  local field = kind .. ':' .. id
  local found = redis.call('HGET', index, field)
  if found then
    out[#out + 1] = {2, tonumber(found)}
    return out
  end
  redis.call('INCR', head)
  write_record(p, kind, id, at, body)
  out[#out + 1] = {0, p}
end
return out
