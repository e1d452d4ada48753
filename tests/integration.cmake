# Integration tests: real weir-broker processes and the weir CLI on
# loopback, driven by Python 3 (standard library only).
weir_py_tests(integration wire produce_consume durability config idempotence
  cluster replication failover group_coordinator groups compose
  cluster_identity quorum_config controller_follow quorum quorum_recovery)
# About 20 s: the documented unsafe recovery after losing a majority of the
# controller quorum, the documented way to get it wrong, and replacing a
# member on a new host.
set_tests_properties(integration_quorum_recovery PROPERTIES TIMEOUT 240)
