# Runs one ESP-IDF component CMakeLists.txt in CMake script mode with the
# few ESP-IDF commands it calls replaced by printers, for a chosen
# IDF_TARGET and IDF_VERSION_MAJOR/MINOR (-D on the command line), the way
# ESP-IDF's own early expansion runs it. Prints one line per call:
#   probe: PRIV_REQUIRES a;b   probe: REQUIRES ...   probe: LINK <lib> PUBLIC m
# Usage: cmake -DIDF_TARGET=esp32s3 -DIDF_VERSION_MAJOR=5 -DIDF_VERSION_MINOR=3
#              [-DCONFIG_RVNE_XTENSA_ASM_KERNELS=y]
#              -DCOMPONENT=path/to/CMakeLists.txt -P probe.cmake
set(COMPONENT_LIB "__idf_probe")
function(idf_component_register)
    cmake_parse_arguments(ARG "" "" "SRCS;INCLUDE_DIRS;PRIV_INCLUDE_DIRS;REQUIRES;PRIV_REQUIRES" ${ARGN})
    message("probe: SRCS ${ARG_SRCS}")
    message("probe: INCLUDE_DIRS ${ARG_INCLUDE_DIRS}")
    message("probe: PRIV_INCLUDE_DIRS ${ARG_PRIV_INCLUDE_DIRS}")
    message("probe: REQUIRES ${ARG_REQUIRES}")
    message("probe: PRIV_REQUIRES ${ARG_PRIV_REQUIRES}")
endfunction()
function(target_link_libraries target)
    message("probe: LINK ${target} ${ARGN}")
endfunction()
function(target_compile_definitions target)
    message("probe: COMPILE_DEFINITIONS ${target} ${ARGN}")
endfunction()
function(target_compile_options target)
    message("probe: COMPILE_OPTIONS ${target} ${ARGN}")
endfunction()
include("${COMPONENT}")
