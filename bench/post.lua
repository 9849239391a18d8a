-- post.lua -- wrk script: POST the body in $GPUPACK_BODY (a file) to every request.
local f = assert(io.open(os.getenv("GPUPACK_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
