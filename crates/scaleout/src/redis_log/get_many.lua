#!lua flags=no-writes
-- The records of many (kind, id), in one consistent view.
-- KEYS: key, at, body. ARGV: KIND:ID, one per record asked.
-- Reply: one entry per ARGV, in order: false, or {position, recorded_at, body}.
local out = {}
for i, k in ipairs(ARGV) do
  local found = redis.call('HGET', KEYS[1], k)
  if found then
    out[i] = {tonumber(found), redis.call('HGET', KEYS[2], found), redis.call('HGET', KEYS[3], found)}
  else
    out[i] = false
  end
end
return out
