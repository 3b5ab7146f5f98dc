-- wrk script: rotates among prepared requests and checks every answer it gets.
-- Usage: wrk ... -s checks.lua URL -- DATAFILE
-- DATAFILE lines (tab separated):
--   M <mode>        pdp | bulk | cerbos | status | none
--   K <kind>        pdp: the reason kind every allow must name (rbac, rebac, abac)
--   S <codes>       status: accepted status codes, e.g. 200,201
--   H <name> <value>
--   R <expect> <method> <path> <body>   a fixed request
--   T <expect> <method> <path> <body>   a template: {n} becomes a number unique to this run
-- <expect>: pdp "1"/"0" (allow/deny); bulk the answer's pattern ("1011..."); cerbos "1"/"0" for the
-- resource id "c<line number among R lines>"; otherwise "-".

local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

local counters = {
  "responses", "bad_status", "sent_allow", "sent_deny", "got_allow", "got_deny", "wrong_kind",
  "unparsed", "mismatch", "decisions", "checked", "first_bad_status",
}

function init(args)
  for _, name in ipairs(counters) do _G[name] = 0 end
  mode = "none"
  kind = nil
  local hdrs = {}
  statuses = {}
  patterns = {}
  local lines = {}
  local f = assert(io.open(args[1], "r"))
  for line in f:lines() do
    local tag, rest = line:match("^(%a)\t(.*)$")
    if tag == "M" then
      mode = rest
    elseif tag == "K" then
      kind = rest
    elseif tag == "S" then
      for s in rest:gmatch("%d+") do statuses[tonumber(s)] = true end
    elseif tag == "H" then
      local k, v = rest:match("^([^\t]*)\t(.*)$")
      hdrs[k] = v
    elseif tag == "R" or tag == "T" then
      local e, method, path, body = rest:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      table.insert(lines, { tag = tag, e = e, method = method, path = path, body = body })
    end
  end
  f:close()
  headers = hdrs
  reqs, exps, templates = {}, {}, {}
  for i, l in ipairs(lines) do
    exps[i] = l.e
    if l.tag == "T" then
      templates[i] = l
    else
      local body = l.body
      if body == "" then body = nil end
      reqs[i] = wrk.format(l.method, l.path, headers, body)
    end
    if mode == "bulk" then patterns[l.e] = true end
  end
  n = #lines
  counter = 0
  i = ((tid or 1) * 7919) % n
end

function request()
  i = i + 1
  if i > n then i = 1 end
  if mode == "pdp" then
    if exps[i] == "1" then sent_allow = sent_allow + 1 else sent_deny = sent_deny + 1 end
  end
  local t = templates[i]
  if t then
    counter = counter + 1
    local tag = tostring((tid or 1) * 100000000 + counter)
    local path = (t.path:gsub("{n}", tag))
    local body = (t.body:gsub("{n}", tag))
    if body == "" then body = nil end
    return wrk.format(t.method, path, headers, body)
  end
  return reqs[i]
end

function response(status, hdrs, body)
  responses = responses + 1
  if mode == "status" then
    if not statuses[status] then
      bad_status = bad_status + 1
      if first_bad_status == 0 then first_bad_status = status end
    end
    return
  end
  if status ~= 200 then
    bad_status = bad_status + 1
    if first_bad_status == 0 then first_bad_status = status end
    return
  end
  if mode == "pdp" then
    if body:find('"allow":true', 1, true) then
      got_allow = got_allow + 1
      if kind and not body:find('"kind":"' .. kind .. '"', 1, true) then wrong_kind = wrong_kind + 1 end
    elseif body:find('"allow":false', 1, true) then
      got_deny = got_deny + 1
    else
      unparsed = unparsed + 1
    end
    decisions = decisions + 1
  elseif mode == "bulk" then
    local p = {}
    for v in body:gmatch('"allow":(%a+)') do p[#p + 1] = (v == "true") and "1" or "0" end
    if not patterns[table.concat(p)] then mismatch = mismatch + 1 end
    decisions = decisions + #p
  elseif mode == "cerbos" then
    local seen = 0
    for id, effect in body:gmatch('"id":"c(%d+)".-"EFFECT_(%a+)"') do
      local got = (effect == "ALLOW") and "1" or "0"
      if got ~= exps[tonumber(id)] then mismatch = mismatch + 1 end
      seen = seen + 1
    end
    if seen == 0 then unparsed = unparsed + 1 end
    checked = checked + seen
    decisions = decisions + seen
  end
end

function done(summary, latency, requests)
  local agg = {}
  for _, name in ipairs(counters) do agg[name] = 0 end
  for _, t in ipairs(threads) do
    for _, name in ipairs(counters) do
      if name == "first_bad_status" then
        if agg[name] == 0 then agg[name] = t:get(name) or 0 end
      else
        agg[name] = agg[name] + (t:get(name) or 0)
      end
    end
  end
  local e = summary.errors
  local parts = {
    string.format('"requests":%d', summary.requests),
    string.format('"duration_us":%d', summary.duration),
    string.format('"bytes":%d', summary.bytes),
    string.format('"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}',
      e.connect, e.read, e.write, e.status, e.timeout),
    string.format('"latency_us":{"mean":%.1f,"p50":%d,"p90":%d,"p95":%d,"p99":%d,"max":%d}',
      latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(95),
      latency:percentile(99), latency.max),
  }
  local c = {}
  for _, name in ipairs(counters) do c[#c + 1] = string.format('"%s":%d', name, agg[name]) end
  parts[#parts + 1] = '"checks":{' .. table.concat(c, ",") .. '}'
  io.write("WRK_RESULT {" .. table.concat(parts, ",") .. "}\n")
end
