"""Settings for bench/api_load.sh: production settings, with the rate limit raised above the load.

The limiter still runs on every request (one Redis round trip each), so its cost is in the numbers;
only its budget is raised, since the load generator is a single client address.
"""

from dws_project.settings import *  # noqa: F403

DWS_RATE_LIMIT_PER_SECOND = 1_000_000
DWS_RATE_LIMIT_BURST = 1_000_000
