/* Ed25519 against RFC 8032 section 7.1 (tests 1 and 2), and the refusals a
 * lease check relies on: a changed message, signature or key does not
 * verify, nor does a small-order public key. */
#include "crypto/ed25519.h"

#include <string.h>

#include <sodium.h>

#include "check.h"

struct vector {
	const char *seed, *pub, *msg, *sig;
};

static const struct vector rfc8032[] = {
	{ "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
	  "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
	  "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b" },
	{ "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
	  "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
	  "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00" },
};

static void test_vector(const struct vector *v)
{
	uint8_t seed[32], pub[32], want_pub[32], msg[8], sig[64], want_sig[64];
	size_t len = hex_decode(msg, sizeof(msg), v->msg);

	hex_decode(seed, 32, v->seed);
	hex_decode(want_pub, 32, v->pub);
	hex_decode(want_sig, 64, v->sig);
	ed25519_public(pub, seed);
	CHECK_MEM(pub, want_pub, 32);
	ed25519_sign(sig, msg, len, seed);
	CHECK_MEM(sig, want_sig, 64);
	CHECK(ed25519_verify(sig, msg, len, pub));

	/* Any flipped bit of the signature, the message or the key fails. */
	for (size_t i = 0; i < 64; i++) {
		sig[i] ^= 1;
		CHECK(!ed25519_verify(sig, msg, len, pub));
		sig[i] ^= 1;
	}
	msg[len] = 0;
	CHECK(!ed25519_verify(sig, msg, len + 1, pub));
	if (len) {
		msg[0] ^= 0x80;
		CHECK(!ed25519_verify(sig, msg, len, pub));
		msg[0] ^= 0x80;
	}
	pub[0] ^= 1;
	CHECK(!ed25519_verify(sig, msg, len, pub));
}

static void test_generated(void)
{
	uint8_t a[32], b[32], pa[32], pb[32], sig[64];
	static const uint8_t msg[] = "weft lease";

	ed25519_generate(a);
	ed25519_generate(b);
	CHECK(memcmp(a, b, 32) != 0);
	ed25519_public(pa, a);
	ed25519_public(pb, b);
	ed25519_sign(sig, msg, sizeof(msg), a);
	CHECK(ed25519_verify(sig, msg, sizeof(msg), pa));
	CHECK(!ed25519_verify(sig, msg, sizeof(msg), pb));
}

/* The identity point as the public key A (a small-order key): for it,
 * [S]B = R + [k]A holds for R = [s]B and S = s whatever the message, so a
 * verifier that did not refuse small-order keys would take this forgery. */
static void test_small_order_key(void)
{
	uint8_t pub[32] = { 1 }, sig[64] = { 0 }, s[32] = { 7 };
	static const uint8_t msg[] = "x";

	CHECK(crypto_scalarmult_ed25519_base_noclamp(sig, s) == 0); /* R = [7]B */
	memcpy(sig + 32, s, 32);                                     /* S = 7 */
	CHECK(!ed25519_verify(sig, msg, sizeof(msg), pub));
}

int main(void)
{
	for (size_t i = 0; i < sizeof(rfc8032) / sizeof(rfc8032[0]); i++)
		test_vector(&rfc8032[i]);
	test_generated();
	test_small_order_key();
	return check_result("test_ed25519");
}
