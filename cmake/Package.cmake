# Installs heartwheel as a library and makes it findable three ways:
#   find_package(heartwheel CONFIG REQUIRED [COMPONENTS net ws ...])
#     -> heartwheel::<layer> per layer, heartwheel::heartwheel for all of them
#   pkg-config --cflags --libs heartwheel-net   (or heartwheel: every layer)
#   Meson: dependency('heartwheel-net') (through the .pc files)
# Layout under the prefix: include/heartwheel/<layer>/*.h,
# lib/libheartwheel-<layer>.{a,so}, lib/cmake/heartwheel/*.cmake,
# lib/pkgconfig/heartwheel{,-<layer>}.pc.
# The programs (examples, tools) are not installed: they are demos and
# measuring instruments, run from build/bin.
include(CMakePackageConfigHelpers)
# Everything installed here is the library package's (cmake/Debian.cmake).
set(CMAKE_INSTALL_DEFAULT_COMPONENT_NAME dev)

set(HEARTWHEEL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/heartwheel)

set(layer_targets "")
foreach(layer IN LISTS HEARTWHEEL_LAYERS)
  list(APPEND layer_targets heartwheel_${layer})
endforeach()
install(TARGETS ${layer_targets} heartwheel EXPORT heartwheelTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/lib/include/heartwheel
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(EXPORT heartwheelTargets NAMESPACE heartwheel:: DESTINATION ${HEARTWHEEL_CMAKE_DIR})

# Which layers each layer needs (itself included), and which private
# libraries a static build of it needs at the consumer's link: written into
# the config file so find_package(... COMPONENTS net) looks for nothing else.
set(HEARTWHEEL_COMPONENT_TABLE "")
foreach(layer IN LISTS HEARTWHEEL_LAYERS)
  heartwheel_layer_closure(${layer} below packages)
  set(closure ${layer} ${below})
  set(private "")
  foreach(package IN LISTS packages)
    if(package MATCHES "^(LIBSSL|LIBCRYPTO|HIREDIS|LIBSODIUM|ZLIB|LIBURING)$")
      list(APPEND private ${package})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES private)
  string(REPLACE ";" " " closure "${closure}")
  string(REPLACE ";" " " private "${private}")
  string(APPEND HEARTWHEEL_COMPONENT_TABLE
    "set(_heartwheel_layers_${layer} ${closure})\nset(_heartwheel_private_${layer} ${private})\n")
  set(HEARTWHEEL_PRIVATE_${layer} "${private}")
  set(HEARTWHEEL_CLOSURE_${layer} "${closure}")
endforeach()
string(REPLACE ";" " " HEARTWHEEL_ALL_LAYERS "${HEARTWHEEL_LAYERS}")
if(BUILD_SHARED_LIBS)
  set(HEARTWHEEL_STATIC 0)
else()
  set(HEARTWHEEL_STATIC 1)
endif()

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

# pkg-config: one file per layer (heartwheel-net.pc requires heartwheel-timer.pc
# and libuv, nothing more) and heartwheel.pc requiring them all. The prefix is
# only known at install time (`cmake --install --prefix P` overrides the
# configured one), so each file is written in two steps: everything else now,
# the prefix by the install script.
set(HEARTWHEEL_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
set(HEARTWHEEL_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")  # filled in at install time
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(HEARTWHEEL_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(HEARTWHEEL_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(pc_private_LIBSSL "libssl")
set(pc_private_LIBCRYPTO "libcrypto")
set(pc_private_HIREDIS "hiredis")
set(pc_private_LIBSODIUM "libsodium")
set(pc_private_ZLIB "zlib")
set(pc_private_LIBURING "liburing")
function(heartwheel_pc name description requires libs)
  set(HEARTWHEEL_PC_NAME ${name})
  set(HEARTWHEEL_PC_DESCRIPTION "${description}")
  set(HEARTWHEEL_PC_REQUIRES "${requires}")
  set(HEARTWHEEL_PC_LIBS "${libs}")
  configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/heartwheel.pc.in ${PROJECT_BINARY_DIR}/pc/${name}.pc.in @ONLY)
  install(CODE "configure_file(\"${PROJECT_BINARY_DIR}/pc/${name}.pc.in\" \"${PROJECT_BINARY_DIR}/pc/${name}.pc\" @ONLY)")
  install(FILES ${PROJECT_BINARY_DIR}/pc/${name}.pc DESTINATION ${HEARTWHEEL_PC_DIR})
endfunction()
set(all_layers "")
foreach(layer IN LISTS HEARTWHEEL_LAYERS)
  get_target_property(deps heartwheel_${layer} LINK_LIBRARIES)
  set(requires "")
  foreach(dep IN LISTS deps)
    if(dep MATCHES "^heartwheel_(.*)$")
      list(APPEND requires heartwheel-${CMAKE_MATCH_1})
    elseif(dep STREQUAL "PkgConfig::LIBUV")
      list(APPEND requires "libuv >= ${HEARTWHEEL_LIBUV_VERSION}")
    elseif(dep MATCHES "^PkgConfig::(LIBSSL|LIBCRYPTO|HIREDIS|LIBSODIUM|ZLIB|LIBURING)$" AND NOT BUILD_SHARED_LIBS)
      # A static library needs its private dependencies at the consumer's link.
      list(APPEND requires ${pc_private_${CMAKE_MATCH_1}})
    endif()
  endforeach()
  string(REPLACE ";" ", " requires "${requires}")
  set(libs "-lheartwheel-${layer}")
  if(layer STREQUAL "common")
    string(APPEND libs " -pthread")
  endif()
  heartwheel_pc(heartwheel-${layer} "heartwheel's ${layer} layer" "${requires}" "${libs}")
  list(APPEND all_layers heartwheel-${layer})
endforeach()
string(REPLACE ";" ", " all_layers "${all_layers}")
heartwheel_pc(heartwheel "every layer of heartwheel" "${all_layers}" "")
