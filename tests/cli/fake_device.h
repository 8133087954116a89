/* A fake device for the control tests: the port_* and mesh_*
 * calls daemon/control.c makes, over plain arrays, with the errors the real
 * device and mesh give (docs/cli.md, mesh/mesh.h). Linked before weft_wg, so
 * the real device and mesh are never pulled in. Every call takes one lock;
 * the tests read the state between requests. */
#ifndef WEFT_TESTS_CLI_FAKE_DEVICE_H
#define WEFT_TESTS_CLI_FAKE_DEVICE_H

#include <stddef.h>

#include "daemon/uapi_server.h"
#include "mesh/mesh.h"
#include "port/config.h"
#include "wg/uapi.h"

enum { FAKE_CAPACITY = 4 };

extern struct port_info fake_ports[FAKE_CAPACITY];
extern size_t fake_n;
extern unsigned int fake_adds, fake_dels;       /* port calls that changed something */
extern unsigned int fake_vm_adds, fake_vm_dels; /* vm calls that succeeded */

extern struct mesh_config fake_mesh;
/* The leases mesh_lease_add took (refused without fake_mesh's lease key). */
extern struct mesh_lease fake_leases[16];
extern size_t fake_n_leases;
extern struct mesh_stats fake_mesh_stats;
extern struct mesh_route *fake_routes;       /* malloc'd by the test, or NULL */
extern size_t fake_n_routes;

/* The UAPI ops of the fake: get, set, stats and control_command. */
extern const struct uapi_server_ops fake_ops;
/* The same without command (a daemon without weft requests). */
extern const struct uapi_server_ops fake_ops_without_command;

/* No ports, mesh off with no prefixes, no routes, counters zero. */
void fake_reset(void);
/* Whether port name holds addr (exactly). */
bool fake_port_has(const char *name, const char *cidr);

#endif
