# ctest "library: installed package": installs the build tree into a fresh prefix, then builds
# examples/ against it with find_package(hazefree CONFIG) and with pkg-config, runs both and
# checks that they print the same version, the project's.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DVERSION=... -DGENERATOR=... -P this
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR VERSION GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "test_installed_package: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${command}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --component library)
foreach(file include/hazefree/hazefree.hpp include/hazefree/version.hpp)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "not installed: ${file}")
  endif()
endforeach()
file(GLOB_RECURSE config_files ${prefix}/*/hazefreeConfig.cmake)
file(GLOB_RECURSE pc_files ${prefix}/*/hazefree.pc)
if(NOT config_files OR NOT pc_files)
  message(FATAL_ERROR "hazefreeConfig.cmake or hazefree.pc not installed under ${prefix}")
endif()
list(GET pc_files 0 pc_file)
get_filename_component(pc_dir ${pc_file} DIRECTORY)
get_filename_component(lib_dir ${pc_dir} DIRECTORY)

# find_package
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/config -G ${GENERATOR}
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/config)
step(${WORK_DIR}/config/hazefree_example)
set(config_output "${step_output}")

# pkg-config (the program finds the library through LD_LIBRARY_PATH: pkg-config gives no RPATH)
step(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
     ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/pkgconfig -G ${GENERATOR}
     -DHAZEFREE_EXAMPLE_PKG_CONFIG=ON -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/pkgconfig)
step(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${lib_dir} ${WORK_DIR}/pkgconfig/hazefree_example)
set(pkgconfig_output "${step_output}")

message("find_package:\n${config_output}pkg-config:\n${pkgconfig_output}")
if(NOT config_output STREQUAL pkgconfig_output)
  message(FATAL_ERROR "the two builds print different results")
endif()
string(REGEX MATCH "^hazefree ([0-9]+\\.[0-9]+\\.[0-9]+) \\(([^)]*)\\)" line "${config_output}")
if(NOT CMAKE_MATCH_1 STREQUAL VERSION OR NOT CMAKE_MATCH_2 STREQUAL VERSION)
  message(FATAL_ERROR "the example printed version '${CMAKE_MATCH_1}' / '${CMAKE_MATCH_2}', expected ${VERSION}")
endif()
if(NOT config_output MATCHES "he: 100\\.\\.163 -> 0\\.\\.255")
  message(FATAL_ERROR "the example's HE result is wrong:\n${config_output}")
endif()
