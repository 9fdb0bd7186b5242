"""Wire-level helpers and tests: the hosted OpenAPI spec, a scripted HTTP server, traffic
recording for the hosted client, and the local server on a loopback port."""
