# Debian packages with CPack (issue 39; docs/operating.md, CONTRIBUTING.md's
# "Packages"): `cpack -G DEB` in a build directory makes
#   heartwheel          the servers (heartwheel-chat, -push, -echo), their
#                       systemd units, man pages (help2man, from --help) and
#                       default config files (/etc/heartwheel/*.toml, conffiles)
#   libheartwheel-dev   the headers, the libraries of this build, the CMake
#                       and pkg-config files (cmake/Package.cmake's install)
# with their dependencies computed by dpkg-shlibdeps. Components: `programs`
# and `dev` (every install rule without a component is dev's).
set(CPACK_PACKAGE_NAME heartwheel)
set(CPACK_PACKAGE_VENDOR "heartwheel")
set(CPACK_PACKAGE_CONTACT "heartwheel maintainers <heartwheel@example.org>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/heartwheel/heartwheel")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_STRIP_FILES ON)  # the programs ship without debug info (lintian: unstripped-binary)

set(HEARTWHEEL_DEB_PROGRAMS "")
foreach(p heartwheel-chat heartwheel-push heartwheel-echo)
  if(TARGET ${p})
    list(APPEND HEARTWHEEL_DEB_PROGRAMS ${p})
  endif()
endforeach()

if(HEARTWHEEL_DEB_PROGRAMS)
  set(CPACK_COMPONENTS_ALL programs dev)
  install(TARGETS ${HEARTWHEEL_DEB_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          COMPONENT programs)
  # Units in /lib/systemd/system: Debian 12's place for packaged units.
  foreach(p IN LISTS HEARTWHEEL_DEB_PROGRAMS)
    install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/${p}.service
            DESTINATION /lib/systemd/system COMPONENT programs)
    string(REPLACE "heartwheel-" "" short ${p})
    install(FILES ${PROJECT_SOURCE_DIR}/packaging/config/${short}.toml
            DESTINATION /etc/heartwheel COMPONENT programs)
  endforeach()
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/heartwheel COMPONENT programs)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/libheartwheel-dev COMPONENT dev)
  # Man pages from each program's --help (help2man, Debian's), gzipped as
  # Debian wants them (-9n: no name, no time stamp: reproducible).
  find_program(HEARTWHEEL_HELP2MAN help2man)
  if(HEARTWHEEL_HELP2MAN)
    set(pages "")
    set(name_heartwheel-chat "a WebSocket chat server")
    set(name_heartwheel-push "durable delayed pushes over WebSocket and SSE")
    set(name_heartwheel-echo "a TCP echo server with every timeout on a timing wheel")
    foreach(p IN LISTS HEARTWHEEL_DEB_PROGRAMS)
      set(page ${PROJECT_BINARY_DIR}/man/${p}.1.gz)
      add_custom_command(OUTPUT ${page}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
        COMMAND ${HEARTWHEEL_HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION}
                "--name=${name_${p}}" $<TARGET_FILE:${p}> | gzip -9n > ${page}
        DEPENDS ${p} VERBATIM)
      list(APPEND pages ${page})
    endforeach()
    add_custom_target(heartwheel_man_pages ALL DEPENDS ${pages})
    install(FILES ${pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT programs)
  else()
    message(STATUS "help2man not found: the heartwheel package will have no man pages")
  endif()

  set(CPACK_DEBIAN_PROGRAMS_PACKAGE_NAME heartwheel)
  set(CPACK_DEBIAN_PROGRAMS_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PROGRAMS_PACKAGE_SECTION net)
  set(CPACK_DEBIAN_PROGRAMS_DESCRIPTION
      "servers for very many long-lived TCP connections
heartwheel-chat (WebSocket chat with channels, history, recovery and
presence, on one node or across nodes on Redis), heartwheel-push (durable
delayed pushes over WebSocket and SSE) and heartwheel-echo, with hardened
systemd units, config files in /etc/heartwheel and a restart (systemctl
reload, SIGUSR2) that refuses no connection.")
  # /etc files are conffiles (an upgrade keeps the admin's edits); the
  # maintainer scripts tell systemd about the units (deb-systemd-helper).
  set(conffiles "")
  foreach(p IN LISTS HEARTWHEEL_DEB_PROGRAMS)
    string(REPLACE "heartwheel-" "" short ${p})
    string(APPEND conffiles "/etc/heartwheel/${short}.toml\n")
  endforeach()
  file(WRITE ${PROJECT_BINARY_DIR}/debian/conffiles "${conffiles}")
  string(REPLACE ";" " " HEARTWHEEL_DEB_UNITS "${HEARTWHEEL_DEB_PROGRAMS}")
  foreach(script postinst prerm postrm)
    configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/${script}.in
                   ${PROJECT_BINARY_DIR}/debian/${script} @ONLY
                   FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                                    GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  endforeach()
  set(CPACK_DEBIAN_PROGRAMS_PACKAGE_CONTROL_EXTRA
      ${PROJECT_BINARY_DIR}/debian/conffiles ${PROJECT_BINARY_DIR}/debian/postinst
      ${PROJECT_BINARY_DIR}/debian/prerm ${PROJECT_BINARY_DIR}/debian/postrm)
  set(CPACK_DEBIAN_PROGRAMS_PACKAGE_CONTROL_STRICT_PERMISSION ON)
else()
  set(CPACK_COMPONENTS_ALL dev)
endif()

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libheartwheel-dev)
set(CPACK_DEBIAN_DEV_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libuv1-dev (>= 1.44), libssl-dev, libhiredis-dev, libsodium-dev, zlib1g-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "C++20 library for very many long-lived TCP connections
Every connection's timeouts are slots of one deadline set, one entry in
one timing wheel per event loop. Layers: timer, net, tls, http, ws, rpc,
redis, pubsub, push, auth, metrics. Headers, the static libraries, CMake
(find_package(heartwheel)) and pkg-config (heartwheel-<layer>) files.")

# Debian wants a changelog in each package, gzipped with -9n (reproducible).
foreach(pkg heartwheel libheartwheel-dev)
  string(TIMESTAMP now "%a, %d %b %Y %H:%M:%S +0000" UTC)
  file(WRITE ${PROJECT_BINARY_DIR}/debian/${pkg}/changelog.Debian
       "${pkg} (${PROJECT_VERSION}-1) unstable; urgency=medium\n\n"
       "  * Built with CPack from the heartwheel source tree (cmake/Debian.cmake).\n\n"
       " -- ${CPACK_PACKAGE_CONTACT}  ${now}\n")
  execute_process(COMMAND gzip -9nf ${PROJECT_BINARY_DIR}/debian/${pkg}/changelog.Debian)
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/debian/libheartwheel-dev/changelog.Debian.gz
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/libheartwheel-dev COMPONENT dev)
if(HEARTWHEEL_DEB_PROGRAMS)
  install(FILES ${PROJECT_BINARY_DIR}/debian/heartwheel/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/heartwheel COMPONENT programs)
endif()
include(CPack)
