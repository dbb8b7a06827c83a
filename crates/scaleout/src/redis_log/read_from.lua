#!lua flags=no-writes
-- Read up to ARGV[2] records from position ARGV[1] in one consistent view.
-- KEYS: head, kind, id, at, body. Reply: {position, kind, id, recorded_at, body} per record;
-- a missing part is nil (false), which the caller reports as corruption.
local head = tonumber(redis.call('GET', KEYS[1]) or '0')
local from, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local last = math.min(head, from + count - 1)
local out = {}
for p = from, last do
  local pos = string.format('%d', p)
  out[#out + 1] = {
    p,
    redis.call('HGET', KEYS[2], pos),
    redis.call('HGET', KEYS[3], pos),
    redis.call('HGET', KEYS[4], pos),
    redis.call('HGET', KEYS[5], pos),
  }
end
return out
