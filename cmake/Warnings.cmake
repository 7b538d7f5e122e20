# Warnings and sanitizers for heartwheel's own targets (never for llhttp).
add_library(heartwheel_options INTERFACE)
target_compile_options(heartwheel_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wimplicit-fallthrough)
if(HEARTWHEEL_WERROR)
  target_compile_options(heartwheel_options INTERFACE -Werror)
endif()
if(HEARTWHEEL_SANITIZE)
  target_compile_options(heartwheel_options INTERFACE -fsanitize=${HEARTWHEEL_SANITIZE} -fno-omit-frame-pointer
                         -fno-sanitize-recover=all)
  target_link_options(heartwheel_options INTERFACE -fsanitize=${HEARTWHEEL_SANITIZE})
endif()
