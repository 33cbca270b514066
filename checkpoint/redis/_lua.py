"""The Lua scripts that make a RedisSaver write atomic, a read one round trip, and a history
read one round trip per page.

They follow ``checkpoint/_savers/retention.py``'s rules (write order, head, retention) and store
checkpoints as ``checkpoint/_savers/index.py`` describes, here in Lua: the ``ids`` scores are the
write order, ``WRITE`` is ``put`` (head check, index, newest write, head, then retention when
``keep > 0``), ``WRITES`` is ``put_writes``, ``READ`` is ``get`` and ``HISTORY`` one page of
``list``.

Keys of one thread (all share the thread's hash tag, so they live in one cluster slot):
KEYS[1] head (string: the latest checkpoint id), KEYS[2] meta (hash: ``next_list``, ``seq``
and ``len:<list>`` lengths), KEYS[3] cps (hash: id -> header), KEYS[4] idx (hash: id -> JSON index),
KEYS[5] vals (hash: ``<id>\\n<key>`` -> value), KEYS[6] items (hash: ``<list>:<pos>`` -> item),
KEYS[7] ids (sorted set of ids scored by the order of their writes, ``seq``: each new id
scores one more than the head it follows, never the time in an id; ids of an older layout
have score 0 and sort first, by id).

A thread's lease (``LEASE``; a string holding the token, expiring by ``PX``) is one more key
with the same tag, ``lease``; it is passed as KEYS[8], with the fence token as the last ARGV,
only to a fenced write, which checks it before anything else: a write without a fence sends
and checks exactly what it did before leases existed.

Stored data that is corrupt, truncated or partly evicted makes a script answer ``{'!', why}``
(read) or ``{4, why}`` (write) instead of erroring or looping: every loop is bounded by what
is stored (``HLEN`` of the items hash), never by a length read from the data alone.
"""

from __future__ import annotations

# ARGV: expected head, check_head ("1"/"0"), id, header, ttl, keep, base (the checkpoint whose
#       index this one extends, '' for none), n_values, (key, value)*,
#       n_lists, (key, mode "a"ppend | "n"ew, count, item*)*
# Returns {1, index} written (the new checkpoint's index, JSON), {0, head} the head moved, {2} the base is gone (pruned),
#         {3, key} an append onto a key whose value is not a list (the client resends it whole),
#         {4, why} the thread's stored data is corrupt or partly gone (nothing written),
#         {5, holder} fenced (KEYS[8] the lease, the last ARGV the token) and the live lease is
#         not the token (``holder``: the live one, '' for none; nothing written).
WRITE = r"""
if #KEYS > 7 then
  local holder = redis.call('GET', KEYS[8])
  if holder ~= ARGV[#ARGV] then return {5, holder or ''} end
end
local expected, check, id, header = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ttl, keep, base = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local head = redis.call('GET', KEYS[1])
if not head and redis.call('EXISTS', KEYS[3], KEYS[7]) > 0 then
  return {4, 'its head key is missing but its checkpoints are not (evicted or deleted by hand?)'}
end
if check == '1' and (head or '') ~= expected then return {0, head or ''} end
-- the ids are scored in write order: the head is the last one written, so the new id's score
-- is the head's plus one (the same score when a retried write rewrites the head)
local score = 1
if head then
  local head_score = tonumber(redis.call('ZSCORE', KEYS[7], head))
  if not head_score then
    return {4, 'its head ' .. head .. ' is missing from its list of checkpoints'}
  end
  score = head == id and head_score or head_score + 1
end
local idx = {}
if base ~= '' then
  local raw = redis.call('HGET', KEYS[4], base)
  if not raw then return {2} end
  local ok, decoded = pcall(cjson.decode, raw)
  if not ok or type(decoded) ~= 'table' then
    return {4, 'the index of checkpoint ' .. base .. ' is not valid JSON'}
  end
  idx = decoded
end
local i = 8
local n_values = tonumber(ARGV[i]); i = i + 1
local values_at = i
i = i + 2 * n_values
local n_lists = tonumber(ARGV[i]); i = i + 1
local ops, tips, stored = {}, {}, nil
for _ = 1, n_lists do
  local key, mode, count = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local ref = idx[key]
  if mode == 'a' and ref and ref[1] == 'v' then return {3, key} end
  if mode == 'a' and ref and ref[1] == 'l' then
    local list = tostring(ref[2])
    if tips[list] == nil then
      tips[list] = tonumber(redis.call('HGET', KEYS[2], 'len:' .. list) or '-1')
    end
    stored = stored or redis.call('HLEN', KEYS[6])
    local length = tonumber(ref[3])
    if not length or length < 0 or length > tips[list] or length > stored then
      return {4, "the list '" .. key .. "' of checkpoint " .. base .. ' claims '
        .. tostring(ref[3]) .. ' items, more than are stored'}
    end
  end
  ops[#ops + 1] = {key, mode, count, i + 3}
  i = i + 3 + count
end
-- Every check is done: from here on the script only writes (the index as _savers/index.py
-- builds it).
for from = 0, n_values - 1, 500 do  -- HSETs of 500 fields: unpack() has a limit
  local pairs_ = {}
  for v = from, math.min(from + 499, n_values - 1) do
    local key = ARGV[values_at + 2 * v]
    pairs_[#pairs_ + 1] = id .. '\n' .. key
    pairs_[#pairs_ + 1] = ARGV[values_at + 2 * v + 1]
    idx[key] = {'v', id}
  end
  redis.call('HSET', KEYS[5], unpack(pairs_))
end
local counters = {'seq', score}
for _, op in ipairs(ops) do
  local key, mode, count, at = op[1], op[2], op[3], op[4]
  local ref = idx[key]
  local list, length
  if mode == 'a' and ref and ref[1] == 'l' then
    list, length = tostring(ref[2]), ref[3]
    if tips[list] ~= length then  -- a fork from an older checkpoint: copy its prefix to a new list
      local copy = tostring(redis.call('HINCRBY', KEYS[2], 'next_list', 1))
      for from = 0, length - 1, 500 do
        local to = math.min(from + 499, length - 1)
        local fields = {}
        for p = from, to do fields[#fields + 1] = list .. ':' .. p end
        local got = redis.call('HMGET', KEYS[6], unpack(fields))
        local pairs_ = {}
        for p = from, to do
          pairs_[#pairs_ + 1] = copy .. ':' .. p
          pairs_[#pairs_ + 1] = got[p - from + 1]
        end
        redis.call('HSET', KEYS[6], unpack(pairs_))
      end
      list = copy
    end
  else
    list, length = tostring(redis.call('HINCRBY', KEYS[2], 'next_list', 1)), 0
  end
  for from = 0, count - 1, 500 do
    local pairs_ = {}
    for k = from, math.min(from + 499, count - 1) do
      pairs_[#pairs_ + 1] = list .. ':' .. (length + k)
      pairs_[#pairs_ + 1] = ARGV[at + k]
    end
    if #pairs_ > 0 then redis.call('HSET', KEYS[6], unpack(pairs_)) end
  end
  length = length + count
  tips[list] = length
  counters[#counters + 1] = 'len:' .. list
  counters[#counters + 1] = length
  idx[key] = {'l', tonumber(list), length}
end
for from = 1, #counters, 1000 do
  redis.call('HSET', KEYS[2], unpack(counters, from, math.min(from + 999, #counters)))
end
redis.call('HSET', KEYS[3], id, header)
local written = cjson.encode(idx)
redis.call('HSET', KEYS[4], id, written)
redis.call('ZADD', KEYS[7], score, id)
redis.call('SET', KEYS[1], id)
-- retention, _savers/retention.py's rule 4: all but the newest `keep` writes go, then
-- _savers/index.py's sweep
if keep > 0 then
  local total = redis.call('ZCARD', KEYS[7])
  if total > keep then
    local old = redis.call('ZRANGE', KEYS[7], 0, total - keep - 1)
    local kept = redis.call('ZRANGE', KEYS[7], total - keep, -1)
    local used_values, used_lists, readable = {}, {}, true
    for _, k in ipairs(kept) do
      local ok, kept_idx = pcall(cjson.decode, redis.call('HGET', KEYS[4], k) or '')
      if not ok or type(kept_idx) ~= 'table' then readable = false; break end
      for key, ref in pairs(kept_idx) do
        if ref[1] == 'v' then used_values[ref[2] .. '\n' .. key] = true
        else used_lists[tostring(ref[2])] = true end
      end
    end
    -- a kept checkpoint whose index cannot be read: prune nothing rather than guess
    if not readable then old = {} end
    for _, c in ipairs(old) do
      redis.call('HDEL', KEYS[3], c)
      redis.call('HDEL', KEYS[4], c)
      redis.call('ZREM', KEYS[7], c)
    end
    -- every value no kept checkpoint reads goes, whenever it was written
    local fields = readable and redis.call('HKEYS', KEYS[5]) or {}
    for _, field in ipairs(fields) do
      if not used_values[field] then redis.call('HDEL', KEYS[5], field) end
    end
    local meta = readable and redis.call('HGETALL', KEYS[2]) or {}
    for m = 1, #meta, 2 do
      local list = string.match(meta[m], '^len:(%d+)$')
      if list and not used_lists[list] then
        -- positions past what is stored cannot exist: a planted length cannot make this loop
        local length = math.min(tonumber(meta[m + 1]) or 0, redis.call('HLEN', KEYS[6]))
        for from = 0, length - 1, 500 do
          local fields = {}
          for p = from, math.min(from + 499, length - 1) do fields[#fields + 1] = list .. ':' .. p end
          redis.call('HDEL', KEYS[6], unpack(fields))
        end
        redis.call('HDEL', KEYS[2], meta[m])
      end
    end
  end
end
if ttl > 0 then
  for k = 1, 7 do redis.call('EXPIRE', KEYS[k], ttl) end
end
return {1, written}
"""

# ARGV: id, check_head ("1"/"0"), header, ttl
# The pending writes of a step that started from checkpoint ``id`` (``put_writes``): its stored
# header is replaced, nothing else changes. Returns {1} written, {0, head} the head is not
# ``id`` (with check_head), {2} the thread does not hold ``id``; {5, holder} as for WRITE when
# fenced (KEYS[8] the lease, ARGV[5] the token).
WRITES = r"""
if #KEYS > 7 then
  local holder = redis.call('GET', KEYS[8])
  if holder ~= ARGV[5] then return {5, holder or ''} end
end
local id, check, header, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local head = redis.call('GET', KEYS[1])
if check == '1' and (head or '') ~= id then return {0, head or ''} end
if redis.call('HEXISTS', KEYS[3], id) == 0 then return {2} end
redis.call('HSET', KEYS[3], id, header)
if ttl > 0 then
  for k = 1, 7 do redis.call('EXPIRE', KEYS[k], ttl) end
end
return {1}
"""

# KEYS[1] the thread's lease. ARGV: op ("a"cquire, "r"enew, "x" release), token, ttl (ms).
# ``_savers.leases.allowed`` in Lua: acquire when there is no live lease or it is the token's, renew
# and release only the token's. Returns 1 done, 0 refused (another's, or none to renew).
LEASE = r"""
local holder, op, token = redis.call('GET', KEYS[1]), ARGV[1], ARGV[2]
if op == 'a' then
  if holder and holder ~= token then return 0 end
elseif holder ~= token then
  return 0
end
if op == 'x' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], token, 'PX', ARGV[3])
end
return 1
"""

# A Lua function the read scripts begin with: the items of stored list ``list`` from position
# ``from`` up to ``length`` (excluded), in HMGETs of 500, or nil and the complaint when one is
# missing (``key`` names the list in it).
_LIST_ITEMS = r"""
local function list_items(list, from, length, key)
  local items = {}
  for first = from, length - 1, 500 do
    local fields = {}
    for p = first, math.min(first + 499, length - 1) do fields[#fields + 1] = list .. ':' .. p end
    local got = redis.call('HMGET', KEYS[6], unpack(fields))
    for p = 1, #fields do
      if not got[p] then
        return nil, 'item ' .. (first + p - 1) .. " of the list '" .. key .. "' is missing"
      end
      items[#items + 1] = got[p]
    end
  end
  return items
end
"""

# ARGV: id ('' = the head), ttl to refresh ('0' = none), held ('' = none: the id of a
#       checkpoint of the thread whose values the client holds decoded).
# Returns nil; {id, '=', header} when the checkpoint is the held one; or
# {id, header, index (JSON), used ('1' when the held checkpoint's index was compared, '0' when
#  it is not stored), (key, kind, data)*} where kind is "v" (data: the value), "l" (data: the
#  list's items), "=" (the held checkpoint has the same reference: data '') or "a" (the held
#  checkpoint's list, grown: data holds the items after the held length);
# or {'!', why} when the thread's stored data is corrupt, truncated or partly gone.
READ = (
    _LIST_ITEMS
    + r"""
local id, held = ARGV[1], ARGV[3]
if id == '' then
  id = redis.call('GET', KEYS[1])
  if not id then
    if redis.call('EXISTS', KEYS[3], KEYS[7]) > 0 then
      return {'!', 'its head key is missing but its checkpoints are not (evicted or deleted by hand?)'}
    end
    return nil
  end
end
local header = redis.call('HGET', KEYS[3], id)
if not header then
  if ARGV[1] == '' then return {'!', 'its head ' .. id .. ' has no stored header'} end
  return nil
end
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  for k = 1, 7 do redis.call('EXPIRE', KEYS[k], ttl) end
end
if held ~= '' and id == held then
  -- what the client holds stands for what is stored, after a check of the keys a write needs
  if not redis.call('HGET', KEYS[4], id) then
    return {'!', 'checkpoint ' .. id .. ' has no stored index'}
  end
  if redis.call('EXISTS', KEYS[2]) == 0 or not redis.call('ZSCORE', KEYS[7], id) then
    return {'!', 'its counters or its list of checkpoints are missing (evicted or deleted by hand?)'}
  end
  -- the header too: pending writes (WRITES) may have rewritten it since the client held it
  return {id, '=', header}
end
local raw = redis.call('HGET', KEYS[4], id)
if not raw then return {'!', 'checkpoint ' .. id .. ' has no stored index'} end
local ok, idx = pcall(cjson.decode, raw)
if not ok or type(idx) ~= 'table' then
  return {'!', 'the index of checkpoint ' .. id .. ' is not valid JSON'}
end
local known = {}
local used = '0'
if held ~= '' then
  local held_raw = redis.call('HGET', KEYS[4], held)
  if held_raw then
    local held_ok, held_idx = pcall(cjson.decode, held_raw)
    if held_ok and type(held_idx) == 'table' then known = held_idx; used = '1' end
  end
end
local stored = redis.call('HLEN', KEYS[6])
local out = {id, header, raw, used}
for key, ref in pairs(idx) do
  if type(ref) ~= 'table' then return {'!', "the index entry of '" .. key .. "' is not valid"} end
  out[#out + 1] = key
  local old = known[key]
  if type(old) == 'table' and old[1] == ref[1] and old[2] == ref[2] and old[3] == ref[3] then
    out[#out + 1] = '='
    out[#out + 1] = ''
  elseif ref[1] == 'v' then
    local value = redis.call('HGET', KEYS[5], tostring(ref[2]) .. '\n' .. key)
    if not value then return {'!', "the stored value of '" .. key .. "' is missing"} end
    out[#out + 1] = 'v'
    out[#out + 1] = value
  elseif ref[1] == 'l' then
    local list, length = tostring(ref[2]), tonumber(ref[3])
    local tip = tonumber(redis.call('HGET', KEYS[2], 'len:' .. list) or '-1')
    if not length or length < 0 or length > tip or length > stored then
      return {'!', "the list '" .. key .. "' claims " .. tostring(ref[3])
        .. ' items, more than are stored'}
    end
    local start = 0
    out[#out + 1] = 'l'
    if type(old) == 'table' and old[1] == 'l' and tostring(old[2]) == list
        and tonumber(old[3]) and tonumber(old[3]) <= length then
      start = tonumber(old[3])
      out[#out] = 'a'
    end
    local items, why = list_items(list, start, length, key)
    if not items then return {'!', why} end
    out[#out + 1] = items
  else
    return {'!', "the index entry of '" .. key .. "' is not valid"}
  end
end
return out
"""
)

# ARGV: before ('' = from the newest), count (at most this many ids), ttl to refresh ('0' =
#       none), then (list, have)*: the items the client already holds (positions below have).
# Returns one page of the history, newest first in write order, starting after ``before``:
# {scanned, last, {id, header, index}*, {field, value}*, {list, from, {item*}}*}: ``scanned``
# is how many ids the page looked at (fewer than count: the history ends here), ``last`` the
# last of them (the next page starts after it; an id without a header is skipped), each value
# field (``<id>\n<key>``) is sent once per page and each list's items from ``have`` up to the
# longest prefix the page's checkpoints hold. {0, '', {}, {}, {}} when the thread never had
# ``before`` (or no longer has it: pruning drops the oldest first, so nothing older is left);
# {'!', why} when the head is not among the ids or the stored data is corrupt or partly gone.
HISTORY = (
    _LIST_ITEMS
    + r"""
local head = redis.call('GET', KEYS[1])
if head and not redis.call('ZSCORE', KEYS[7], head) then
  return {'!', 'its head ' .. head .. ' is missing from its list of checkpoints'}
end
local start = 0
if ARGV[1] ~= '' then
  local rank = redis.call('ZREVRANK', KEYS[7], ARGV[1])
  if not rank then return {0, '', {}, {}, {}} end
  start = rank + 1
end
local count = tonumber(ARGV[2])
if count <= 0 then return {0, '', {}, {}, {}} end
local ids = redis.call('ZREVRANGE', KEYS[7], start, start + count - 1)
local have = {}
for a = 4, #ARGV - 1, 2 do have[ARGV[a]] = tonumber(ARGV[a + 1]) end
local stored = redis.call('HLEN', KEYS[6])
local checkpoints, values, sent, need, named, tips = {}, {}, {}, {}, {}, {}
for _, id in ipairs(ids) do
  local header = redis.call('HGET', KEYS[3], id)
  if header then
    local raw = redis.call('HGET', KEYS[4], id)
    if not raw then return {'!', 'checkpoint ' .. id .. ' has no stored index'} end
    local ok, idx = pcall(cjson.decode, raw)
    if not ok or type(idx) ~= 'table' then
      return {'!', 'the index of checkpoint ' .. id .. ' is not valid JSON'}
    end
    for key, ref in pairs(idx) do
      if type(ref) ~= 'table' then return {'!', "the index entry of '" .. key .. "' is not valid"} end
      if ref[1] == 'v' then
        local field = tostring(ref[2]) .. '\n' .. key
        if not sent[field] then
          local value = redis.call('HGET', KEYS[5], field)
          if not value then return {'!', "the stored value of '" .. key .. "' is missing"} end
          sent[field] = true
          values[#values + 1] = field
          values[#values + 1] = value
        end
      elseif ref[1] == 'l' then
        local list, length = tostring(ref[2]), tonumber(ref[3])
        if tips[list] == nil then
          tips[list] = tonumber(redis.call('HGET', KEYS[2], 'len:' .. list) or '-1')
        end
        if not length or length < 0 or length > tips[list] or length > stored then
          return {'!', "the list '" .. key .. "' claims " .. tostring(ref[3])
            .. ' items, more than are stored'}
        end
        if length > (need[list] or 0) then need[list] = length; named[list] = key end
      else
        return {'!', "the index entry of '" .. key .. "' is not valid"}
      end
    end
    checkpoints[#checkpoints + 1] = id
    checkpoints[#checkpoints + 1] = header
    checkpoints[#checkpoints + 1] = raw
  end
end
local lists = {}
for list, length in pairs(need) do
  local from = have[list] or 0
  if length > from then
    local items, why = list_items(list, from, length, named[list])
    if not items then return {'!', why} end
    lists[#lists + 1] = list
    lists[#lists + 1] = from
    lists[#lists + 1] = items
  end
end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  for k = 1, 7 do redis.call('EXPIRE', KEYS[k], ttl) end
end
return {#ids, ids[#ids] or '', checkpoints, values, lists}
"""
)
