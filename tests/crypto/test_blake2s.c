/* BLAKE2s, HMAC-BLAKE2s and WireGuard's HKDF against known answers:
 * RFC 7693 Appendix B, the BLAKE2 reference keyed KAT (blake2s_keyed_kat in
 * BLAKE2/BLAKE2 ref/blake2-kat.h: key 00..1f, input 00..n-1), and HMAC/HKDF
 * rebuilt here from the hash primitive alone. */
#include "crypto/blake2s.h"

#include "check.h"

/* Tests run once per KAT entry with the whole input, and again fed in
 * pieces of every size from 1 to 65 to exercise the block buffering. */
static void check_streaming(const uint8_t *in, size_t inlen, const uint8_t *key, size_t keylen,
			    const uint8_t want[BLAKE2S_HASH_SIZE])
{
	for (size_t step = 1; step <= BLAKE2S_BLOCK_SIZE + 1; step++) {
		struct blake2s_state s;
		uint8_t got[BLAKE2S_HASH_SIZE];

		blake2s_init_key(&s, BLAKE2S_HASH_SIZE, key, keylen);
		for (size_t off = 0; off < inlen; off += step)
			blake2s_update(&s, in + off, inlen - off < step ? inlen - off : step);
		blake2s_final(&s, got);
		if (memcmp(got, want, sizeof(got)) != 0) {
			fprintf(stderr, "streaming inlen=%zu step=%zu\n", inlen, step);
			CHECK_MEM(got, want, sizeof(got));
			return;
		}
	}
}

static void test_rfc7693_abc(void)
{
	static const char want_hex[] = "508C5E8C327C14E2E1A72BA34EEB452F"
				       "37458B209ED63A294D999B4C86675982";
	uint8_t want[32], got[32];

	hex_decode(want, sizeof(want), want_hex);
	blake2s(got, sizeof(got), "abc", 3, NULL, 0);
	CHECK_MEM(got, want, sizeof(want));
	check_streaming((const uint8_t *)"abc", 3, NULL, 0, want);
}

/* blake2s_kat[0] of the reference: unkeyed empty input. */
static void test_unkeyed_empty(void)
{
	static const char want_hex[] = "69217A3079908094E11121D042354A7C"
				       "1F55B6482CA1A51E1B250DFD1ED0EEF9";
	uint8_t want[32], got[32];

	hex_decode(want, sizeof(want), want_hex);
	blake2s(got, sizeof(got), NULL, 0, NULL, 0);
	CHECK_MEM(got, want, sizeof(want));
}

/* WireGuard's construction hash, HASH("Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s"),
 * as every implementation hard-codes it. */
static void test_wireguard_construction(void)
{
	static const char name[] = "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s";
	static const char want_hex[] = "60e26daef327efc02ec335e2a025d2d0"
				       "16eb4206f87277f52d38d1988b78cd36";
	uint8_t want[32], got[32];

	hex_decode(want, sizeof(want), want_hex);
	blake2s(got, sizeof(got), name, sizeof(name) - 1, NULL, 0);
	CHECK_MEM(got, want, sizeof(want));
}

static const struct {
	size_t n;
	const char *hash;
} keyed_kat[] = {
	{ 0, "48A8997DA407876B3D79C0D92325AD3B89CBB754D86AB71AEE047AD345FD2C49" },
	{ 1, "40D15FEE7C328830166AC3F918650F807E7E01E177258CDC0A39B11F598066F1" },
	{ 2, "6BB71300644CD3991B26CCD4D274ACD1ADEAB8B1D7914546C1198BBE9FC9D803" },
	{ 3, "1D220DBE2EE134661FDF6D9E74B41704710556F2F6E5A091B227697445DBEA6B" },
	{ 63, "C65382513F07460DA39833CB666C5ED82E61B9E998F4B0C4287CEE56C3CC9BCD" },
	{ 64, "8975B0577FD35566D750B362B0897A26C399136DF07BABABBDE6203FF2954ED4" },
	{ 65, "21FE0CEB0052BE7FB0F004187CACD7DE67FA6EB0938D927677F2398C132317A8" },
	{ 255, "3FB735061ABC519DFE979E54C1EE5BFAD0A9D858B3315BAD34BDE999EFD724DD" },
};

static void test_keyed_kat(void)
{
	uint8_t key[BLAKE2S_KEY_SIZE], in[256];

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)i;

	for (size_t t = 0; t < sizeof(keyed_kat) / sizeof(keyed_kat[0]); t++) {
		uint8_t want[32], got[32];

		hex_decode(want, sizeof(want), keyed_kat[t].hash);
		blake2s(got, sizeof(got), in, keyed_kat[t].n, key, sizeof(key));
		if (memcmp(got, want, sizeof(got)) != 0)
			fprintf(stderr, "keyed KAT n=%zu\n", keyed_kat[t].n);
		CHECK_MEM(got, want, sizeof(want));
		check_streaming(in, keyed_kat[t].n, key, sizeof(key), want);
	}
}

/* Shorter digests are a different parameter block, not a truncation. */
static void test_short_output(void)
{
	uint8_t full[32], half[16];

	blake2s(full, sizeof(full), "abc", 3, NULL, 0);
	blake2s(half, sizeof(half), "abc", 3, NULL, 0);
	CHECK(memcmp(full, half, sizeof(half)) != 0);
}

/* HMAC as RFC 2104 defines it, written out with the hash primitive. */
static void reference_hmac(uint8_t out[32], const uint8_t *in, size_t inlen, const uint8_t *key,
			   size_t keylen)
{
	uint8_t k0[BLAKE2S_BLOCK_SIZE] = { 0 }, pad[BLAKE2S_BLOCK_SIZE], inner[32];
	struct blake2s_state s;

	if (keylen > BLAKE2S_BLOCK_SIZE)
		blake2s(k0, 32, key, keylen, NULL, 0);
	else if (keylen)
		memcpy(k0, key, keylen);

	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = k0[i] ^ 0x36;
	blake2s_init(&s, 32);
	blake2s_update(&s, pad, sizeof(pad));
	blake2s_update(&s, in, inlen);
	blake2s_final(&s, inner);

	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = k0[i] ^ 0x5c;
	blake2s_init(&s, 32);
	blake2s_update(&s, pad, sizeof(pad));
	blake2s_update(&s, inner, sizeof(inner));
	blake2s_final(&s, out);
}

static void test_hmac_reference(void)
{
	uint8_t key[130], msg[200];

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(0xa0 + 3 * i);
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 11);

	for (size_t keylen = 0; keylen <= sizeof(key); keylen++) {
		for (size_t msglen = 0; msglen <= sizeof(msg); msglen += 13) {
			uint8_t got[32], want[32];

			blake2s_hmac(got, msg, msglen, key, keylen);
			reference_hmac(want, msg, msglen, key, keylen);
			if (memcmp(got, want, sizeof(got)) != 0) {
				fprintf(stderr, "hmac keylen=%zu msglen=%zu\n", keylen, msglen);
				CHECK_MEM(got, want, sizeof(got));
				return;
			}
		}
	}
}

/* Values from an independent implementation (Python 3 hmac with
 * hashlib.blake2s), key[i] = 7i + 1, covering a key longer than the block
 * (which must be hashed first). */
static void test_hmac_kat(void)
{
	static const char msg[] = "The quick brown fox jumps over the lazy dog";
	static const struct {
		size_t keylen;
		const char *mac;
	} kat[] = {
		{ 0, "f554efeb008374f662cd8d68393684ebf3b320a007115fa948a345c16b4fe8b3" },
		{ 32, "71231c1bd935d81c505efc00b687ddd649b7c9a061f6b94be2a3c3edcd50388c" },
		{ 64, "ab5d82aa4c084445c95e63bec73d4444cf676028c2f83708b9d84310757e509b" },
		{ 65, "36cbbbcf7e601d30511c5098a8983fd557449dc520f1fcd1165d39c557a91fb7" },
		{ 100, "483527a97dc9972a2361635060fcc9ffca7eb450bc6738c0704d6f55877de9cc" },
	};
	uint8_t key[100];

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(7 * i + 1);
	for (size_t t = 0; t < sizeof(kat) / sizeof(kat[0]); t++) {
		uint8_t want[32], got[32];

		hex_decode(want, sizeof(want), kat[t].mac);
		blake2s_hmac(got, msg, sizeof(msg) - 1, kat[t].keylen ? key : NULL, kat[t].keylen);
		if (memcmp(got, want, sizeof(got)) != 0)
			fprintf(stderr, "hmac kat keylen=%zu\n", kat[t].keylen);
		CHECK_MEM(got, want, sizeof(want));
	}
}

/* KDFn as the WireGuard paper writes it, composed from blake2s_hmac. */
static void reference_hkdf(uint8_t t1[32], uint8_t t2[32], uint8_t t3[32], const uint8_t *data,
			   size_t len, const uint8_t ck[32])
{
	uint8_t prk[32], buf[33];

	blake2s_hmac(prk, data, len, ck, 32);
	buf[0] = 1;
	blake2s_hmac(t1, buf, 1, prk, 32);
	memcpy(buf, t1, 32);
	buf[32] = 2;
	blake2s_hmac(t2, buf, 33, prk, 32);
	memcpy(buf, t2, 32);
	buf[32] = 3;
	blake2s_hmac(t3, buf, 33, prk, 32);
}

static void test_hkdf(void)
{
	uint8_t ck[32], data[100];

	for (size_t i = 0; i < sizeof(ck); i++)
		ck[i] = (uint8_t)(0x11 * i);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(255 - i);

	for (size_t len = 0; len <= sizeof(data); len += 25) {
		uint8_t w1[32], w2[32], w3[32], o1[32], o2[32], o3[32];

		reference_hkdf(w1, w2, w3, data, len, ck);

		blake2s_hkdf(o1, o2, o3, data, len, ck);
		CHECK_MEM(o1, w1, 32);
		CHECK_MEM(o2, w2, 32);
		CHECK_MEM(o3, w3, 32);

		memset(o1, 0, 32);
		memset(o2, 0, 32);
		blake2s_hkdf(o1, o2, NULL, data, len, ck);
		CHECK_MEM(o1, w1, 32);
		CHECK_MEM(o2, w2, 32);

		memset(o1, 0, 32);
		blake2s_hkdf(o1, NULL, NULL, data, len, ck);
		CHECK_MEM(o1, w1, 32);

		/* out3 without out2 still needs the second step internally. */
		memset(o3, 0, 32);
		blake2s_hkdf(o1, NULL, o3, data, len, ck);
		CHECK_MEM(o3, w3, 32);
	}

	/* The handshake writes the new chaining key over the old one
	 * (ck = KDF2(ck, x)); inputs must be consumed before outputs land. */
	{
		uint8_t w1[32], w2[32], w3[32], ck2[32], key[32];

		reference_hkdf(w1, w2, w3, data, 32, ck);
		memcpy(ck2, ck, 32);
		blake2s_hkdf(ck2, key, NULL, data, 32, ck2);
		CHECK_MEM(ck2, w1, 32);
		CHECK_MEM(key, w2, 32);
	}
}

int main(void)
{
	test_rfc7693_abc();
	test_unkeyed_empty();
	test_wireguard_construction();
	test_keyed_kat();
	test_short_output();
	test_hmac_reference();
	test_hmac_kat();
	test_hkdf();
	return check_result("test_blake2s");
}
