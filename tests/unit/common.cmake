# Unit tests for common/: one cmocka binary per module, labelled unit.
# Included from tests/CMakeLists.txt, so paths are relative to tests/.
foreach(mod err buf crc32c frame batch batch_bad rpc cfg names mem trace
    scram acl authz topic_config metaprops decimal)
  weir_unit_test(test_common_${mod}
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_common_${mod}.c
    LIBS weir_common)
endforeach()
