# Controller core unit tests (controller/meta, controller/elect): cmocka,
# labelled unit, on a fake clock. test_ctl_fixture.c drives a core and keeps
# the metadata log it writes, for replay checks.
# Included from tests/CMakeLists.txt, so paths are relative to tests/.
set(CTL_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/unit)

foreach(t record image snapshot elr chain)
  weir_unit_test(test_meta_${t}
    SOURCES ${CTL_TEST_DIR}/test_meta_${t}.c
    LIBS weir_controller_core)
endforeach()

foreach(t broker elect topic isr restore auth elr offline)
  weir_unit_test(test_ctl_${t}
    SOURCES ${CTL_TEST_DIR}/test_ctl_${t}.c
            ${CTL_TEST_DIR}/test_ctl_fixture.c
            ${CMAKE_CURRENT_SOURCE_DIR}/lib/fake_clock.c
    LIBS weir_controller_core)
endforeach()

# The seeded random simulation drives the core directly (no fixture).
weir_unit_test(test_ctl_sim
  SOURCES ${CTL_TEST_DIR}/test_ctl_sim.c
  LIBS weir_controller_core)

# The weir-controller's metadata log on disk (a temporary directory).
weir_unit_test(test_ctl_log
  SOURCES ${CTL_TEST_DIR}/test_ctl_log.c
  LIBS weir_controller)

# The Raft core of the controller quorum (controller/quorum): scenario tests
# and a seeded simulation, on the fixture in tests/lib/raft_fixture.[ch]
# (N cores on virtual time, fake disks, a faulty network).
add_library(weir_raft_fixture STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/raft_fixture.c
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/raft_fixture_disk.c
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/raft_fixture_one.c)
weir_target_setup(weir_raft_fixture)
target_link_libraries(weir_raft_fixture PUBLIC weir_quorum_core weir_common)

foreach(t core elect replicate sim)
  weir_unit_test(test_raft_${t}
    SOURCES ${CTL_TEST_DIR}/test_raft_${t}.c
    LIBS weir_raft_fixture)
endforeach()
# 10,000 seeded schedules: about 2 s of CPU, several times that under ASan
# on a loaded machine; the unit tier's 60 s limit is too tight for it there
set_tests_properties(test_raft_sim PROPERTIES TIMEOUT 300)

# The Raft side of the metadata log: frame and hard-state codecs, the
# start decision (pure), the log as a Raft log (a temporary directory), and
# the quorum's rows for `weir cluster` (pure).
foreach(t log_frame start_decide log_raft quorum_view)
  weir_unit_test(test_ctl_${t}
    SOURCES ${CTL_TEST_DIR}/test_ctl_${t}.c
    LIBS weir_controller)
endforeach()
# The quorum's wire (controller/quorum/): codec and --voters parser (pure),
# and the transport over real loopback sockets on one event_base.
weir_unit_test(test_raft_codec
  SOURCES ${CTL_TEST_DIR}/test_raft_codec.c
  LIBS weir_quorum_wire)
weir_unit_test(test_raft_net
  SOURCES ${CTL_TEST_DIR}/test_raft_net.c
  LIBS weir_quorum_wire)
