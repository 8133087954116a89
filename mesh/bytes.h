/* Two byte helpers the mesh's wire forms share (mesh/msg.c, mesh/lease.c):
 * header-only, no state. */
#ifndef WEFT_MESH_BYTES_H
#define WEFT_MESH_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Whether p[0, n) is all zero; reads every byte whatever it finds. */
static inline bool mesh_all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

/* The bytes of an address of family (AF_INET: 4, else 16). */
static inline size_t mesh_family_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

#endif
