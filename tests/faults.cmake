# Fault tests: one per safety guarantee of docs/reliability.md, each a real
# controller and brokers on loopback under a fault (kill -9, SIGSTOP, a
# wiped or full disk, injected I/O errors, flipped bytes), checking that no
# acknowledged record is lost and no replica is wedged. Label: faults.
# Every tests/faults/test_*.py is one ctest test, faults_NAME.
file(GLOB weir_fault_tests RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}/faults
  ${CMAKE_CURRENT_SOURCE_DIR}/faults/test_*.py)
set(weir_fault_names)
foreach(f ${weir_fault_tests})
  string(REGEX REPLACE "^test_(.*)\\.py$" "\\1" n ${f})
  list(APPEND weir_fault_names ${n})
endforeach()
list(SORT weir_fault_names)
weir_py_tests(faults ${weir_fault_names})
# A test that cannot run here (no root for a mount, no shim) exits 77.
foreach(n ${weir_fault_names})
  set_tests_properties(faults_${n} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# weir_faultfs: an LD_PRELOAD shim making fsync/fdatasync or write/pwrite
# fail for files under a path prefix while a control file says so
# (tests/lib/faultfs.c). Test-only: no daemon links it. Built without the
# sanitizer flags: an ASan daemon needs its runtime first in LD_PRELOAD.
add_library(weir_faultfs SHARED ${CMAKE_CURRENT_SOURCE_DIR}/lib/faultfs.c)
target_compile_options(weir_faultfs PRIVATE ${WEIR_WARNINGS})
target_link_libraries(weir_faultfs PRIVATE ${CMAKE_DL_LIBS})
