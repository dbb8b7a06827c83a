#!lua flags=no-writes
-- Up to ARGV[3] records of kind ARGV[1] after the index member ARGV[2] ('' from the start).
-- KEYS: bykind, id, at, body. Reply: {member, id, recorded_at, body} per record, in position
-- order (members are KIND:POSITION with the position in 20 digits, so lexical order is
-- position order).
local kind, after, count = ARGV[1], ARGV[2], ARGV[3]
local low = '[' .. kind .. ':'
if after ~= '' then
  low = '(' .. after
end
local members = redis.call('ZRANGE', KEYS[1], low, '(' .. kind .. ';', 'BYLEX', 'LIMIT', 0, count)
local out = {}
for _, member in ipairs(members) do
  local pos = string.format('%d', tonumber(string.sub(member, #kind + 2)))
  out[#out + 1] = {
    member,
    redis.call('HGET', KEYS[2], pos),
    redis.call('HGET', KEYS[3], pos),
    redis.call('HGET', KEYS[4], pos),
  }
end
return out
