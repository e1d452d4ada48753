# Consumer group core (broker/group): scenario tests on a fake time line,
# a seeded random simulation and an out-of-memory sweep.
# Included from tests/CMakeLists.txt, so paths are relative to tests/.
weir_unit_test(test_group_core
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_group_core.c
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_group_fixture.c
  LIBS weir_group_core weir_common)

weir_unit_test(test_group_sim
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_group_sim.c
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_group_fixture.c
  LIBS weir_group_core weir_common)

weir_unit_test(test_group_failover
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_group_failover.c
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_group_fixture.c
  LIBS weir_group_core weir_common)
