-- Shared by append.lua and import.lua (put after their `#!lua` line): write one record at
-- position p (an integer the caller has taken) into every structure of the log.
-- KEYS: head, key, kind, id, at, body, bykind, stream (see redis_log.rs).
local function write_record(p, kind, id, at, body)
  local pos = string.format('%d', p)
  redis.call('HSET', KEYS[2], kind .. ':' .. id, pos)
  redis.call('HSET', KEYS[3], pos, kind)
  redis.call('HSET', KEYS[4], pos, id)
  redis.call('HSET', KEYS[5], pos, at)
  redis.call('HSET', KEYS[6], pos, body)
  redis.call('ZADD', KEYS[7], 0, kind .. ':' .. string.format('%020d', p))
  redis.call('XADD', KEYS[8], '0-' .. pos, 'kind', kind)
end
