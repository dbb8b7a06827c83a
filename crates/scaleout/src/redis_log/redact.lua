#!lua
-- Replace the body of the record at position ARGV[1] with ARGV[2] and, when ARGV[3] is given,
-- its id with ARGV[3] (the index entry of the old id goes). Field values are replaced in
-- place, so no key keeps the old bytes.
-- KEYS: kind, id, key, body. Reply: {0} no record there, {1} done, {2, kind, position}
-- the new id is taken by another record of the kind.
local pos, body, new_id = ARGV[1], ARGV[2], ARGV[3]
local kind = redis.call('HGET', KEYS[1], pos)
if not kind then
  return {0}
end
if new_id then
  local field = kind .. ':' .. new_id
  local taken = redis.call('HGET', KEYS[3], field)
  if taken and taken ~= pos then
    return {2, kind, tonumber(taken)}
  end
  local old = redis.call('HGET', KEYS[2], pos)
  if old then
    redis.call('HDEL', KEYS[3], kind .. ':' .. old)
  end
  redis.call('HSET', KEYS[3], field, pos)
  redis.call('HSET', KEYS[2], pos, new_id)
end
redis.call('HSET', KEYS[4], pos, body)
return {1}
