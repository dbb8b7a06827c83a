#!lua flags=no-writes
-- Read up to ARGV[2] records from position ARGV[1] in one consistent view.
-- KEYS: head, kind, id, at, body. Reply: {position, kind, id, recorded_at, body} per record;
-- a missing part is nil (false), which the caller reports as corruption.
local head = tonumber(redis.call('GET', KEYS[1]) or '0')
local from, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local last = math.min(head, from + count - 1)
local out = {}
-- One HMGET per hash for a run of positions rather than one HGET per part of each record:
-- a page costs four calls, not four per record. Runs are bounded so `unpack` stays within
-- Lua's stack.
local run = 1000
local first = from
while first <= last do
  local upto = math.min(last, first + run - 1)
  local fields = {}
  for p = first, upto do
    fields[#fields + 1] = string.format('%d', p)
  end
  local kinds = redis.call('HMGET', KEYS[2], unpack(fields))
  local ids = redis.call('HMGET', KEYS[3], unpack(fields))
  local ats = redis.call('HMGET', KEYS[4], unpack(fields))
  local bodies = redis.call('HMGET', KEYS[5], unpack(fields))
  for i = 1, #fields do
    out[#out + 1] = { first + i - 1, kinds[i], ids[i], ats[i], bodies[i] }
  end
  first = upto + 1
end
return out
