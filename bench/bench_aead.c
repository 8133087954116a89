/* The single-core ceiling of the data path's cryptography: how many bytes
 * per second one core seals (and opens) in 1420-byte packets with each AEAD
 * backend. bench/run.sh divides tunnel throughput by this number.
 *
 *   bench_aead [SECONDS_PER_MEASUREMENT]     (default 1.0)
 *
 * One line per backend and operation, key=value, so that scripts can read it:
 *   backend=sodium op=seal len=1420 packets=N seconds=S mbytes_per_sec=M gbit_per_sec=G */
#include "bench_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/chacha20.h"

enum {
	PACKET_LEN = 1420, /* the tunnel MTU: the largest inner packet */
	BATCH = 64,        /* packets between two clock reads */
};

/* Seals (or opens) PACKET_LEN-byte packets back to back for about secs
 * seconds with a fresh counter nonce each, as the data path does. Returns
 * the packet count, 0 on any failure; *elapsed receives the time taken. */
static unsigned long run(const struct aead_backend *b, int do_open, double secs, double *elapsed)
{
	static uint8_t plain[PACKET_LEN], sealed[PACKET_LEN + AEAD_TAG_SIZE], out[PACKET_LEN];
	uint8_t key[AEAD_KEY_SIZE], nonce[AEAD_NONCE_SIZE];
	unsigned long packets = 0;
	uint64_t counter = 0;
	double start, end;

	randombytes_buf(key, sizeof(key));
	randombytes_buf(plain, sizeof(plain));
	/* open needs one valid ciphertext; it is opened under the same nonce
	 * each time, which costs exactly what a fresh one would. */
	aead_nonce_from_counter(nonce, 0);
	if (!b->seal(sealed, plain, PACKET_LEN, NULL, 0, nonce, key))
		return 0;

	start = now_s();
	do {
		for (int i = 0; i < BATCH; i++) {
			bool ok;

			if (do_open) {
				ok = b->open(out, sealed, sizeof(sealed), NULL, 0, nonce, key);
			} else {
				aead_nonce_from_counter(nonce, counter++);
				ok = b->seal(sealed, plain, PACKET_LEN, NULL, 0, nonce, key);
			}
			if (!ok)
				return 0;
		}
		packets += BATCH;
		end = now_s();
	} while (end - start < secs);
	*elapsed = end - start;
	sodium_memzero(key, sizeof(key));
	return packets;
}

int main(int argc, char **argv)
{
	const struct aead_backend *const backends[] = { &aead_sodium, &aead_openssl, &aead_wide };
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	int rc = 0;

	if (secs <= 0 || secs > 60) {
		fprintf(stderr, "usage: %s [SECONDS (0..60]]\n", argv[0]);
		return 2;
	}
	if (sodium_init() < 0) {
		fprintf(stderr, "sodium_init failed\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		if (backends[i] == &aead_wide && !chacha20_wide_supported()) {
			printf("backend=%s skipped (no AVX-512)\n", backends[i]->name);
			continue;
		}
		for (int do_open = 0; do_open < 2; do_open++) {
			double elapsed = 0, bps;
			unsigned long n = run(backends[i], do_open, secs, &elapsed);

			if (!n) {
				fprintf(stderr, "backend %s: %s failed\n", backends[i]->name,
					do_open ? "open" : "seal");
				rc = 1;
				continue;
			}
			bps = (double)n * PACKET_LEN / elapsed;
			printf("backend=%s op=%s len=%d packets=%lu seconds=%.3f "
			       "mbytes_per_sec=%.1f gbit_per_sec=%.3f\n",
			       backends[i]->name, do_open ? "open" : "seal", PACKET_LEN, n, elapsed,
			       bps / 1e6, bps * 8 / 1e9);
		}
	}
	return rc;
}
