# Installs heartwheel as a library and makes it findable three ways:
#   find_package(heartwheel CONFIG REQUIRED)  -> target heartwheel::heartwheel
#   pkg-config --cflags --libs heartwheel
#   Meson: dependency('heartwheel') (through the .pc file)
# Layout under the prefix: include/heartwheel/**, lib/libheartwheel.{a,so},
# lib/cmake/heartwheel/*.cmake, lib/pkgconfig/heartwheel.pc.
# The programs (examples, tools) are not installed: they are demos and
# measuring instruments, run from build/bin.
include(CMakePackageConfigHelpers)

set(HEARTWHEEL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/heartwheel)

install(TARGETS heartwheel EXPORT heartwheelTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/lib/include/heartwheel
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(EXPORT heartwheelTargets NAMESPACE heartwheel:: DESTINATION ${HEARTWHEEL_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/heartwheelConfig.cmake.in
  ${PROJECT_BINARY_DIR}/heartwheelConfig.cmake INSTALL_DESTINATION ${HEARTWHEEL_CMAKE_DIR})
# 0.x: only the same minor version is compatible (see SOVERSION in lib/).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/heartwheelConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/heartwheelConfig.cmake
              ${PROJECT_BINARY_DIR}/heartwheelConfigVersion.cmake
        DESTINATION ${HEARTWHEEL_CMAKE_DIR})

# The build tree is a package too: -Dheartwheel_DIR=<build> finds the library
# without installing it (the config file includes heartwheelTargets.cmake
# next to itself).
export(EXPORT heartwheelTargets NAMESPACE heartwheel:: FILE ${PROJECT_BINARY_DIR}/heartwheelTargets.cmake)

# pkg-config: the prefix is only known at install time (`cmake --install
# --prefix P` overrides the configured one), so the .pc file is written in two
# steps: everything else now, the prefix by the install script.
set(HEARTWHEEL_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
set(HEARTWHEEL_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")  # filled in at install time
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(HEARTWHEEL_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(HEARTWHEEL_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
# A static library needs its private dependencies at the consumer's link.
if(BUILD_SHARED_LIBS)
  set(HEARTWHEEL_PC_STATIC_REQUIRES "")
else()
  set(HEARTWHEEL_PC_STATIC_REQUIRES ", libcrypto, hiredis")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/heartwheel.pc.in ${PROJECT_BINARY_DIR}/heartwheel.pc.in @ONLY)
install(CODE "configure_file(\"${PROJECT_BINARY_DIR}/heartwheel.pc.in\" \"${PROJECT_BINARY_DIR}/heartwheel.pc\" @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/heartwheel.pc DESTINATION ${HEARTWHEEL_PC_DIR})
