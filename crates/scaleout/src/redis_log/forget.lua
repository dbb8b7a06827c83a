-- Runs after `#!lua` and write_record.lua, joined in redis_log.rs.
-- Append a forget record and replace the bodies of the records it redacts, as one script:
-- Redis runs it alone and its writes reach the append-only file together, so the forget
-- record never stands without its tombstones. Every check comes before the first write, since
-- a script's writes are not undone by a later error.
-- KEYS: head, key, kind, id, at, body, bykind, stream (see redis_log.rs).
-- ARGV: recorded_at, expected head, kind, id, canonical body of the forget record, then
-- position, body as read, tombstone for each redaction.
-- Reply: {0, position} appended, {1, position} the record is there already, {2, position} its
-- id is taken by other content, {3, position} the head moved or the record at position changed
-- (nothing written).
local head, index, kinds, bodies = KEYS[1], KEYS[2], KEYS[3], KEYS[6]
local at, expected, kind, id, body = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local found = redis.call('HGET', index, kind .. ':' .. id)
if found then
  if redis.call('HGET', bodies, found) == body then
    return {1, tonumber(found)}
  end
  return {2, tonumber(found)}
end
local current = redis.call('GET', head) or '0'
if current ~= expected then
  return {3, tonumber(current)}
end
for i = 6, #ARGV, 3 do
  local pos = ARGV[i]
  if not redis.call('HGET', kinds, pos) or redis.call('HGET', bodies, pos) ~= ARGV[i + 1] then
    return {3, tonumber(pos)}
  end
end
local p = redis.call('INCR', head)
write_record(p, kind, id, at, body)
for i = 6, #ARGV, 3 do
  redis.call('HSET', bodies, ARGV[i], ARGV[i + 2])
end
return {0, p}
