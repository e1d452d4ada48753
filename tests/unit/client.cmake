# Client library and CLI unit tests (cmocka). The fake broker is a thread
# inside the tests that need a network peer; it also builds as a
# standalone program for trying the CLI by hand.
find_package(Threads REQUIRED)
set(CLIENT_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

foreach(t partitioner accum recset hist fmt args seqwin assignor cgrp)
  weir_unit_test(test_client_${t}
    SOURCES ${CLIENT_TEST_DIR}/test_client_${t}.c
    LIBS weir_cli weir_client)
endforeach()

foreach(t e2e cli idem cgrp_group sasl)
  weir_unit_test(test_client_${t}
    SOURCES ${CLIENT_TEST_DIR}/test_client_${t}.c
            ${CLIENT_TEST_DIR}/test_client_fake_broker.c
            ${CLIENT_TEST_DIR}/test_client_cgrp_fake.c
            ${CLIENT_TEST_DIR}/test_client_auth_fake.c
    LIBS weir_cli weir_client Threads::Threads)
endforeach()

add_executable(weir-fake-broker ${CLIENT_TEST_DIR}/test_client_fake_broker.c
  ${CLIENT_TEST_DIR}/test_client_cgrp_fake.c
  ${CLIENT_TEST_DIR}/test_client_auth_fake.c)
weir_target_setup(weir-fake-broker)
target_compile_definitions(weir-fake-broker PRIVATE FAKE_BROKER_MAIN)
target_link_libraries(weir-fake-broker PRIVATE weir_common Threads::Threads)
