-- wrk script for bench/run.sh: POST /mcp tools/list on an established MCP
-- session (protocol revisions 2025-03-26, 2025-06-18 and 2025-11-25), or
-- without one in the stateless era (2026-07-28 and any later revision),
-- over keep-alive connections.
--
-- Environment:
--   MCP_SESSION_ID      session id from initialize (required for a 2025
--                       revision; not sent in the stateless era)
--   MCP_API_KEY         sent as "Authorization: Bearer KEY" when set
--   MCP_PROTOCOL        MCP-Protocol-Version header (default 2025-06-18)
--   MCP_PATH            request path (default /mcp)
--
-- A stateless request carries what that revision requires of an HTTP
-- client (sandbox-mcp(8), "Protocol version 2026-07-28"): no
-- Mcp-Session-Id, MCP-Protocol-Version and Mcp-Method headers mirroring
-- the body, and params._meta naming the protocol version and the
-- client's capabilities.
--
-- Every response is checked: a status other than 200, or a 200 whose body
-- is not a tools/list result answering one of our ids, is counted, and done() prints the counts so
-- a broken run cannot pass for a fast one.  done() ends with one
-- machine-readable line for the driver:
--   bench: requests=N duration_us=D rps=R p50_us=A p90_us=B p99_us=C
--          max_us=M non200=K badbody=J errors=E     (all on one line)

local protocol = os.getenv("MCP_PROTOCOL")
if protocol == nil or protocol == "" then
   protocol = "2025-06-18"
end
local stateless = protocol ~= "2025-03-26" and protocol ~= "2025-06-18" and
   protocol ~= "2025-11-25"
local session = os.getenv("MCP_SESSION_ID")
if not stateless and (session == nil or session == "") then
   io.stderr:write("http.lua: MCP_SESSION_ID is not set\n")
   os.exit(2)
end
local key = os.getenv("MCP_API_KEY")
local path = os.getenv("MCP_PATH") or "/mcp"

wrk.method = "POST"
wrk.path = path
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = protocol
if stateless then
   wrk.headers["Mcp-Method"] = "tools/list"
else
   wrk.headers["Mcp-Session-Id"] = session
end
if key ~= nil and key ~= "" then
   wrk.headers["Authorization"] = "Bearer " .. key
end

-- Per-thread counters (each wrk thread has its own Lua state); setup()
-- keeps the thread handles so done() can add them up, and gives each
-- thread its number for the request ids.
local threads = {}

function setup(thread)
   if #threads >= 64 then
      io.stderr:write("http.lua: at most 64 threads\n")
      os.exit(2)
   end
   thread:set("tid", #threads)
   table.insert(threads, thread)
end

-- Every request gets its own JSON-RPC id, as a real client's would: MCP
-- forbids reusing an id within a session, and a server may key its
-- bookkeeping on it.  Ids are 10-digit numbers (thread number + 64 * n,
-- offset by 10^9) so the body length, and so the Content-Length header,
-- stays fixed and the request can be spliced together cheaply.
local head, tail = nil, nil
local n = 0
local base = 1000000000
function init(args)
   non200 = 0
   badbody = 0
   statuses = {}
   local params = "{}"
   if stateless then
      params = '{"_meta":{"io.modelcontextprotocol/protocolVersion":"' ..
         protocol .. '","io.modelcontextprotocol/clientCapabilities":{}}}'
   end
   local body = '{"jsonrpc":"2.0","id":' .. string.rep("0", 10) ..
      ',"method":"tools/list","params":' .. params .. '}'
   local req = wrk.format(nil, nil, nil, body)
   local at = string.find(req, string.rep("0", 10) .. ',"method"', 1, true)
   head = string.sub(req, 1, at - 1)
   tail = string.sub(req, at + 10)
   n = base + tid
end

function request()
   n = n + 64
   return head .. n .. tail
end

function response(status, headers, body)
   if status ~= 200 then
      non200 = non200 + 1
      statuses[status] = (statuses[status] or 0) + 1
   elseif body == nil or not string.find(body, '"tools":[', 1, true) or
      not string.find(body, '"id":1%d%d%d%d%d%d%d%d%d[,}]') then
      badbody = badbody + 1
   end
end

function done(summary, latency, requests)
   local non200_total, badbody_total = 0, 0
   local by_status = {}
   for _, t in ipairs(threads) do
      non200_total = non200_total + t:get("non200")
      badbody_total = badbody_total + t:get("badbody")
      local st = t:get("statuses")
      for code, n in pairs(st) do
         by_status[code] = (by_status[code] or 0) + n
      end
   end
   local e = summary.errors
   local errors = e.connect + e.read + e.write + e.timeout
   io.write(string.format("non-200 responses: %d", non200_total))
   for code, n in pairs(by_status) do
      io.write(string.format("  [%d x%d]", code, n))
   end
   io.write(string.format("\n200 responses without a tools list: %d\n",
                          badbody_total))
   io.write(string.format("socket errors: connect %d, read %d, write %d, timeout %d\n",
                          e.connect, e.read, e.write, e.timeout))
   local secs = summary.duration / 1e6
   io.write(string.format(
      "bench: requests=%d duration_us=%d rps=%.1f p50_us=%d p90_us=%d p99_us=%d max_us=%d non200=%d badbody=%d errors=%d\n",
      summary.requests, summary.duration, summary.requests / secs,
      latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency.max, non200_total, badbody_total, errors))
end
