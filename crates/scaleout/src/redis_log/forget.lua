-- Runs after `#!lua` and write_record.lua, joined in redis_log.rs.
-- Append a forget record and replace the bodies of the records it redacts, as one script:
-- Redis runs it alone and its writes reach the append-only file together, so the forget
-- record never stands without its tombstones and rewrites. Every check comes before the first
-- write, since a script's writes are not undone by a later error.
-- KEYS: head, key, kind, id, at, body, bykind, stream (see redis_log.rs).
-- ARGV: recorded_at, expected head, kind, id, canonical body of the forget record, then
-- position, body as read, replacement body and new id ('' keeps the id) for each redaction.
-- Reply: {0, position} appended, {1, position} the record is there already, {2, position} its
-- id is taken by other content, {3, position} the head moved or the record at position changed
-- (nothing written), {4, position} a new id is taken by another record of the kind.
local head, index, kinds, ids, bodies = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6]
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
for i = 6, #ARGV, 4 do
  local pos, new_id = ARGV[i], ARGV[i + 3]
  local k = redis.call('HGET', kinds, pos)
  if not k or redis.call('HGET', bodies, pos) ~= ARGV[i + 1] then
    return {3, tonumber(pos)}
  end
  if new_id ~= '' then
    local taken = redis.call('HGET', index, k .. ':' .. new_id)
    if taken and taken ~= pos then
      return {4, tonumber(pos)}
    end
  end
end
local p = redis.call('INCR', head)
write_record(p, kind, id, at, body)
for i = 6, #ARGV, 4 do
  local pos, new_id = ARGV[i], ARGV[i + 3]
  if new_id ~= '' then
    -- The old id leaves the index field and the id hash: the field name held it.
    local k = redis.call('HGET', kinds, pos)
    local old = redis.call('HGET', ids, pos)
    if old then
      redis.call('HDEL', index, k .. ':' .. old)
    end
    redis.call('HSET', index, k .. ':' .. new_id, pos)
    redis.call('HSET', ids, pos, new_id)
  end
  redis.call('HSET', bodies, pos, ARGV[i + 2])
end
return {0, p}
