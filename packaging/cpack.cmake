# `cpack -G DEB` in a build folder: a .deb of what `cmake --install` puts
# under /usr. Depends is computed by dpkg-shlibdeps from the libraries the
# binaries really link (libsodium23, libssl3, liburing2, libnl-3-200,
# libnl-route-3-200, libc6), so it follows the build.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The Maintainer field and the changelog's signature (packaging/CMakeLists.txt).
set(CPACK_PACKAGE_CONTACT "${WEFT_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${WEFT_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "userspace WireGuard daemon for hosts that run VMs")
# CPackDeb puts the summary in front as the synopsis: the extended
# description must not repeat it.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "weftd speaks standard WireGuard (a drop-in for wireguard-go under wg and\n wg-quick), carries the host's traffic through a TUN interface and serves\n VM NICs (tap and vhost-user ports) as their first-hop router. weft is its\n CLI. Includes a systemd unit (weftd@.service) and Prometheus metrics.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "wireguard-tools")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/postinst ${CMAKE_CURRENT_LIST_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_STRIP_FILES TRUE)
include(CPack)
