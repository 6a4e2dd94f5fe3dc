-- wrk script: every request comes from another visitor (X-Forwarded-For from a pool of 60,000
-- addresses, trusted because the bench runs with DWS_TRUSTED_PROXIES=127.0.0.1/32), so the site-wide
-- per-client budget applies to each visitor, as it does behind a real proxy.
local counter = 0
request = function()
  counter = counter + 1
  local n = counter % 60000
  wrk.headers["X-Forwarded-For"] = string.format("10.%d.%d.%d", math.floor(n / 62500), math.floor(n / 250) % 250, n % 250 + 1)
  return wrk.format(nil)
end
