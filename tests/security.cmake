# Security tests with real processes on loopback: TLS (test_tls.py),
# malformed requests over the wire (test_malformed.py), byte-rate
# quotas (test_quota.py), replication while clients sit at the connection
# and output limits (test_limits.py), SASL/SCRAM logins and `weir user`
# (test_scram.py), the ACL call matrix (test_acl.py) and the controller
# quorum over mutual TLS (test_quorum_tls.py). Label: security.
weir_py_tests(security tls malformed quota limits scram acl quorum_tls)
