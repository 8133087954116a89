/* weft lease: the registration leases of the mesh (mesh/lease.h,
 * docs/mesh.md "Leases"), made and read without weftd: a lease key
 * (genkey, pubkey), a signed lease (sign) and what a lease says (show);
 * and given to weftd for the addresses its host holds (add: weft=lease-add).
 * The private key comes on stdin only, as wg(8) takes keys, so it is never
 * in a command line that ps shows; it is wiped when the command is done. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "cli/cli.h"
#include "mesh/lease.h"
#include "mesh/text.h"
#include "pkt/prefix.h"

enum {
	KEY_INPUT_MAX = 256,              /* a key with any line breaks around it */
	DEFAULT_VALID_SEC = 24 * 3600,
	MAX_VALID_SEC = 10 * 366 * 86400, /* ten years */
};

static const char lease_usage_text[] =
	"Usage: weft lease genkey\n"
	"       weft lease pubkey < PRIVATE-KEY\n"
	"       weft lease sign ADDRESS HOLDER [valid DURATION] [from SECONDS] < PRIVATE-KEY\n"
	"       weft lease show LEASE [key PUBLIC-KEY]\n"
	"       weft [-i IFNAME] lease add LEASE...\n"
	"\n"
	"genkey  prints a new lease key (an Ed25519 private key, base64)\n"
	"pubkey  prints the public key of the private key on stdin\n"
	"sign    prints a lease, signed with the private key on stdin: ADDRESS (one\n"
	"        VM address, IPv4 or IPv6) is held by HOLDER (the WireGuard public\n"
	"        key of its host) for DURATION (seconds, or N with s, m, h or d;\n"
	"        default 24h, at most ten years) from SECONDS since the epoch\n"
	"        (default now)\n"
	"show    prints what LEASE says; with key, whether PUBLIC-KEY signed it and it\n"
	"        is valid now (exit 1 if not)\n"
	"add     gives weftd up to 16 leases for addresses its host holds, each\n"
	"        signed by the mesh's lease key (weft mesh set lease-key), naming\n"
	"        this host and valid now (issued at most 10 s ahead); a newer one\n"
	"        replaces the one it has. With a lease key set, the other hosts\n"
	"        believe this one holds an address only with its lease. weftd\n"
	"        keeps them in memory: add them again after a restart, and renew\n"
	"        them before they expire.\n";

/* A key as wg prints keys; the text of a private one is wiped. */
static void print_key(const uint8_t key[32])
{
	char text[MESH_TEXT_KEY_LEN];

	mesh_text_key_base64(key, text);
	puts(text);
	sodium_memzero(text, sizeof(text));
}

/* The private key (seed) on stdin. 0 or the exit code, reported. */
static int read_seed(uint8_t seed[ED25519_SEED_SIZE])
{
	char *text = NULL;
	size_t len = 0;
	int ret;

	/* Unbuffered: no copy of the key stays in stdio's buffer. */
	setvbuf(stdin, NULL, _IONBF, 0);
	ret = cli_read_file("-", KEY_INPUT_MAX, &text, &len);
	if (ret)
		return cli_fail("reading the private key on stdin: %s", strerror(-ret));
	ret = len > KEY_INPUT_MAX ? -EINVAL : mesh_lease_parse_key(text, len, seed);
	sodium_memzero(text, KEY_INPUT_MAX + 1);
	free(text);
	if (ret)
		return cli_fail("the private key on stdin: not a key in base64");
	return EXIT_OK;
}

static int cmd_lease_genkey(int argc, char **argv)
{
	uint8_t seed[ED25519_SEED_SIZE];
	struct stat st;

	(void)argv;
	if (argc)
		return cli_usage_error("lease genkey takes no arguments");
	/* As wg genkey warns of a key written where others can read it. */
	if (!fstat(STDOUT_FILENO, &st) && S_ISREG(st.st_mode) && (st.st_mode & S_IRWXO))
		fputs("Warning: writing to world accessible file.\n"
		      "Consider setting the umask to 077 and trying again.\n",
		      stderr);
	ed25519_generate(seed);
	print_key(seed);
	sodium_memzero(seed, sizeof(seed));
	return EXIT_OK;
}

static int cmd_lease_pubkey(int argc, char **argv)
{
	uint8_t seed[ED25519_SEED_SIZE], pub[ED25519_PUBLIC_SIZE];
	int ret;

	(void)argv;
	if (argc)
		return cli_usage_error("lease pubkey takes no arguments; the key comes on stdin");
	ret = read_seed(seed);
	if (ret)
		return ret;
	ed25519_public(pub, seed);
	sodium_memzero(seed, sizeof(seed));
	print_key(pub);
	return EXIT_OK;
}

/* "N" seconds, or N with s, m, h or d; 1 s to ten years. */
static bool parse_duration(const char *s, uint64_t *sec)
{
	size_t n = strlen(s);
	uint64_t unit = 1, v;

	if (n > 1) {
		switch (s[n - 1]) {
		case 's': unit = 1; n--; break;
		case 'm': unit = 60; n--; break;
		case 'h': unit = 3600; n--; break;
		case 'd': unit = 86400; n--; break;
		}
	}
	if (!text_parse_u64(s, n, MAX_VALID_SEC, &v) || !v || v > MAX_VALID_SEC / unit)
		return false;
	*sec = v * unit;
	return true;
}

static int cmd_lease_sign(int argc, char **argv)
{
	uint8_t seed[ED25519_SEED_SIZE];
	uint64_t valid = DEFAULT_VALID_SEC, from = (uint64_t)time(NULL);
	struct mesh_lease l = { 0 };
	char text[MESH_LEASE_TEXT_LEN];
	struct ip_prefix a;
	const char *why = NULL;
	int ret;

	if (argc < 2 || argc % 2)
		return cli_usage_error("lease sign needs ADDRESS HOLDER [valid DURATION] [from SECONDS]");
	if (ip_prefix_parse(argv[0], strlen(argv[0]), IP_PREFIX_LEN_OPTIONAL, &a, &why))
		return cli_usage_error("lease sign: '%s': %s", argv[0], why);
	if (a.cidr != (a.family == AF_INET ? 32 : 128))
		return cli_usage_error("lease sign: '%s': a lease is for one address, not a prefix",
				       argv[0]);
	if (mesh_lease_parse_key(argv[1], strlen(argv[1]), l.holder) || sodium_is_zero(l.holder, 32))
		return cli_usage_error("lease sign: HOLDER '%s' is not a public key in base64",
				       argv[1]);
	for (int i = 2; i < argc; i += 2) {
		if (!strcmp(argv[i], "valid")) {
			if (!parse_duration(argv[i + 1], &valid))
				return cli_usage_error("lease sign: bad duration '%s'", argv[i + 1]);
		} else if (!strcmp(argv[i], "from")) {
			if (!text_parse_u64(argv[i + 1], strlen(argv[i + 1]), UINT64_MAX / 1000000000ull / 2,
					    &from))
				return cli_usage_error("lease sign: bad time '%s'", argv[i + 1]);
		} else {
			return cli_usage_error("lease sign: unknown word '%s'", argv[i]);
		}
	}
	ret = read_seed(seed);
	if (ret)
		return ret;
	l.family = a.family;
	memcpy(l.addr, a.addr, sizeof(l.addr));
	l.issued = from * 1000000000ull;
	l.expires = (from + valid) * 1000000000ull;
	mesh_lease_sign(&l, seed);
	sodium_memzero(seed, sizeof(seed));
	mesh_lease_format(&l, text);
	puts(text);
	return EXIT_OK;
}

static void print_time(const char *what, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char when[64] = "out of range";

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("  %s: %s (%llu)\n", what, when, (unsigned long long)t);
}

static int cmd_lease_show(int argc, char **argv)
{
	struct mesh_lease l;
	uint8_t key[MESH_LEASE_KEY_SIZE];
	char addr[IP_PREFIX_ADDR_STRLEN], holder[MESH_TEXT_KEY_LEN];
	const char *why = NULL;
	enum mesh_lease_verdict v;
	struct timespec now;

	if (argc != 1 && !(argc == 3 && !strcmp(argv[1], "key")))
		return cli_usage_error("lease show needs LEASE [key PUBLIC-KEY]");
	if (argc == 3 && mesh_lease_parse_key(argv[2], strlen(argv[2]), key))
		return cli_fail("lease show: '%s' is not a public key in base64", argv[2]);
	if (mesh_lease_parse(argv[0], strlen(argv[0]), &l, &why))
		return cli_fail("lease show: %s", why);
	ip_prefix_format_addr(l.family, l.addr, addr);
	mesh_text_key_base64(l.holder, holder);
	printf("lease for %s\n  holder: %s\n", addr, holder);
	print_time("issued", l.issued);
	print_time("expires", l.expires);
	if (argc == 1) {
		puts("  verdict: not checked (no key given)");
		return EXIT_OK;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	v = mesh_lease_check(&l, key,
			     (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec,
			     MESH_LEASE_SKEW_NS);
	printf("  verdict: %s\n", mesh_lease_verdict_name(v));
	return v == MESH_LEASE_VALID ? EXIT_OK : cli_fail("lease show: %s", mesh_lease_verdict_name(v));
}

static int cmd_lease_add(int argc, char **argv)
{
	struct mesh_text_lease_request *req;
	struct text_buf b = { 0 };
	const char *why = NULL;
	struct cli_reply r;
	char *body = NULL;
	size_t len = 0;
	bool ok = true;
	int ret;

	if (argc < 1)
		return cli_usage_error("lease add needs at least one LEASE");
	for (int i = 0; i < argc; i++)
		ok &= cli_add_line(&b, "lease", argv[i], false);
	ret = cli_finish_body(&b, ok, "lease add", &body, &len);
	if (ret)
		return ret;
	/* Checked here first, so a mistake is named without asking weftd. */
	req = malloc(sizeof(*req));
	ret = req ? mesh_text_parse_lease_request(body, len, req, &why) : -ENOMEM;
	free(req);
	if (ret) {
		free(body);
		return cli_fail("lease add: %s: %s", strerror(-ret), why ? why : "out of memory");
	}
	ret = cli_request("lease-add", body, "lease add", &r);
	cli_reply_free(&r);
	free(body);
	return ret;
}

static const struct cli_command lease_commands[] = {
	{ "genkey", cmd_lease_genkey, lease_usage_text, false },
	{ "pubkey", cmd_lease_pubkey, lease_usage_text, false },
	{ "sign", cmd_lease_sign, lease_usage_text, false },
	{ "show", cmd_lease_show, lease_usage_text, false },
	{ "add", cmd_lease_add, lease_usage_text, true },
};

int cli_lease(int argc, char **argv)
{
	return cli_dispatch_group("lease", lease_commands, sizeof(lease_commands) / sizeof(lease_commands[0]),
				  lease_usage_text, argc, argv);
}
