/* Known answers for the handshake: the cacophony test vector for
 * Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s (haskell-cryptography/cacophony,
 * vectors/cacophony.txt) run through the generic IKpsk2 layer with its keys,
 * prologue, psk and ephemerals; and WireGuard's initial chaining key and hash,
 * HASH(construction) and HASH(that || identifier). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wg/noise_internal.h"

static int failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__,   \
				__LINE__, #cond);                                \
			failures++;                                              \
		}                                                                \
	} while (0)

/* Decodes hex into a fresh buffer; *len gets the byte count. */
static uint8_t *unhex(const char *hex, size_t *len)
{
	size_t n = strlen(hex) / 2;
	uint8_t *out = calloc(1, n ? n : 1);

	if (!out || sodium_hex2bin(out, n, hex, strlen(hex), NULL, len, NULL) != 0 || *len != n) {
		fprintf(stderr, "bad hex %s\n", hex);
		exit(1);
	}
	return out;
}

static void unhex32(uint8_t out[32], const char *hex)
{
	size_t len;
	uint8_t *b = unhex(hex, &len);

	if (len != 32) {
		fprintf(stderr, "not 32 bytes: %s\n", hex);
		exit(1);
	}
	memcpy(out, b, 32);
	free(b);
}

/* The vector, verbatim. */
static const char *const v_prologue = "4a6f686e2047616c74";
static const char *const v_psk = "54686973206973206d7920417573747269616e20706572737065637469766521";
static const char *const v_init_static = "e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1";
static const char *const v_init_ephemeral = "893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a";
static const char *const v_init_remote_static = "31e0303fd6418d2f8c0e78b91f22e8caed0fbe48656dcf4767e4834f701b8f62";
static const char *const v_resp_static = "4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893";
static const char *const v_resp_ephemeral = "bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b";

static const struct {
	const char *payload, *ciphertext;
} v_messages[] = {
	{ "4c756477696720766f6e204d69736573",
	  "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944001e21de9f98ddd8e2ad5752"
	  "7207feb56253c9c94a9e496782ecfcb2a75fbcaf1b52948cc48daefe660c62119ab5000980c84831215f2441"
	  "eba616548e832985464cf17e51ee93109008399a21f7e13f" },
	{ "4d757272617920526f746862617264",
	  "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f144808843cb765f2caef0751b8f007572"
	  "dab0322217755c0632f365717edbf34d33e87a" },
	{ "462e20412e20486179656b", "8153ca9833bc3c1b91a7e66e5f4d4f5b59bf9e64c2f20d15f0bba7" },
	{ "4361726c204d656e676572", "07af0c9c86e1b4e80f36b04ff7688d51141af3debd0332f0a705ef" },
	{ "4a65616e2d426170746973746520536179",
	  "6ab1467c0448cc78394494abaaf23afce0e234315d6e2624dcbfa8a21c1c4d073d" },
	{ "457567656e2042f6686d20766f6e2042617765726b",
	  "dfc346c0d2296ae6cf1acf6f12b8456a1dba228cf8d8b774aacf1c47fc53aa80ebc7a4c292" },
};
enum { N_MESSAGES = sizeof(v_messages) / sizeof(v_messages[0]) };

static void test_cacophony(void)
{
	uint8_t psk[32], i_s[32], i_s_pub[32], i_e[32], i_rs[32], r_s[32], r_s_pub[32], r_e[32];
	uint8_t ss[32], rs[32], re[32], re_i[32], k1[32], k2[32], k1r[32], k2r[32];
	struct wg_noise_symmetric ist, rst, ist2;
	uint8_t buf[256], out[256];
	size_t prologue_len, plen[N_MESSAGES], clen[N_MESSAGES];
	uint8_t *payload[N_MESSAGES], *ct[N_MESSAGES];
	uint8_t *prologue = unhex(v_prologue, &prologue_len);
	struct wg_noise_protocol proto = {
		.name = "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s",
		.prologue = prologue,
		.prologue_len = prologue_len,
	};

	unhex32(psk, v_psk);
	unhex32(i_s, v_init_static);
	unhex32(i_e, v_init_ephemeral);
	unhex32(i_rs, v_init_remote_static);
	unhex32(r_s, v_resp_static);
	unhex32(r_e, v_resp_ephemeral);
	for (int i = 0; i < N_MESSAGES; i++) {
		payload[i] = unhex(v_messages[i].payload, &plen[i]);
		ct[i] = unhex(v_messages[i].ciphertext, &clen[i]);
	}
	CHECK(x25519_public(i_s_pub, i_s));
	CHECK(x25519_public(r_s_pub, r_s));
	CHECK(!memcmp(r_s_pub, i_rs, 32)); /* the vector is self-consistent */

	/* Message 1, initiator: -> e, es, s, ss with the vector's ephemeral. */
	CHECK(clen[0] == WG_NOISE_IK_MSG1_OVERHEAD + plen[0]);
	CHECK(wg_noise_ik_write_msg1(&ist, buf, &proto, i_s, i_s_pub, i_rs, NULL, i_e, payload[0],
				     plen[0]));
	CHECK(!memcmp(buf, ct[0], clen[0]));

	/* The same with ss precomputed, as WireGuard's initiator does. */
	CHECK(x25519(ss, i_s, i_rs));
	memset(buf, 0, sizeof(buf));
	CHECK(wg_noise_ik_write_msg1(&ist2, buf, &proto, i_s, i_s_pub, i_rs, ss, i_e, payload[0],
				     plen[0]));
	CHECK(!memcmp(buf, ct[0], clen[0]));
	CHECK(!memcmp(&ist, &ist2, sizeof(ist)));

	/* Message 1, responder: recovers the initiator's static and payload. */
	memset(out, 0, sizeof(out));
	CHECK(wg_noise_ik_read_msg1(&rst, rs, re, out, ct[0], clen[0], &proto, r_s, r_s_pub));
	CHECK(!memcmp(rs, i_s_pub, 32));
	CHECK(!memcmp(out, payload[0], plen[0]));
	CHECK(!memcmp(&rst, &ist, sizeof(rst)));

	/* Message 2, responder: <- e, ee, se, psk. */
	CHECK(clen[1] == WG_NOISE_IK_MSG2_OVERHEAD + plen[1]);
	memset(buf, 0, sizeof(buf));
	CHECK(wg_noise_ik_write_msg2(&rst, buf, re, rs, psk, r_e, payload[1], plen[1]));
	CHECK(!memcmp(buf, ct[1], clen[1]));

	/* Message 2, initiator. A wrong psk fails and leaves the state alone. */
	{
		uint8_t bad_psk[32];
		struct wg_noise_symmetric before = ist;

		memcpy(bad_psk, psk, 32);
		bad_psk[7] ^= 1;
		CHECK(!wg_noise_ik_read_msg2(&ist, re_i, out, ct[1], clen[1], i_e, i_s, bad_psk));
		CHECK(!memcmp(&before, &ist, sizeof(ist)));
	}
	memset(out, 0, sizeof(out));
	CHECK(wg_noise_ik_read_msg2(&ist, re_i, out, ct[1], clen[1], i_e, i_s, psk));
	CHECK(!memcmp(out, payload[1], plen[1]));
	CHECK(x25519_public(buf, r_e) && !memcmp(re_i, buf, 32));
	CHECK(!memcmp(&rst, &ist, sizeof(rst)));

	/* Transport: initiator sends with the first split key, responder with
	 * the second; messages alternate, each key counting from nonce 0. */
	wg_noise_split(k1, k2, &ist);
	wg_noise_split(k1r, k2r, &rst);
	CHECK(!memcmp(k1, k1r, 32) && !memcmp(k2, k2r, 32));
	CHECK(memcmp(k1, k2, 32));
	for (int i = 2; i < N_MESSAGES; i++) {
		const uint8_t *key = (i % 2 == 0) ? k1 : k2;
		uint64_t counter = (uint64_t)(i - 2) / 2;

		CHECK(clen[i] == plen[i] + AEAD_TAG_SIZE);
		memset(buf, 0, sizeof(buf));
		CHECK(aead_seal(buf, payload[i], plen[i], NULL, 0, counter, key));
		CHECK(!memcmp(buf, ct[i], clen[i]));
		memset(out, 0, sizeof(out));
		CHECK(aead_open(out, ct[i], clen[i], NULL, 0, counter, key));
		CHECK(!memcmp(out, payload[i], plen[i]));
	}

	/* Any flipped byte of message 1 is refused by the responder. */
	for (size_t i = 0; i < clen[0]; i++) {
		memcpy(buf, ct[0], clen[0]);
		buf[i] ^= 0x80;
		CHECK(!wg_noise_ik_read_msg1(&rst, rs, re, out, buf, clen[0], &proto, r_s, r_s_pub));
	}
	/* A message 1 meant for another responder is refused. */
	{
		uint8_t other[32], other_pub[32];

		x25519_generate(other);
		CHECK(x25519_public(other_pub, other));
		CHECK(!wg_noise_ik_read_msg1(&rst, rs, re, out, ct[0], clen[0], &proto, other,
					     other_pub));
	}
	/* Truncated messages are refused, not overread. */
	CHECK(!wg_noise_ik_read_msg1(&rst, rs, re, out, ct[0], WG_NOISE_IK_MSG1_OVERHEAD - 1, &proto,
				     r_s, r_s_pub));
	CHECK(!wg_noise_ik_read_msg2(&ist, re_i, out, ct[1], WG_NOISE_IK_MSG2_OVERHEAD - 1, i_e, i_s,
				     psk));

	free(prologue);
	for (int i = 0; i < N_MESSAGES; i++) {
		free(payload[i]);
		free(ct[i]);
	}
}

static void test_short_name(void)
{
	/* Noise §5.2: a name of at most 32 bytes is used zero-padded as h. */
	static const uint8_t prologue[1] = { 0 };
	struct wg_noise_protocol p = { .name = "Noise_NN_25519_AESGCM_SHA256", .prologue = prologue };
	struct wg_noise_symmetric st;
	uint8_t expect[32] = { 0 };

	memcpy(expect, p.name, strlen(p.name));
	wg_noise_symmetric_init(&st, &p);
	CHECK(!memcmp(st.chaining_key, expect, 32));
	blake2s(expect, 32, expect, 32, NULL, 0); /* MixHash(empty prologue) */
	CHECK(!memcmp(st.hash, expect, 32));
}

static void test_wireguard_initial_state(void)
{
	/* Independent known answers (also hard-coded by other WireGuard
	 * implementations): Ci = HASH(construction), Hi = HASH(Ci || identifier). */
	uint8_t ck[32], h[32];
	struct wg_noise_symmetric st;

	unhex32(ck, "60e26daef327efc02ec335e2a025d2d016eb4206f87277f52d38d1988b78cd36");
	unhex32(h, "2211b361081ac566691243db458ad5322d9c6c662293e8b70ee19c65ba079ef3");
	wg_noise_symmetric_init(&st, &wg_noise_wireguard_protocol);
	CHECK(!memcmp(st.chaining_key, ck, 32));
	CHECK(!memcmp(st.hash, h, 32));
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	/* Both AEAD backends must give the vector's bytes. */
	aead_use(&aead_sodium);
	test_cacophony();
	aead_use(&aead_openssl);
	test_cacophony();
	test_short_name();
	test_wireguard_initial_state();
	if (failures) {
		fprintf(stderr, "test_noise_vector: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_noise_vector: ok\n");
	return 0;
}
