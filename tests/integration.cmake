# Integration tests: real weir-broker processes and the weir CLI on
# loopback, driven by Python 3 (standard library only).
weir_py_tests(integration wire produce_consume durability config idempotence
  cluster replication failover group_coordinator groups compose
  cluster_identity quorum_config controller_follow quorum quorum_recovery)
# About 16 s: the documented unsafe recovery after losing a majority of the
# controller quorum, and the documented way to get it wrong.
set_tests_properties(integration_quorum_recovery PROPERTIES TIMEOUT 240)
