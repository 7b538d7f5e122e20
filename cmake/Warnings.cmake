# Warnings and sanitizers for heartwheel's own targets (never for llhttp).
# Programs link heartwheel_options; the library takes the same flags through
# heartwheel_private_options() below, so they never reach its consumers.
add_library(heartwheel_options INTERFACE)
target_compile_options(heartwheel_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wimplicit-fallthrough)
if(HEARTWHEEL_WERROR)
  target_compile_options(heartwheel_options INTERFACE -Werror)
endif()
# GCC 12 reports false -Wrestrict in libstdc++'s string concatenation at -O2
# and -O3 (GCC bug 105329): it would fail a Release build with -Werror.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(heartwheel_options INTERFACE -Wno-restrict)
endif()
if(HEARTWHEEL_SANITIZE)
  target_compile_options(heartwheel_options INTERFACE -fsanitize=${HEARTWHEEL_SANITIZE} -fno-omit-frame-pointer
                         -fno-sanitize-recover=all)
  target_link_options(heartwheel_options INTERFACE -fsanitize=${HEARTWHEEL_SANITIZE})
endif()

# Applies heartwheel_options to `target` as PRIVATE flags, without a link edge:
# a static library's PRIVATE links still appear (as $<LINK_ONLY:...>) in its
# exported interface, which would make consumers of the installed package
# need a target that is not installed. Then HEARTWHEEL_LIBRARY_FLAGS.
function(heartwheel_private_options target)
  target_compile_options(${target} PRIVATE $<TARGET_PROPERTY:heartwheel_options,INTERFACE_COMPILE_OPTIONS>
                         ${HEARTWHEEL_LIBRARY_FLAG_LIST})
  target_link_options(${target} PRIVATE $<TARGET_PROPERTY:heartwheel_options,INTERFACE_LINK_OPTIONS>)
endfunction()
