/* Dropping the capabilities weftd no longer needs once it is set up. */
#ifndef WEFT_DAEMON_CAPS_H
#define WEFT_DAEMON_CAPS_H

/* Keeps CAP_NET_ADMIN (SO_MARK, socket buffer sizes, link changes) and
 * CAP_NET_BIND_SERVICE (a listen port below 1024 set later through the
 * UAPI), CAP_NET_RAW (attached ports' NDP/ARP packet sockets) and
 * CAP_BPF (the attached ports' bypass program) in the effective and
 * permitted sets, those of them the process has, empties the inheritable
 * set, drops every other capability from the bounding set, and sets
 * no_new_privs. 0 or -errno: weftd does not start then. */
int caps_drop_to_runtime(void);

#endif
