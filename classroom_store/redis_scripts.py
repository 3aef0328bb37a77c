"""The Lua scripts of the Redis room store (redis_rooms): creating, publishing, following,
asking and answering are each one script, so the caps hold between replicas and no room is ever
written without its expiry. Each script's comment names its KEYS and ARGV and what it returns;
negative answers are the store's errors (-1 no room, -2 wrong secret, unless said otherwise).
"""

# Each script reads the server's clock (TIME) so that replicas on several machines agree.
_NOW = "local t = redis.call('TIME') local now = tonumber(t[1]) + tonumber(t[2]) / 1e6 "

# The presenter's check that opens a script: KEYS[1] the room hash, ARGV[1] the secret's digest.
# Returns -1 no room, -2 wrong secret; else the script goes on.
_PRESENTER = """
local d = redis.call('HGET', KEYS[1], 'digest')
if not d then return -1 end
if d ~= ARGV[1] then return -2 end
"""

# KEYS: room hash, live-rooms zset (id -> expiry), the client's creations zset (id -> when) or ''.
# ARGV: id, digest, max rooms, ttl, max creations, window, version, text.
# Returns 1 made, 0 id taken, -1 full, -2 rate-limited. Restoring a room the client made in the
# window is not another room.
CREATE = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if KEYS[3] ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[6]))
  if not redis.call('ZSCORE', KEYS[3], ARGV[1]) and redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then
    return -2
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[1], 'digest', ARGV[2], 'version', ARGV[7], 'text', ARGV[8], 'seen', now)
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
if KEYS[3] ~= '' then
  redis.call('ZADD', KEYS[3], 'NX', now, ARGV[1])
  redis.call('EXPIRE', KEYS[3], ARGV[6])
end
return 1
"""
)

# KEYS: room hash, live-rooms zset, answers hash and who-answered hash (their expiry follows the
# room's). ARGV: id, digest,
# ttl, text ('' = a check-in only), channel,
# seconds between new views. Returns the version, -1 missing, -2 wrong secret, -3 too soon (checked
# in, view not taken). The digest is compared with ==: it is the SHA-256 of a secret with a
# 96-bit random nonce and a 128-bit HMAC, so timing reveals nothing usable about the secret.
PUBLISH = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'digest', 'version', 'text', 'published')
if not h[1] then return -1 end
if h[1] ~= ARGV[2] then return -2 end
local v = tonumber(h[2])
local busy = false
if ARGV[4] ~= '' and ARGV[4] ~= h[3] then
  if h[4] and now - tonumber(h[4]) < tonumber(ARGV[6]) then
    busy = true
  else
    v = v + 1
    redis.call('HSET', KEYS[1], 'version', v, 'text', ARGV[4], 'published', now)
    redis.call('PUBLISH', ARGV[5], ARGV[1])
  end
end
redis.call('HSET', KEYS[1], 'seen', now)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
redis.call('EXPIRE', KEYS[4], ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
if busy then return -3 end
return v
"""
)

# KEYS: room hash, followers zset. ARGV: follower ttl, default seats per client.
# Returns {version, seconds since the presenter was seen, followers, seats per client, question tag}
# or nil.
STATUS = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'version', 'seen', 'per_client', 'q_id', 'q_state')
if not h[1] then return nil end
local following = redis.call('ZCOUNT', KEYS[2], now - tonumber(ARGV[1]), '+inf')
local tag = ''
if h[4] then tag = h[4] .. ':' .. h[5] end
return {h[1], tostring(now - tonumber(h[2])), following, h[3] or ARGV[2], tag}
"""
)

# KEYS: room hash, followers zset (session -> last check-in), this client's followers zset, seat
# -> address key hash. ARGV: session, seats, follower ttl, default seats per client, address key.
# Returns 1 seated, 0 room full, -2 client full, -1 no such room.
FOLLOW = (
    _NOW
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local since = now - tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', since)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', since)
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end
  local per = tonumber(redis.call('HGET', KEYS[1], 'per_client') or ARGV[4])
  if redis.call('ZCARD', KEYS[3]) >= per then return -2 end
end
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
redis.call('EXPIRE', KEYS[4], ARGV[3])
return 1
"""
)

# KEYS: room hash, frame hash. ARGV: digest, view key, frame bytes, ttl.
# Returns 1 kept, -1 no room, -2 wrong secret.
PUT_FRAME = (
    _PRESENTER
    + """
redis.call('HSET', KEYS[2], 'view', ARGV[2], 'blob', ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
"""
)

# KEYS: room hash. ARGV: digest, seats per client. Returns 1 set, -1 missing, -2 wrong secret.
PER_CLIENT = (
    _PRESENTER
    + """
redis.call('HSET', KEYS[1], 'per_client', ARGV[2])
return 1
"""
)


# KEYS: room hash, answers hash, who-answered hash. ARGV: digest, question id, question JSON,
# channel, room id. Returns 1 asked, -1 missing, -2 wrong secret. The last question's answers go.
ASK = (
    _PRESENTER
    + """
redis.call('HSET', KEYS[1], 'q_id', ARGV[2], 'question', ARGV[3], 'q_state', 'open')
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
"""
)

# KEYS: room hash. ARGV: digest, channel, room id. Returns 1 closed (or none asked), -1, -2.
CLOSE_QUESTION = """
local h = redis.call('HMGET', KEYS[1], 'digest', 'q_id')
if not h[1] then return -1 end
if h[1] ~= ARGV[1] then return -2 end
if h[2] then
  redis.call('HSET', KEYS[1], 'q_state', 'closed')
  redis.call('PUBLISH', ARGV[2], ARGV[3])
end
return 1
"""

# KEYS: room hash, answers hash, who-answered hash. ARGV: digest, channel, room id. Returns 1 cleared (or none
# asked), -1, -2. The question and its answers go; screens show the presenter's page again.
CLEAR_QUESTION = (
    _PRESENTER
    + """
if redis.call('HEXISTS', KEYS[1], 'q_id') == 1 then
  redis.call('HDEL', KEYS[1], 'q_id', 'question', 'q_state')
  redis.call('DEL', KEYS[2], KEYS[3])
  redis.call('PUBLISH', ARGV[2], ARGV[3])
end
return 1
"""
)

# KEYS: room hash, answers hash, followers zset, seat -> address key hash, who-answered hash
# (s:<seat> -> address key, c:<address key> -> seats of it that answered). ARGV: question id, seat,
# text, most answers, follower ttl, default seats per address. Returns 1 kept, -1 no
# room, -2 not the open question, -3 not seated, -4 full, -(4 + n) this
# address has given its n answers. The answers rule, step by step as `question.make_way` states
# it (its numbers come in ARGV: the cap is `question.answer_cap`): an address answers at most as
# many times as it may hold seats, its seats that left still counting; when the room keeps all it
# may, an answer of a seat that has left makes way, so a seated follower's answer is always taken.
# The answers expire with the room
# (its remaining TTL, refreshed by each presenter check-in).
ANSWER = (
    _NOW
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local h = redis.call('HMGET', KEYS[1], 'q_id', 'q_state', 'per_client')
if h[1] ~= ARGV[1] or h[2] ~= 'open' then return -2 end
local since = now - tonumber(ARGV[5])
local seen = redis.call('ZSCORE', KEYS[3], ARGV[2])
local client = redis.call('HGET', KEYS[4], ARGV[2])
if not seen or tonumber(seen) < since or not client then return -3 end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 then
  local before = redis.call('HEXISTS', KEYS[5], 's:' .. ARGV[2]) == 1
  local per = tonumber(h[3] or ARGV[6])
  if not before and tonumber(redis.call('HGET', KEYS[5], 'c:' .. client) or '0') >= per then
    return -4 - per
  end
  if redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4]) then
    local left = nil
    for _, s in ipairs(redis.call('HKEYS', KEYS[2])) do
      local t = redis.call('ZSCORE', KEYS[3], s)
      if not t or tonumber(t) < since then left = s break end
    end
    if not left then return -4 end
    redis.call('HDEL', KEYS[2], left)
  end
  if not before then
    redis.call('HSET', KEYS[5], 's:' .. ARGV[2], client)
    redis.call('HINCRBY', KEYS[5], 'c:' .. client, 1)
  end
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
local ttl = redis.call('TTL', KEYS[1])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[2], ttl)
  redis.call('EXPIRE', KEYS[5], ttl)
end
return 1
"""
)

# KEYS: room hash, answers hash, followers zset. ARGV: digest, follower ttl.
# Returns {flat answers, seated seats}, or -1 missing, -2 wrong secret.
ANSWERS = (
    _NOW
    + _PRESENTER
    + """
return {redis.call('HGETALL', KEYS[2]), redis.call('ZRANGEBYSCORE', KEYS[3], now - tonumber(ARGV[2]), '+inf')}
"""
)
