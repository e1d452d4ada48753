# Security tests with real processes on loopback: TLS (test_tls.py),
# malformed requests over the wire (test_malformed.py), byte-rate
# quotas (test_quota.py) and replication while clients sit at the connection
# and output limits (test_limits.py). Label: security.
weir_py_tests(security tls malformed quota limits)
