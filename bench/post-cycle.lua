-- post-cycle.lua -- wrk script: POST the bodies of $GPUPACK_BODIES (a file, one JSON
-- body per line) in turn, one per request, starting over at the end.
local bodies = {}
for line in io.lines(os.getenv("GPUPACK_BODIES")) do
  if #line > 0 then bodies[#bodies + 1] = line end
end
assert(#bodies > 0, "no bodies in $GPUPACK_BODIES")
local i = 0
request = function()
  i = i % #bodies + 1
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, bodies[i])
end
