# Broker unit tests beyond storage: the pure replication core
# (broker/replica). One cmocka binary per module, labelled unit.
# Included from tests/CMakeLists.txt, so paths are relative to tests/.
foreach(mod epochs leader follower scenarios)
  weir_unit_test(test_repl_${mod}
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_repl_${mod}.c
    LIBS weir_replica weir_common)
endforeach()
