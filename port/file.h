/* The ports file of `weftd --ports FILE`: applied at start, and again on
 * every reload (SIGHUP, `systemctl reload`) without touching what did not
 * change, so tunnels and unchanged ports keep running. */
#ifndef WEFT_PORT_FILE_H
#define WEFT_PORT_FILE_H

#include <stddef.h>

#include "port/config.h"

struct wg_device;

/* The names of the ports the file gave the device last time: those a
 * reload may remove. Ports added at run time with `weft port add` and not
 * named by the file are never touched. */
struct ports_file {
	const char *path;
	char (*owned)[PORT_NAME_MAX];
	size_t n_owned;
};

/* Makes the device's ports match the file: ports it lists differently are
 * replaced, missing ones added, and ports an earlier version of the file
 * listed but this one does not are removed. A port's addresses are the
 * file's only when it creates the port: after that they are VM
 * registration's (weft vm), kept through every reload, a replacement too. Parsed whole first: a file
 * that does not parse, or a port that would take an address of a port the
 * file does not own, changes nothing. Logs every change and error (with the
 * file's line). 0, or -errno when something was not applied (a device call
 * failing midway leaves what was done before it). *summary, when not NULL,
 * gets "N added, N replaced, N removed, N unchanged" or the error. */
int ports_file_apply(struct ports_file *pf, struct wg_device *dev, char *summary,
		     size_t summary_len);

void ports_file_free(struct ports_file *pf);

#endif
