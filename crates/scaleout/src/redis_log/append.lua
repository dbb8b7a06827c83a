-- Runs after `#!lua` and write_record.lua, joined in redis_log.rs.
-- Append records to one store's log, atomically: Redis runs a script alone, so no other writer
-- can take a position or an id between the lookup and the write.
-- KEYS: head, key, kind, id, at, body, bykind, stream (see redis_log.rs).
-- ARGV: recorded_at, then kind, id, canonical body for each record.
-- One reply per record: {0, position} new, {1, position} duplicate, {2, position} conflict.
local head, index, bodies = KEYS[1], KEYS[2], KEYS[6]
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
    write_record(p, kind, id, at, body)
    out[#out + 1] = {0, p}
  end
end
return out
