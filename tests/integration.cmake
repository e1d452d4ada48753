# Integration tests: real weir-broker processes and the weir CLI on
# loopback, driven by Python 3 (standard library only).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(t wire produce_consume durability config idempotence cluster
    replication failover group_coordinator groups compose)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_${t}.py)
    add_test(NAME integration_${t}
      COMMAND ${Python3_EXECUTABLE} -u
              ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_${t}.py)
    set_tests_properties(integration_${t} PROPERTIES
      LABELS integration TIMEOUT 900 RUN_SERIAL TRUE
      ENVIRONMENT "WEIR_BUILD_DIR=${CMAKE_BINARY_DIR}")
  endif()
endforeach()
