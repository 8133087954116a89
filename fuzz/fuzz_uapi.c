/* libFuzzer target for the UAPI set parser, wg_uapi_parse_set, the function
 * the control socket server calls with the body of every "set=1" request.
 * Whatever parses is formatted with wg_uapi_format_get, turned back into a
 * set request and parsed again: the second parse must succeed, give the same
 * configuration (as far as the text carries it) and format to the same text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wg/log.h"
#include "wg/uapi.h"

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz_uapi: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                        \
			abort();                                                   \
		}                                                                  \
	} while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (sodium_init() < 0)
		abort();
	wg_log_set_level(WG_LOG_SILENT);
	return 0;
}

/* The lines of a get reply that a set request does not take, and the end. */
static bool get_only(const char *line, size_t n)
{
	static const char *const keys[] = {
		"last_handshake_time_sec=", "last_handshake_time_nsec=", "tx_bytes=", "rx_bytes=",
		"errno=",
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (n >= strlen(keys[i]) && !memcmp(line, keys[i], strlen(keys[i])))
			return true;
	return !n;
}

/* A get reply turned into a set body: get-only lines and the final empty
 * line dropped. */
static size_t get_to_set(const char *text, size_t len, char *out)
{
	size_t off = 0, o = 0;

	while (off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (text + off)) : len - off;

		if (!get_only(text + off, n)) {
			memcpy(out + o, text + off, n);
			out[o + n] = '\n';
			o += n + 1;
		}
		off += n + 1;
	}
	return o;
}

static void same_allowed_ip(const struct wg_allowed_ip *a, const struct wg_allowed_ip *b)
{
	CHECK(ip_prefix_equal(&a->prefix, &b->prefix));
	CHECK(a->remove == b->remove);
}

static void same_endpoint(const union wg_sockaddr *a, const union wg_sockaddr *b)
{
	CHECK(a->sa.sa_family == b->sa.sa_family);
	if (a->sa.sa_family == AF_INET) {
		CHECK(a->in4.sin_port == b->in4.sin_port);
		CHECK(a->in4.sin_addr.s_addr == b->in4.sin_addr.s_addr);
	} else {
		CHECK(a->in6.sin6_port == b->in6.sin6_port);
		CHECK(a->in6.sin6_scope_id == b->in6.sin6_scope_id);
		CHECK(!memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16));
	}
}

/* b (the re-parse) against a (the first parse), field by field as the get
 * text carries them: absent values read as zero, flags are not carried. */
static void same_config(const struct wg_device_config *a, const struct wg_device_config *b)
{
	static const uint8_t zero[WG_KEY_LEN];

	CHECK(!memcmp(a->has_private_key ? a->private_key : zero,
		      b->has_private_key ? b->private_key : zero, WG_KEY_LEN));
	CHECK((a->has_listen_port ? a->listen_port : 0) == (b->has_listen_port ? b->listen_port : 0));
	CHECK((a->has_fwmark ? a->fwmark : 0) == (b->has_fwmark ? b->fwmark : 0));
	CHECK(a->n_peers == b->n_peers);
	for (size_t i = 0; i < a->n_peers; i++) {
		const struct wg_peer_config *p = &a->peers[i], *q = &b->peers[i];

		CHECK(!memcmp(p->public_key, q->public_key, WG_KEY_LEN));
		CHECK(q->has_preshared_key);
		CHECK(!memcmp(p->has_preshared_key ? p->preshared_key : zero, q->preshared_key,
			      WG_KEY_LEN));
		CHECK(p->has_endpoint == q->has_endpoint);
		if (p->has_endpoint)
			same_endpoint(&p->endpoint, &q->endpoint);
		CHECK(q->has_keepalive);
		CHECK((p->has_keepalive ? p->persistent_keepalive : 0) == q->persistent_keepalive);
		CHECK(!q->remove && !q->update_only && !q->replace_allowed_ips);
		CHECK(p->n_allowed_ips == q->n_allowed_ips);
		for (size_t j = 0; j < p->n_allowed_ips; j++)
			same_allowed_ip(&p->allowed_ips[j], &q->allowed_ips[j]);
	}
}

static void free_text(char *text, size_t len)
{
	if (!text)
		return;
	sodium_memzero(text, len);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wg_device_config first = { 0 }, second = { 0 };
	char *text1 = NULL, *text2 = NULL, *set = NULL;
	size_t len1 = 0, len2 = 0, set_len;
	uint8_t *copy = malloc(size ? size : 1);
	int err;

	/* An exact-size copy: reading past the request trips ASan. */
	CHECK(copy);
	memcpy(copy, data, size);
	err = wg_uapi_parse_set(copy, size, &first);
	if (err) {
		/* Failure leaves the configuration cleared. */
		CHECK(!first.peers && !first.n_peers && !first.has_private_key);
		goto out;
	}
	CHECK(wg_uapi_format_get(&first, &text1, &len1) == 0);
	CHECK(strlen(text1) == len1);
	set = malloc(len1 + 1);
	CHECK(set);
	set_len = get_to_set(text1, len1, set);
	err = wg_uapi_parse_set((const uint8_t *)set, set_len, &second);
	if (err)
		fprintf(stderr, "fuzz_uapi: re-parse failed (%d) on:\n%.*s", err, (int)set_len, set);
	CHECK(err == 0);
	same_config(&first, &second);
	CHECK(wg_uapi_format_get(&second, &text2, &len2) == 0);
	CHECK(len1 == len2 && !memcmp(text1, text2, len1));
out:
	wg_config_clear(&first);
	wg_config_clear(&second);
	free_text(text1, len1);
	free_text(text2, len2);
	free_text(set, set ? len1 + 1 : 0);
	free(copy);
	return 0;
}
