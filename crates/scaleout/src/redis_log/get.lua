#!lua flags=no-writes
-- The record of kind ARGV[1] with id ARGV[2], in one consistent view.
-- KEYS: key, at, body. Reply: nil, or {position, recorded_at, body}.
local found = redis.call('HGET', KEYS[1], ARGV[1] .. ':' .. ARGV[2])
if not found then
  return false
end
return {tonumber(found), redis.call('HGET', KEYS[2], found), redis.call('HGET', KEYS[3], found)}
