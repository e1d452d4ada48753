# Security tests with real processes on loopback: TLS (test_tls.py),
# malformed requests over the wire (test_malformed.py) and byte-rate
# quotas (test_quota.py). Label: security.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(t tls malformed quota)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/security/test_${t}.py)
    add_test(NAME security_${t}
      COMMAND ${Python3_EXECUTABLE} -u
              ${CMAKE_CURRENT_SOURCE_DIR}/security/test_${t}.py)
    set_tests_properties(security_${t} PROPERTIES
      LABELS security TIMEOUT 600 RUN_SERIAL TRUE
      ENVIRONMENT "WEIR_BUILD_DIR=${CMAKE_BINARY_DIR}")
  endif()
endforeach()
