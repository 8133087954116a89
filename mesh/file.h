/* The mesh file of `weftd --mesh FILE` ([Mesh] with Mode and Prefix, as
 * mesh/text.h reads it): applied at start and again on reload. */
#ifndef WEFT_MESH_FILE_H
#define WEFT_MESH_FILE_H

#include <stddef.h>

struct wg_device;

/* Reads and parses path whole, then sets the device's mesh to it unless
 * that is what it has already (a reload that changes nothing leaves the
 * learned locations alone). Logs what it did or what is wrong, with the
 * file's line. 0 or -errno; a file that does not parse changes nothing.
 * *summary gets a line for STATUS=. */
int mesh_file_apply(const char *path, struct wg_device *dev, char *summary, size_t summary_len);

#endif
