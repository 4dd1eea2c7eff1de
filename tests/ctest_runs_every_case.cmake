cmake_policy(SET CMP0057 NEW)
# Checks that CTest runs every Catch2 test case the test binaries hold, each in an entry of its
# own. A test name with an unbalanced bracket or a semicolon breaks the CMake list that
# catch_discover_tests builds: entries merge or split and silently run nothing.
#
# cmake -DCTEST=<ctest> -DBUILD_DIR=<dir> -DBINARIES=<a;b;...> -P ctest_runs_every_case.cmake

execute_process(COMMAND "${CTEST}" --test-dir "${BUILD_DIR}" --show-only=json-v1
                OUTPUT_VARIABLE listing RESULT_VARIABLE listed)
if(NOT listed EQUAL 0)
  message(FATAL_ERROR "ctest --show-only failed (${listed})")
endif()

set(problems "")
set(total_held 0)
foreach(binary IN LISTS BINARIES)
  set(entries_of_${binary} 0)
endforeach()

# Every entry that runs a test binary must select exactly the one test case it is named after.
string(JSON test_count LENGTH "${listing}" tests)
math(EXPR last "${test_count} - 1")
foreach(index RANGE ${last})
  string(JSON name GET "${listing}" tests ${index} name)
  string(JSON command_length ERROR_VARIABLE no_command LENGTH "${listing}" tests ${index} command)
  if(no_command)
    continue()
  endif()
  string(JSON program GET "${listing}" tests ${index} command 0)
  if(NOT program IN_LIST BINARIES)
    continue()
  endif()
  math(EXPR entries_of_${program} "${entries_of_${program}} + 1")
  set(arguments "")
  math(EXPR last_argument "${command_length} - 1")
  foreach(argument_index RANGE 1 ${last_argument})
    string(JSON argument GET "${listing}" tests ${index} command ${argument_index})
    if(argument STREQUAL "-w" OR argument STREQUAL "NoTests" OR argument STREQUAL "")
      continue()
    endif()
    list(APPEND arguments "${argument}")
  endforeach()
  execute_process(COMMAND "${program}" ${arguments} --list-test-names-only
                  OUTPUT_VARIABLE selected)
  string(STRIP "${selected}" selected)
  if(NOT selected STREQUAL name)
    string(APPEND problems "  the entry '${name}' selects '${selected}'\n")
  endif()
endforeach()

# And every test case of every binary must have its entry.
foreach(binary IN LISTS BINARIES)
  execute_process(COMMAND "${binary}" --list-test-names-only OUTPUT_VARIABLE names)
  # One name a line: count the lines.
  string(REGEX REPLACE "[^\n]" "" newlines "${names}")
  string(LENGTH "${newlines}" held)
  if(NOT held EQUAL entries_of_${binary})
    string(APPEND problems
           "  ${binary} holds ${held} test cases but CTest has ${entries_of_${binary}} entries\n")
  endif()
  math(EXPR total_held "${total_held} + ${held}")
endforeach()

if(problems)
  message(FATAL_ERROR "CTest does not run every test case:\n${problems}")
endif()
message(STATUS "CTest runs all ${total_held} test cases of ${BINARIES}")
