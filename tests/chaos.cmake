# The failover harness (tests/chaos/): faults against a running cluster
# under a producing and consuming workload, then a history checker.
# chaos_compose runs against deploy/docker-compose.yml (skipped where no
# Docker engine answers or in a sanitizer build); chaos_process runs the
# same scenarios against local processes. tests/run.sh picks one of the two.
# The checker's own tests are a unit test.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(WEIR_CHAOS_DIR ${CMAKE_CURRENT_SOURCE_DIR}/chaos)
add_test(NAME chaos_checker
  COMMAND ${Python3_EXECUTABLE} ${WEIR_CHAOS_DIR}/test_checker.py)
set_tests_properties(chaos_checker PROPERTIES LABELS unit TIMEOUT 60)
foreach(env compose process)
  add_test(NAME chaos_${env}
    COMMAND ${Python3_EXECUTABLE} -u ${WEIR_CHAOS_DIR}/chaos.py --env ${env}
            --json ${CMAKE_BINARY_DIR}/chaos-${env}.json)
  # the same with mutual TLS on every listener and link
  add_test(NAME chaos_${env}_tls
    COMMAND ${Python3_EXECUTABLE} -u ${WEIR_CHAOS_DIR}/chaos.py --env ${env}
            --tls --json ${CMAKE_BINARY_DIR}/chaos-${env}-tls.json)
  # and with TLS, SCRAM logins (brokers included) and ACLs
  add_test(NAME chaos_${env}_scram
    COMMAND ${Python3_EXECUTABLE} -u ${WEIR_CHAOS_DIR}/chaos.py --env ${env}
            --scram --json ${CMAKE_BINARY_DIR}/chaos-${env}-scram.json)
  set_tests_properties(chaos_${env} chaos_${env}_tls chaos_${env}_scram
    PROPERTIES
    LABELS chaos TIMEOUT 1800 RUN_SERIAL TRUE
    ENVIRONMENT "WEIR_BUILD_DIR=${CMAKE_BINARY_DIR}")
endforeach()
# The long tier (label chaos-long, outside tests/run.sh and CI): every
# default scenario and the partial partitions (one link cut, the rest
# up), local processes in network namespaces.
add_test(NAME chaos_process_long
  COMMAND ${Python3_EXECUTABLE} -u ${WEIR_CHAOS_DIR}/chaos.py --env process
          --long --json ${CMAKE_BINARY_DIR}/chaos-process-long.json)
set_tests_properties(chaos_process_long PROPERTIES
  LABELS chaos-long TIMEOUT 3600 RUN_SERIAL TRUE
  ENVIRONMENT "WEIR_BUILD_DIR=${CMAKE_BINARY_DIR}")
