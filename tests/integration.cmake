# Integration tests: real weir-broker processes and the weir CLI on
# loopback, driven by Python 3 (standard library only).
weir_py_tests(integration wire produce_consume durability config idempotence
  cluster replication failover group_coordinator groups compose
  cluster_identity quorum_config controller_follow quorum)
