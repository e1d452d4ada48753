# Storage layer tests (broker/storage) and the shared test library.
#
# weir_testlib: fakes and helpers any test may link - mem_storage (in-memory
# storage_ops with fault injection), fake_clock, batch_gen (self-describing
# record batches), log_model (expected log contents + read-back check) and
# plog_fixture (a partition log over mem_storage with its model).
add_library(weir_testlib STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/mem_storage.c
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/mem_storage_ctl.c
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/fake_clock.c
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/batch_gen.c
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/log_model.c
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/plog_fixture.c)
weir_target_setup(weir_testlib)
target_link_libraries(weir_testlib PUBLIC weir_storage weir_common)

foreach(t test_seg test_plog test_recover test_retention test_logmgr test_plog_compact
        test_storage_posix test_plog_restart test_plog_offline test_plog_verify
        test_logmgr_health test_plog_ckpt test_logmgr_manifest)
  weir_unit_test(${t} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/${t}.c
                 LIBS weir_testlib weir_storage)
endforeach()
