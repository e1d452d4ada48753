# Broker unit tests beyond storage: the pure replication core
# (broker/replica). One cmocka binary per module, labelled unit.
# Included from tests/CMakeLists.txt, so paths are relative to tests/.
foreach(mod epochs leader follower scenarios)
  weir_unit_test(test_repl_${mod}
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_repl_${mod}.c
    LIBS weir_replica weir_common)
endforeach()

# Byte-rate quotas (broker/quota.c, pure: the clock is an argument).
weir_unit_test(test_quota
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_quota.c
          ${CMAKE_SOURCE_DIR}/broker/quota.c
  LIBS weir_common)

# A leader cut off from the controller (broker/cluster/cluster_watch.c,
# pure: times are arguments).
weir_unit_test(test_cluster_watch
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cluster_watch.c
          ${CMAKE_SOURCE_DIR}/broker/cluster/cluster_watch.c
  LIBS weir_common)
# Finding the active controller among quorum members
# (broker/cluster/cluster_finder.c, pure: times and the seed are inputs).
weir_unit_test(test_cluster_finder
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cluster_finder.c
          ${CMAKE_SOURCE_DIR}/broker/cluster/cluster_finder.c
          ${CMAKE_CURRENT_SOURCE_DIR}/lib/fake_clock.c
  LIBS weir_net weir_common)
# The replication adapter's failure handling (broker/replica/repl_io*.c),
# on a partition directory under /tmp and a fake clock.
weir_unit_test(test_repl_io
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_repl_io.c
  LIBS weir_broker weir_testlib)
# When an offline partition log may come back (broker/log_health.c).
weir_unit_test(test_log_health
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_log_health.c
  LIBS weir_broker weir_testlib)
