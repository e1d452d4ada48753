# Fuzz targets, one per decoder (STYLE.md 2.8): tests/fuzz/fuzz_<name>.c
# with a seed corpus in tests/fuzz/corpus/<name>/ (tests/fuzz/make_corpus.py
# writes the seeds; past crashes are kept there as regression inputs).
#
# Ordinary build: each target links with replay_main.c and ctest replays its
# corpus (label fuzz-replay). WEIR_FUZZ=ON (clang): each target is a
# libFuzzer binary; ctest replays the corpus with it (fuzz-replay) and runs
# it for WEIR_FUZZ_SECONDS over a copy of the corpus in the build tree
# (label fuzz; `ctest -L '^fuzz$'` selects only these runs). New inputs and
# crash artifacts land in the build tree, never in the source tree.
#
# Included from tests/CMakeLists.txt, so paths are relative to tests/.

set(WEIR_FUZZ_TARGETS frame envelope batch config repl_epochs meta_record
    consumer_protocol scram metaprops ctl_chain ctl_log_frame ctl_hardstate
    raft_codec raft_voters plog_ckpt logmgr_manifest)
# libraries a target needs beyond weir_common
set(WEIR_FUZZ_LIBS_repl_epochs weir_replica)
set(WEIR_FUZZ_LIBS_meta_record weir_controller_core)
set(WEIR_FUZZ_LIBS_consumer_protocol weir_client)
set(WEIR_FUZZ_LIBS_ctl_chain weir_controller)
set(WEIR_FUZZ_LIBS_ctl_log_frame weir_controller)
set(WEIR_FUZZ_LIBS_ctl_hardstate weir_controller)
set(WEIR_FUZZ_LIBS_raft_codec weir_quorum_wire)
set(WEIR_FUZZ_LIBS_raft_voters weir_quorum_wire)
set(WEIR_FUZZ_LIBS_plog_ckpt weir_storage)
set(WEIR_FUZZ_LIBS_logmgr_manifest weir_storage)
set(WEIR_FUZZ_SECONDS 30 CACHE STRING
    "Seconds each libFuzzer target runs under ctest -L fuzz")
set(WEIR_FUZZ_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(WEIR_FUZZ_WORK ${CMAKE_CURRENT_BINARY_DIR}/fuzz-work)

if(WEIR_FUZZ)
  # every libFuzzer binary, without the rest of the tree
  add_custom_target(fuzz_all)
endif()
foreach(t ${WEIR_FUZZ_TARGETS})
  set(seeds ${WEIR_FUZZ_SRC}/corpus/${t})
  if(WEIR_FUZZ)
    add_executable(fuzz_${t} ${WEIR_FUZZ_SRC}/fuzz_${t}.c)
    weir_target_setup(fuzz_${t})
    target_link_libraries(fuzz_${t} PRIVATE ${WEIR_FUZZ_LIBS_${t}} weir_common)
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
    add_dependencies(fuzz_all fuzz_${t})

    # a fresh copy of the seeds for libFuzzer to add to
    set(work ${WEIR_FUZZ_WORK}/${t})
    add_test(NAME fuzz_${t}_corpus
             COMMAND ${CMAKE_COMMAND} -E copy_directory ${seeds} ${work})
    set_tests_properties(fuzz_${t}_corpus PROPERTIES
      FIXTURES_SETUP fuzz_${t}_corpus LABELS "fuzz;fuzz-replay")

    add_test(NAME fuzz_${t}_replay COMMAND fuzz_${t} -runs=0 ${work})
    set_tests_properties(fuzz_${t}_replay PROPERTIES
      FIXTURES_REQUIRED fuzz_${t}_corpus LABELS fuzz-replay TIMEOUT 120)

    math(EXPR timeout "${WEIR_FUZZ_SECONDS} + 120")
    add_test(NAME fuzz_${t}
             COMMAND fuzz_${t} -max_total_time=${WEIR_FUZZ_SECONDS}
                     -timeout=10 -print_final_stats=1
                     -artifact_prefix=${WEIR_FUZZ_WORK}/${t}-
                     ${work})
    set_tests_properties(fuzz_${t} PROPERTIES
      FIXTURES_REQUIRED fuzz_${t}_corpus LABELS fuzz TIMEOUT ${timeout})
  else()
    add_executable(fuzz_${t}_replay ${WEIR_FUZZ_SRC}/fuzz_${t}.c
                                    ${WEIR_FUZZ_SRC}/replay_main.c)
    weir_target_setup(fuzz_${t}_replay)
    target_link_libraries(fuzz_${t}_replay PRIVATE ${WEIR_FUZZ_LIBS_${t}}
                          weir_common)
    add_test(NAME fuzz_${t}_replay COMMAND fuzz_${t}_replay ${seeds})
    set_tests_properties(fuzz_${t}_replay PROPERTIES
      LABELS fuzz-replay TIMEOUT 120)
  endif()
endforeach()
