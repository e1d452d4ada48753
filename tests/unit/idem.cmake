# Idempotent producer (broker/idem): the pure state core, the producer id
# blocks and the log joins, and the partition log scan they rebuild from.
# Included from tests/CMakeLists.txt, so paths are relative to tests/.
weir_unit_test(test_idem_core
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_idem_core.c
  LIBS weir_idem weir_common)

weir_unit_test(test_plog_scan
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_plog_scan.c
  LIBS weir_testlib weir_storage)

weir_unit_test(test_idem_io
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_idem_io.c
  LIBS weir_idem weir_testlib weir_storage)
