#!lua
-- Append records to one store's log, atomically: Redis runs a script alone, so no other writer
-- can take a position or an id between the lookup and the write.
-- KEYS: head, key, kind, id, at, body, bykind, stream (see redis_log.rs).
-- ARGV: recorded_at, then kind, id, canonical body for each record.
-- One reply per record: {0, position} new, {1, position} duplicate, {2, position} conflict.
local head, index, kinds, ids, ats, bodies, bykind, stream =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local at = ARGV[1]
local out = {}
for i = 2, #ARGV, 3 do
  local kind, id, body = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local field = kind .. ':' .. id
  local found = redis.call('HGET', index, field)
  if found then
    if redis.call('HGET', bodies, found) == body then
      out[#out + 1] = {1, tonumber(found)}
    else
      out[#out + 1] = {2, tonumber(found)}
    end
  else
    local p = redis.call('INCR', head)
    local pos = string.format('%d', p)
    redis.call('HSET', index, field, pos)
    redis.call('HSET', kinds, pos, kind)
    redis.call('HSET', ids, pos, id)
    redis.call('HSET', ats, pos, at)
    redis.call('HSET', bodies, pos, body)
    redis.call('ZADD', bykind, 0, kind .. ':' .. string.format('%020d', p))
    redis.call('XADD', stream, '0-' .. pos, 'kind', kind)
    out[#out + 1] = {0, p}
  end
end
return out
