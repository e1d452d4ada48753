# Security tests with real processes on loopback: TLS (test_tls.py),
# malformed requests over the wire (test_malformed.py) and byte-rate
# quotas (test_quota.py). Label: security.
weir_py_tests(security tls malformed quota)
