/* The host mesh at scale, simulated in one process (issue 5, "Bench rows"):
 * 1,000 hosts and 1,000,000 VM addresses in one host's forwarding table.
 *
 *   memory per route   the table (router/table.h) plus weft's per-address
 *                      record (struct mesh_loc, calloc'd one by one, and the
 *                      8-byte hash bucket mesh/mesh.c keeps per record), from
 *                      the process's RSS before and after (PSS on stderr)
 *   lookups per second rt_lookup and rt_lookup_batch on one core, over
 *                      addresses that hit a VM route and over a mix with
 *                      misses (unregistered addresses in the mesh prefix)
 *   discovery messages the protocol's rules run with the real rendezvous
 *                      hash (mesh/rendezvous.h) over 1,000 random keys
 *
 * usage: bench_mesh [--quick] [--routes N] [--hosts H]
 * Prints a Markdown table, then one JSON object per line. */
#include "bench_util.h"
#include "mesh/mesh.h"
#include "mesh/rendezvous.h"
#include "router/table.h"
#include "wg/peer.h"

#include <endian.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <sodium.h>

enum {
	REPEAT = 3,        /* lookup runs; the best counts */
	BURST = 32,        /* addresses per rt_lookup_batch, as a worker's burst */
	HOME_THREADS = 2,  /* the rendezvous part is not per core: use both */
	BUCKETS_MIN = 256, /* mesh/mesh.c's record hash starts here and doubles */
};

static size_t n_routes = 1000000, n_hosts = 1000, n_lookups = 1u << 21, n_home_addrs;
static bool quick;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	return rnd_next(&rng_state);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "bench_mesh: out of memory\n");
		exit(1);
	}
	return p;
}

/* Resident and proportional set size of this process, in bytes. */
static void mem_now(double *rss, double *pss)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	unsigned long kb;

	*rss = *pss = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Rss: %lu kB", &kb) == 1)
			*rss = (double)kb * 1024;
		else if (sscanf(line, "Pss: %lu kB", &kb) == 1)
			*pss = (double)kb * 1024;
	}
	fclose(f);
}

/* --- results: a table row and a JSON line each --- */

struct result {
	char section[32], metric[72], unit[16];
	double value;
	int decimals;
};
static struct result results[64];
static size_t n_results;

static void put(const char *section, const char *metric, double value, const char *unit,
		int decimals)
{
	struct result *r;

	if (n_results == sizeof(results) / sizeof(results[0]))
		return;
	r = &results[n_results++];

	snprintf(r->section, sizeof(r->section), "%s", section);
	snprintf(r->metric, sizeof(r->metric), "%s", metric);
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	r->value = value;
	r->decimals = decimals;
	fprintf(stderr, "  %-24s %-52s %.*f %s\n", section, metric, decimals, value, unit);
}

/* --- the table: 1 M VM addresses, weft's records as values --- */

static struct wg_peer *peers; /* the 1,000 hosts this host has tunnels to */

/* Where the VM addresses are. V6_MESH is the mesh's case: one /64 for
 * every VM (fd77::/64 with random interface IDs, as in
 * tests/integration/mesh.sh). V4_MESH: 10.0.0.0/8, distinct and scattered
 * (an odd multiplier mod 2^24). V6_SPREAD, for comparison only: random
 * addresses all over fd00::/8, so that their top bits differ. */
enum layout { V6_MESH, V4_MESH, V6_SPREAD };

static const char *const layout_name[] = {
	[V6_MESH] = "IPv6 /128 in one /64",
	[V4_MESH] = "IPv4 /32 in 10/8",
	[V6_SPREAD] = "IPv6 /128 over fd00::/8",
};

static void vm_addr(enum layout lay, size_t i, uint8_t *a)
{
	uint64_t hi = 0xfd77000000000000ull, lo = rnd();
	uint32_t v4 = 0x0a000000u | (uint32_t)((i * 0x9e3779u) & 0xffffff);

	switch (lay) {
	case V6_SPREAD:
		hi = 0xfd00000000000000ull | (rnd() >> 8);
		/* fallthrough */
	case V6_MESH:
		hi = htobe64(hi);
		lo = htobe64(lo);
		memcpy(a, &hi, 8);
		memcpy(a + 8, &lo, 8);
		break;
	case V4_MESH:
		v4 = htobe32(v4);
		memcpy(a, &v4, 4);
		break;
	}
}

/* An address in the mesh prefix that no VM has: the mix's misses. */
static void miss_addr(enum layout lay, uint8_t *a)
{
	/* IPv6: a fresh random ID (1 M of 2^64 are taken); IPv4: an index
	 * past the registered ones, so a distinct address. */
	vm_addr(lay, n_routes + rnd() % ((1u << 24) - n_routes), a);
}

struct vm_set {
	enum layout layout;
	int family;
	unsigned int len;       /* address bytes */
	uint8_t *addrs;         /* n_routes * 16 */
	struct mesh_loc **locs; /* the records, one calloc each */
	struct mesh_loc **buckets;
	size_t n_buckets;
	struct rt_table *table;
};

static size_t loc_hash(const uint8_t *a, unsigned int len, size_t n_buckets)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (unsigned int i = 0; i < len; i++)
		h = (h ^ a[i]) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 29) & (n_buckets - 1);
}

/* The records, as mesh/mesh.c keeps them: one calloc per address, chained
 * in a bucket array that doubles when it has as many records as buckets. */
static void build_records(struct vm_set *s)
{
	s->n_buckets = BUCKETS_MIN;
	s->buckets = xcalloc(s->n_buckets, sizeof(*s->buckets));
	for (size_t i = 0; i < n_routes; i++) {
		const uint8_t *a = s->addrs + i * 16;
		struct mesh_loc *l;
		size_t b;

		if (i >= s->n_buckets) {
			struct mesh_loc **nb = xcalloc(s->n_buckets * 2, sizeof(*nb));

			for (size_t k = 0; k < s->n_buckets; k++) {
				while (s->buckets[k]) {
					l = s->buckets[k];
					s->buckets[k] = l->hash_next;
					b = loc_hash(l->addr, s->len, s->n_buckets * 2);
					l->hash_next = nb[b];
					nb[b] = l;
				}
			}
			free(s->buckets);
			s->buckets = nb;
			s->n_buckets *= 2;
		}
		l = xcalloc(1, sizeof(*l));
		l->hop.kind = RT_HOP_REMOTE;
		l->peer = &peers[rnd() % n_hosts];
		l->family = s->family;
		l->cidr = (uint8_t)(s->len * 8);
		memcpy(l->addr, a, s->len);
		b = loc_hash(a, s->len, s->n_buckets);
		l->hash_next = s->buckets[b];
		s->buckets[b] = l;
		s->locs[i] = l;
	}
}

/* The forwarding table of one host: its peers' tunnel addresses (static
 * allowed IPs), the mesh prefix, and every learned VM address. */
static void build_table(struct vm_set *s)
{
	static struct rt_hop mesh_prefix = { .kind = RT_HOP_MESH };
	uint8_t p[16] = { 0 };
	int err = 0;

	s->table = rt_table_new();
	if (!s->table) {
		fprintf(stderr, "bench_mesh: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n_hosts; i++) {
		uint8_t t4[4] = { 10, 255, (uint8_t)(i >> 8), (uint8_t)i };
		uint8_t t6[16] = { 0xfd, 0x00, 0x00, 0x77 };

		t6[14] = (uint8_t)(i >> 8);
		t6[15] = (uint8_t)i;
		err |= rt_insert(s->table, AF_INET, t4, 32, &peers[i].hop);
		err |= rt_insert(s->table, AF_INET6, t6, 128, &peers[i].hop);
	}
	if (s->layout == V6_MESH) {
		p[0] = 0xfd;
		p[1] = 0x77;
		err |= rt_insert(s->table, AF_INET6, p, 64, &mesh_prefix);
	} else if (s->layout == V6_SPREAD) {
		p[0] = 0xfd;
		err |= rt_insert(s->table, AF_INET6, p, 8, &mesh_prefix);
	} else {
		p[0] = 10;
		err |= rt_insert(s->table, AF_INET, p, 8, &mesh_prefix);
	}
	for (size_t i = 0; i < n_routes; i++)
		err |= rt_insert(s->table, s->family, s->addrs + i * 16, s->locs[i]->cidr,
				 &s->locs[i]->hop);
	if (err) {
		fprintf(stderr, "bench_mesh: rt_insert failed\n");
		exit(1);
	}
}

static void free_set(struct vm_set *s)
{
	rt_table_free(s->table);
	for (size_t i = 0; i < n_routes; i++)
		free(s->locs[i]);
	free(s->locs);
	free(s->buckets);
	free(s->addrs);
}

/* --- lookups --- */

enum lookup_kind { PLAIN, BATCH, BATCH_DEREF };

/* Lookups per second over addrs[0, n_lookups) (len bytes each), best of
 * REPEAT runs. BATCH_DEREF also reads what a worker reads next: the hop's
 * kind and, for a learned address, its holder. */
static double run(const struct rt_table *t, int family, const uint8_t *addrs, unsigned int len,
		  enum lookup_kind kind, uintptr_t *sink)
{
	const void *ptrs[BURST];
	void *out[BURST];
	double best = 0;

	for (int rep = 0; rep < REPEAT; rep++) {
		uintptr_t acc = 0;
		double t0 = now_s(), dt;

		if (kind == PLAIN) {
			for (size_t i = 0; i < n_lookups; i++)
				acc += (uintptr_t)rt_lookup(t, family, addrs + i * len);
		} else {
			for (size_t i = 0; i < n_lookups; i += BURST) {
				for (size_t j = 0; j < BURST; j++)
					ptrs[j] = addrs + (i + j) * len;
				rt_lookup_batch(t, family, ptrs, BURST, out);
				for (size_t j = 0; j < BURST; j++) {
					struct rt_hop *hop = out[j];

					if (kind == BATCH_DEREF && hop && hop->kind == RT_HOP_REMOTE)
						acc += (uintptr_t)mesh_loc_from_hop(hop)->peer;
					else
						acc += (uintptr_t)hop;
				}
			}
		}
		dt = now_s() - t0;
		*sink += acc;
		if ((double)n_lookups / dt > best)
			best = (double)n_lookups / dt;
	}
	return best;
}

/* One host's table with n_routes VM addresses laid out as lay: memory
 * (unless lookups_only) and lookup rates. */
static void bench_set(enum layout lay, bool lookups_only, uintptr_t *sink)
{
	const char *sec = layout_name[lay];
	struct vm_set s = { .layout = lay };
	double rss0, pss0, rss1, pss1, rss2, pss2, t0;
	uint8_t *hit, *mix;
	char name[96];

	s.family = lay == V4_MESH ? AF_INET : AF_INET6;
	s.len = lay == V4_MESH ? 4 : 16;
	s.addrs = xcalloc(n_routes, 16);
	s.locs = xcalloc(n_routes, sizeof(*s.locs));
	for (size_t i = 0; i < n_routes; i++)
		vm_addr(lay, i, s.addrs + i * 16);
	hit = xcalloc(n_lookups, s.len);
	mix = xcalloc(n_lookups, s.len);
	for (size_t i = 0; i < n_lookups; i++) {
		memcpy(hit + i * s.len, s.addrs + (rnd() % n_routes) * 16, s.len);
		if (i % 2)
			memcpy(mix + i * s.len, s.addrs + (rnd() % n_routes) * 16, s.len);
		else
			miss_addr(lay, mix + i * s.len);
	}

	mem_now(&rss0, &pss0);
	build_records(&s);
	mem_now(&rss1, &pss1);
	t0 = now_s();
	build_table(&s);
	t0 = now_s() - t0;
	mem_now(&rss2, &pss2);
	fprintf(stderr, "bench_mesh: %s: %zu routes in the table (%zu VM addresses), inserted in "
			"%.2f s; PSS delta %.1f B per VM route\n", sec, rt_count(s.table), n_routes,
		t0, (pss2 - pss0) / (double)n_routes);

	if (!lookups_only) {
		put(sec, "memory per VM route, all (RSS delta)", (rss2 - rss0) / (double)n_routes,
		    "B", 1);
		put(sec, "  of which the forwarding table", (rss2 - rss1) / (double)n_routes, "B", 1);
		snprintf(name, sizeof(name), "  of which mesh_loc (sizeof %zu, calloc'd) + bucket",
			 sizeof(struct mesh_loc));
		put(sec, name, (rss1 - rss0) / (double)n_routes, "B", 1);
		put(sec, "  the table's share", (rss2 - rss1) / (rss2 - rss0) * 100, "%", 0);
	}
	put(sec, "rt_lookup, hits", run(s.table, s.family, hit, s.len, PLAIN, sink) / 1e6, "M/s",
	    2);
	put(sec, "rt_lookup, 50 % misses", run(s.table, s.family, mix, s.len, PLAIN, sink) / 1e6,
	    "M/s", 2);
	put(sec, "rt_lookup_batch(32), hits",
	    run(s.table, s.family, hit, s.len, BATCH, sink) / 1e6, "M/s", 2);
	put(sec, "rt_lookup_batch(32), 50 % misses",
	    run(s.table, s.family, mix, s.len, BATCH, sink) / 1e6, "M/s", 2);
	if (!lookups_only)
		put(sec, "rt_lookup_batch(32) + read the holder, hits",
		    run(s.table, s.family, hit, s.len, BATCH_DEREF, sink) / 1e6, "M/s", 2);
	free(hit);
	free(mix);
	free_set(&s);
}

/* --- discovery messages, by the protocol's rules --- */

static uint8_t (*keys)[RDV_KEY_LEN];
static uint8_t *home_addrs; /* n_home_addrs IPv6 VM addresses */
static uint32_t *homes;

struct home_job {
	size_t from, to;
};

static void *home_range(void *arg)
{
	const struct home_job *j = arg;

	for (size_t i = j->from; i < j->to; i++)
		homes[i] = (uint32_t)rdv_home((const uint8_t(*)[RDV_KEY_LEN])keys, n_hosts,
					      AF_INET6, home_addrs + i * 16, 128);
	return NULL;
}

/* A host other than not, at random. */
static size_t other_host(size_t not)
{
	size_t h = rnd() % (n_hosts - 1);

	return h >= not ? h + 1 : h;
}

static void bench_discovery(void)
{
	struct home_job jobs[HOME_THREADS];
	pthread_t th[HOME_THREADS];
	uint32_t *per_home = xcalloc(n_hosts, sizeof(*per_home));
	double uni_lookup = 0, uni_reg = 0, uni_move = 0, t0, max = 0;
	double multi = (double)(n_hosts - 1);
	size_t self_home_lookups = 0;

	keys = xcalloc(n_hosts, RDV_KEY_LEN);
	randombytes_buf(keys, n_hosts * RDV_KEY_LEN);
	home_addrs = xcalloc(n_home_addrs, 16);
	homes = xcalloc(n_home_addrs, sizeof(*homes));
	for (size_t i = 0; i < n_home_addrs; i++)
		vm_addr(V6_MESH, i, home_addrs + i * 16);
	t0 = now_s();
	for (size_t k = 0; k < HOME_THREADS; k++) {
		jobs[k].from = n_home_addrs * k / HOME_THREADS;
		jobs[k].to = n_home_addrs * (k + 1) / HOME_THREADS;
		if (pthread_create(&th[k], NULL, home_range, &jobs[k])) {
			fprintf(stderr, "bench_mesh: pthread_create failed\n");
			exit(1);
		}
	}
	for (size_t k = 0; k < HOME_THREADS; k++)
		pthread_join(th[k], NULL);
	fprintf(stderr, "bench_mesh: homes of %zu addresses among %zu hosts in %.1f s\n",
		n_home_addrs, n_hosts, now_s() - t0);

	/* Each address: registered by a random holder, looked up once by a
	 * random other host, then moved to a random third host. */
	for (size_t i = 0; i < n_home_addrs; i++) {
		size_t home = homes[i], holder = rnd() % n_hosts, asker = other_host(holder);
		size_t to = other_host(holder);

		per_home[home]++;
		/* unicast registration: 1 ANNOUNCE to the home, none when the
		 * holder is the home (mesh_local_added). */
		uni_reg += holder != home;
		/* unicast lookup: SOLICIT to the home and its ADVERT back; a home
		 * answers itself without a message (solicit()). */
		if (asker == home)
			self_home_lookups++;
		else
			uni_lookup += 2;
		/* unicast move: ANNOUNCE to the home unless the new holder is
		 * the home; then MOVED from the home to the old holder unless
		 * the old holder is the home (it learnt it from the ANNOUNCE). */
		uni_move += (to != home) + (holder != home);
	}
	for (size_t h = 0; h < n_hosts; h++)
		if (per_home[h] > max)
			max = per_home[h];

	put("discovery", "unicast: messages per lookup", uni_lookup / (double)n_home_addrs, "msg",
	    3);
	put("discovery", "multicast: messages per lookup (N-1 SOLICIT + 1 ADVERT)", multi + 1,
	    "msg", 0);
	put("discovery", "unicast: messages per registration", uni_reg / (double)n_home_addrs,
	    "msg", 3);
	put("discovery", "multicast: messages per registration (N-1 ANNOUNCE)", multi, "msg", 0);
	put("discovery", "unicast: messages per move (ANNOUNCE + MOVED)",
	    uni_move / (double)n_home_addrs, "msg", 3);
	put("discovery", "multicast: messages per move (N-1 ANNOUNCE)", multi, "msg", 0);
	put("discovery", "unicast: lookups answered by the asker (it is the home)",
	    (double)self_home_lookups / (double)n_home_addrs * 100, "%", 2);
	put("discovery", "homes: max / avg addresses per home",
	    max / ((double)n_home_addrs / (double)n_hosts), "x", 3);
	put("discovery", "homes: avg addresses per home", (double)n_home_addrs / (double)n_hosts,
	    "addr", 0);
	put("discovery", "rendezvous weights per second (2 threads)",
	    (double)n_home_addrs * (double)n_hosts / (now_s() - t0) / 1e6, "M/s", 1);
	free(per_home);
	free(keys);
	free(home_addrs);
	free(homes);
}

static void print_results(void)
{
	printf("| part | measure | value |\n|---|---|---:|\n");
	for (size_t i = 0; i < n_results; i++)
		printf("| %s | %s | %.*f %s |\n", results[i].section, results[i].metric,
		       results[i].decimals, results[i].value, results[i].unit);
	printf("\n");
	for (size_t i = 0; i < n_results; i++)
		printf("{\"bench\":\"mesh_scale\",\"part\":\"%s\",\"metric\":\"%s\",\"value\":%.*f,"
		       "\"unit\":\"%s\",\"routes\":%zu,\"hosts\":%zu,\"quick\":%s}\n",
		       results[i].section, results[i].metric, results[i].decimals, results[i].value,
		       results[i].unit, n_routes, n_hosts, quick ? "true" : "false");
}

int main(int argc, char **argv)
{
	uintptr_t sink = 0;
	cpu_set_t one;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--routes") && i + 1 < argc)
			n_routes = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--hosts") && i + 1 < argc)
			n_hosts = strtoull(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "usage: %s [--quick] [--routes N] [--hosts H]\n", argv[0]);
			return 2;
		}
	}
	if (n_routes < 1 || n_hosts < 2 || n_hosts > 65536 || n_routes >= (1u << 24)) {
		fprintf(stderr, "bench_mesh: routes 1..2^24-1, hosts 2..65536\n");
		return 2;
	}
	if (sodium_init() < 0)
		return 1;
	/* --quick: fewer lookups per run, and homes of a 10 % sample. */
	if (quick)
		n_lookups = 1u << 19;
	n_home_addrs = quick ? n_routes / 10 + 1 : n_routes;
	peers = xcalloc(n_hosts, sizeof(*peers));
	for (size_t i = 0; i < n_hosts; i++)
		peers[i].hop.kind = RT_HOP_PEER;

	/* The home computation uses both cores; the rest stays on one, so that
	 * its numbers are per core. */
	bench_discovery();
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	fprintf(stderr, "bench_mesh: sizeof(struct mesh_loc) %zu, sizeof(struct wg_peer) %zu\n",
		sizeof(struct mesh_loc), sizeof(struct wg_peer));
	bench_set(V6_MESH, false, &sink);
	bench_set(V4_MESH, false, &sink);
	bench_set(V6_SPREAD, true, &sink);
	print_results();
	fprintf(stderr, "bench_mesh: done [%zx]\n", (size_t)sink & 0xf);
	free(peers);
	return 0;
}
