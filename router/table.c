/* The forwarding table (and WireGuard's allowed IPs): longest-prefix match
 * over IPv4 and IPv6 prefixes that map to opaque values.
 *
 * Structure, per family: a direct-indexed array of 2^S slots on the top S
 * address bits. Each slot holds a path-compressed binary trie (in the
 * spirit of the kernel's allowedips.c) of the prefixes of length >= S that
 * fall in it, and a pointer to the node of the longest prefix shorter than
 * S bits that covers the whole slot; those short prefixes live in a small
 * trie of their own. S grows with the table (8, 12, 16, 20) so that there
 * is about one prefix per slot. Why not one trie: with a million routes a
 * binary trie is ~20 levels deep and every level is a dependent cache miss
 * (~140 ns from DRAM on the development VM); the slot array replaces the
 * top S levels with one load. On that VM, for 1M routes and addresses that
 * hit a route, this took rt_lookup from ~3 M/s (tries under a fixed 2^16
 * array) to ~12 M/s for IPv4 and ~9 M/s for IPv6, and rt_lookup_batch,
 * which interleaves 32 walks so that their misses overlap, to ~21 and
 * ~19 M/s, at ~80 bytes per route (bench/bench_table). Slots point at short
 * nodes rather than copy their values so that replacing the value of ::/0
 * is O(1) instead of 2^S writes.
 *
 * Host routes (/32, /128: VM addresses, peers' own addresses) are not in
 * the tries but in an exact-match hash of their own (open addressing,
 * linear probing, at most half full), probed first: a full-length match is
 * the longest there can be. A million VM addresses inside one mesh /64
 * share every slot bit, so in a trie they all hang under one slot ~20
 * levels deep (~6 M/s batched); the hash answers with one probe, and the
 * tries stay small for the lookups that miss it.
 *
 * Keys are host-order 64-bit words (an IPv4 address sits in the top half of
 * word 0), masked to the prefix length, so prefix tests compare whole words.
 * Nodes come from a per-table pool: fixed size, no per-node malloc header,
 * reused after removal but returned to malloc only by rt_table_free. A node without a value is a branch and
 * always has two children; removal collapses branches left with one.
 *
 * Concurrency: not thread-safe by itself. The owner serialises: writers
 * (insert/remove) exclude each other and every reader. For allowed IPs that
 * is dev->lock, taken exclusively to change them and shared around lookups
 * (docs/architecture.md); the router will need the same, or to apply
 * changes while its data-path workers are quiesced. Readers (rt_lookup,
 * rt_lookup_batch, rt_walk_value, rt_count) never write, so any number may
 * run together.
 *
 * A NULL value is refused (-EINVAL): rt_lookup could not tell it from "no
 * route". rt_walk_value and rt_remove_value visit the whole table, O(routes).
 * The slot array never shrinks; IPv6 tables confined to 2000::/3 use an
 * eighth of it.
 */
#include "router/table.h"
#include "router/table_internal.h"

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pkt/siphash.h"

static struct rt_node *node_alloc(struct rt_table *t)
{
	struct rt_node *n = t->free_nodes;

	if (n) {
		t->free_nodes = n->child[0];
	} else {
		struct rt_chunk *c = t->chunks;

		if (!c || c->used == c->cap) {
			uint32_t cap = c ? c->cap * 2 : POOL_FIRST_CHUNK;

			if (cap > POOL_MAX_CHUNK)
				cap = POOL_MAX_CHUNK;
			c = malloc(sizeof(*c) + (size_t)cap * sizeof(struct rt_node));
			if (!c)
				return NULL;
			c->next = t->chunks;
			c->used = 0;
			c->cap = cap;
			t->chunks = c;
		}
		n = &c->nodes[c->used++];
	}
	memset(n, 0, sizeof(*n));
	return n;
}

static void node_free(struct rt_table *t, struct rt_node *n)
{
	n->child[0] = t->free_nodes;
	t->free_nodes = n;
}

static struct rt_family *family_of(const struct rt_table *t, int af)
{
	if (af == AF_INET)
		return (struct rt_family *)&t->fam[0];
	if (af == AF_INET6)
		return (struct rt_family *)&t->fam[1];
	return NULL;
}

static void load_key(const struct rt_family *f, const void *addr, uint64_t k[2])
{
	if (f->bits == 32) {
		uint32_t a;

		memcpy(&a, addr, 4);
		k[0] = (uint64_t)be32toh(a) << 32;
		k[1] = 0;
	} else {
		memcpy(k, addr, 16);
		k[0] = be64toh(k[0]);
		k[1] = be64toh(k[1]);
	}
}

/* The masks of the first cidr bits of each word, for cidr in 0..128. */
static inline uint64_t mask0(unsigned int cidr)
{
	return cidr >= 64 ? ~0ull : ~(~0ull >> cidr);
}

static inline uint64_t mask1(unsigned int cidr)
{
	return cidr <= 64 ? 0 : ~((~0ull >> 1) >> (cidr - 65));
}

static void mask_key(uint64_t k[2], unsigned int cidr)
{
	k[0] &= mask0(cidr);
	k[1] &= mask1(cidr);
}

static inline unsigned int common_bits(const uint64_t a[2], const uint64_t b[2])
{
	uint64_t x0 = a[0] ^ b[0], x1 = a[1] ^ b[1];

	if (x0)
		return (unsigned int)__builtin_clzll(x0);
	return x1 ? 64 + (unsigned int)__builtin_clzll(x1) : 128;
}

/* Bit i (0 = most significant) of a key; i < 128. */
static inline unsigned int bit_at(const uint64_t k[2], unsigned int i)
{
	return (unsigned int)(k[i >> 6] >> (63 - (i & 63))) & 1;
}

enum { HOSTS_MIN = 64 };

/* Keys chosen by others (VM addresses, learned mesh locations, a guest's
 * unknown destinations) must not pick their slots. An unkeyed or merely
 * keyed-mix hash can be inverted: 131,072 chosen /128s made every unrelated
 * lookup ~600 times slower (mesh hardening issue). The index is SipHash-1-3
 * of the two key words under the table's random key (pkt/siphash.h), a PRF:
 * without the key no set of addresses can be chosen to collide, and one
 * that collides by chance is as likely as for random keys (bench_table -H
 * measures both; bench/README.md, "Host routes under chosen keys"). */
static inline size_t host_hash(const struct rt_hosts *h, uint64_t k0, uint64_t k1)
{
	return (size_t)siphash13_2w(&h->key, k0, k1) & h->mask;
}

/* The probe from slot i, the key's home. */
static inline void *host_find_from(const struct rt_hosts *h, size_t i, uint64_t k0, uint64_t k1)
{
	for (;; i = (i + 1) & h->mask) {
		const struct rt_host *e = &h->slots[i];

		if (!e->value)
			return NULL;
		if (e->key[0] == k0 && e->key[1] == k1)
			return e->value;
	}
}

static inline void *host_find(const struct rt_hosts *h, uint64_t k0, uint64_t k1)
{
	return host_find_from(h, host_hash(h, k0, k1), k0, k1);
}

static void host_place(struct rt_hosts *h, const uint64_t k[2], void *value)
{
	size_t i = host_hash(h, k[0], k[1]);

	while (h->slots[i].value)
		i = (i + 1) & h->mask;
	h->slots[i] = (struct rt_host){ { k[0], k[1] }, value };
}

/* h's entries whose value is not drop, in a new hash of cap slots. */
static int hosts_copy(const struct rt_hosts *h, size_t cap, const void *drop, size_t *dropped,
		      struct rt_hosts *n)
{
	*n = (struct rt_hosts){ .mask = cap - 1, .key = h->key, .changes = h->changes };
	n->slots = calloc(cap, sizeof(*n->slots));
	if (!n->slots)
		return -ENOMEM;
	for (size_t i = 0; h->slots && i <= h->mask; i++) {
		const struct rt_host *e = &h->slots[i];

		if (!e->value)
			continue;
		if (e->value == drop) {
			(*dropped)++;
			continue;
		}
		host_place(n, e->key, e->value);
		n->count++;
	}
	return 0;
}

/* Rebuilds h with cap slots, keeping the entries whose value is not drop. */
static int hosts_rebuild(struct rt_hosts *h, size_t cap, const void *drop, size_t *dropped)
{
	struct rt_hosts n;

	if (hosts_copy(h, cap, drop, dropped, &n))
		return -ENOMEM;
	free(h->slots);
	*h = n;
	h->changes++;
	return 0;
}

static int host_insert(struct rt_hosts *h, const uint64_t k[2], void *value)
{
	size_t unused = 0;

	if (h->slots) {
		for (size_t i = host_hash(h, k[0], k[1]); h->slots[i].value; i = (i + 1) & h->mask) {
			if (h->slots[i].key[0] == k[0] && h->slots[i].key[1] == k[1]) {
				h->slots[i].value = value;
				h->changes++;
				return 0;
			}
		}
	}
	if ((h->count + 1) * 2 > (h->slots ? h->mask + 1 : 0) &&
	    hosts_rebuild(h, h->slots ? (h->mask + 1) * 2 : HOSTS_MIN, NULL, &unused))
		return -ENOMEM;
	host_place(h, k, value);
	h->count++;
	h->changes++;
	return 0;
}

/* Backward-shift deletion: the entries after the hole that hash at or
 * before it move up, so probing never needs tombstones. */
static int host_remove(struct rt_hosts *h, const uint64_t k[2], const void *value)
{
	size_t i, j;

	if (!h->count)
		return -ENOENT;
	for (i = host_hash(h, k[0], k[1]);; i = (i + 1) & h->mask) {
		if (!h->slots[i].value)
			return -ENOENT;
		if (h->slots[i].key[0] == k[0] && h->slots[i].key[1] == k[1])
			break;
	}
	if (value && h->slots[i].value != value)
		return -ENOENT;
	for (j = (i + 1) & h->mask; h->slots[j].value; j = (j + 1) & h->mask) {
		size_t home = host_hash(h, h->slots[j].key[0], h->slots[j].key[1]);

		/* j's entry may fill the hole at i unless its home lies in (i, j]. */
		if (((j - home) & h->mask) >= ((j - i) & h->mask)) {
			h->slots[i] = h->slots[j];
			i = j;
		}
	}
	h->slots[i].value = NULL;
	h->count--;
	h->changes++;
	return 0;
}

/* The deepest node with a value whose prefix covers k, or best. bits is a
 * constant at each call so that the IPv4 walk never touches word 1. */
static inline __attribute__((always_inline)) const struct rt_node *
find(const struct rt_node *n, uint64_t k0, uint64_t k1, unsigned int bits,
     const struct rt_node *best)
{
	while (n) {
		uint64_t diff = (k0 ^ n->key[0]) & mask0(n->cidr);

		if (bits == 128)
			diff |= (k1 ^ n->key[1]) & mask1(n->cidr);
		if (diff)
			break;
		if (n->value)
			best = n;
		if (n->cidr == bits)
			break;
		if (bits == 32 || n->cidr < 64)
			n = n->child[(k0 >> (63 - n->cidr)) & 1];
		else
			n = n->child[(k1 >> (127 - n->cidr)) & 1];
	}
	return best;
}

void *rt_lookup(const struct rt_table *t, int family, const void *addr)
{
	const struct rt_node *best;
	const struct rt_slot *s;

	if (family == AF_INET) {
		uint32_t a;
		uint64_t k0;

		if (!t->fam[0].slots)
			return NULL;
		memcpy(&a, addr, 4);
		k0 = (uint64_t)be32toh(a) << 32;
		s = &t->fam[0].slots[k0 >> (64 - t->fam[0].slot_bits)];
		if (t->fam[0].hosts.count) {
			void *v;

			__builtin_prefetch(s); /* loads while the hash is computed */
			v = host_find(&t->fam[0].hosts, k0, 0);
			if (v)
				return v;
		}
		best = find(s->root, k0, 0, 32, s->short_node);
	} else if (family == AF_INET6) {
		uint64_t k[2];

		if (!t->fam[1].slots)
			return NULL;
		memcpy(k, addr, 16);
		k[0] = be64toh(k[0]);
		k[1] = be64toh(k[1]);
		s = &t->fam[1].slots[k[0] >> (64 - t->fam[1].slot_bits)];
		if (t->fam[1].hosts.count) {
			void *v;

			__builtin_prefetch(s);
			v = host_find(&t->fam[1].hosts, k[0], k[1]);
			if (v)
				return v;
		}
		best = find(s->root, k[0], k[1], 128, s->short_node);
	} else {
		return NULL;
	}
	return best ? best->value : NULL;
}

/* One burst of rt_lookup_batch: the walks advance one node per round, each
 * prefetching its next node, so that up to BATCH cache misses are in
 * flight at once instead of one. */
static inline __attribute__((always_inline)) void
find_batch(const struct rt_family *f, unsigned int bits, const void *const *addrs,
	   size_t m, void **out)
{
	const struct rt_node *n[BATCH], *best[BATCH];
	const struct rt_slot *s[BATCH];
	void *hit[BATCH];
	uint64_t k0[BATCH], k1[BATCH];
	size_t home[BATCH];
	size_t i, active;

	for (i = 0; i < m; i++) {
		if (bits == 32) {
			uint32_t a;

			memcpy(&a, addrs[i], 4);
			k0[i] = (uint64_t)be32toh(a) << 32;
			k1[i] = 0;
		} else {
			memcpy(&k0[i], addrs[i], 8);
			memcpy(&k1[i], (const uint8_t *)addrs[i] + 8, 8);
			k0[i] = be64toh(k0[i]);
			k1[i] = be64toh(k1[i]);
		}
		if (f->hosts.count) {
			home[i] = host_hash(&f->hosts, k0[i], k1[i]);
			__builtin_prefetch(&f->hosts.slots[home[i]]);
		}
		s[i] = &f->slots[k0[i] >> (64 - f->slot_bits)];
		__builtin_prefetch(s[i]);
	}
	for (i = 0; i < m; i++) {
		void *v = f->hosts.count ? host_find_from(&f->hosts, home[i], k0[i], k1[i]) : NULL;

		/* A host route answers at once: no walk. */
		n[i] = v ? NULL : s[i]->root;
		best[i] = v ? NULL : s[i]->short_node;
		hit[i] = v;
		if (n[i])
			__builtin_prefetch(n[i]);
	}
	do {
		active = 0;
		for (i = 0; i < m; i++) {
			const struct rt_node *x = n[i];
			uint64_t diff;

			if (!x)
				continue;
			diff = (k0[i] ^ x->key[0]) & mask0(x->cidr);
			if (bits == 128)
				diff |= (k1[i] ^ x->key[1]) & mask1(x->cidr);
			if (diff) {
				n[i] = NULL;
				continue;
			}
			if (x->value)
				best[i] = x;
			if (x->cidr == bits) {
				n[i] = NULL;
				continue;
			}
			if (bits == 32 || x->cidr < 64)
				x = x->child[(k0[i] >> (63 - x->cidr)) & 1];
			else
				x = x->child[(k1[i] >> (127 - x->cidr)) & 1];
			n[i] = x;
			if (x) {
				__builtin_prefetch(x);
				active++;
			}
		}
	} while (active);
	for (i = 0; i < m; i++)
		out[i] = hit[i] ? hit[i] : best[i] ? best[i]->value : NULL;
}

void rt_lookup_batch(const struct rt_table *t, int family, const void *const *addrs,
		     size_t n, void **out)
{
	const struct rt_family *f = family_of(t, family);

	for (size_t done = 0; done < n; done += BATCH) {
		size_t m = n - done < BATCH ? n - done : BATCH;

		if (!f || !f->slots)
			memset(out + done, 0, m * sizeof(*out));
		else if (f->bits == 32)
			find_batch(f, 32, addrs + done, m, out + done);
		else
			find_batch(f, 128, addrs + done, m, out + done);
	}
}

static const struct rt_node *find_short(const struct rt_family *f, const uint64_t k[2])
{
	if (f->bits == 32)
		return find(f->short_root, k[0], 0, 32, NULL);
	return find(f->short_root, k[0], k[1], 128, NULL);
}

/* Puts (k, cidr) -> value in the trie at *link. *node gets the prefix's
 * node; *added whether the prefix is new (not a replacement). */
static int trie_insert(struct rt_table *t, struct rt_node **link, const uint64_t k[2],
		       uint8_t cidr, void *value, struct rt_node **node, bool *added)
{
	struct rt_node *n, *leaf, *branch;
	unsigned int c;

	while ((n = *link) && n->cidr <= cidr && common_bits(n->key, k) >= n->cidr) {
		if (n->cidr == cidr) {
			*added = !n->value;
			n->value = value;
			*node = n;
			return 0;
		}
		link = &n->child[bit_at(k, n->cidr)];
	}

	leaf = node_alloc(t);
	if (!leaf)
		return -ENOMEM;
	leaf->key[0] = k[0];
	leaf->key[1] = k[1];
	leaf->cidr = cidr;
	leaf->value = value;
	*node = leaf;
	*added = true;
	if (!n) {
		*link = leaf;
		return 0;
	}

	/* n is longer than the new prefix or diverges from it, so c < n->cidr. */
	c = common_bits(n->key, k);
	if (c >= cidr) {
		leaf->child[bit_at(n->key, cidr)] = n;
		*link = leaf;
		return 0;
	}
	branch = node_alloc(t);
	if (!branch) {
		node_free(t, leaf);
		return -ENOMEM;
	}
	branch->key[0] = k[0];
	branch->key[1] = k[1];
	mask_key(branch->key, c);
	branch->cidr = (uint8_t)c;
	branch->child[bit_at(k, c)] = leaf;
	branch->child[bit_at(n->key, c)] = n;
	*link = branch;
	return 0;
}

/* A node without a value keeps its place only while it joins two children. */
static void collapse(struct rt_table *t, struct rt_node **link)
{
	struct rt_node *n = *link;

	if (!n || n->value || (n->child[0] && n->child[1]))
		return;
	*link = n->child[0] ? n->child[0] : n->child[1];
	node_free(t, n);
}

/* Points every slot under short prefix n at n unless a longer short
 * prefix already covers it (whose whole block is then skipped). */
static void short_spread(struct rt_family *f, const struct rt_node *n)
{
	unsigned int i = slot_of(f, n->key), end = i + (1u << (f->slot_bits - n->cidr));

	while (i < end) {
		const struct rt_node *cur = f->slots[i].short_node;

		if (cur && cur->cidr > n->cidr) {
			i = slot_of(f, cur->key) + (1u << (f->slot_bits - cur->cidr));
		} else {
			f->slots[i].short_node = n;
			i++;
		}
	}
}

/* Hands the slots of a removed short prefix n to the prefix that covered it. */
static void short_unspread(struct rt_family *f, const struct rt_node *n,
			   const struct rt_node *cover)
{
	unsigned int i = slot_of(f, n->key), end = i + (1u << (f->slot_bits - n->cidr));

	for (; i < end; i++)
		if (f->slots[i].short_node == n)
			f->slots[i].short_node = cover;
}

/* Adds or replaces a prefix in f; k is masked to cidr. */
static int family_insert(struct rt_table *t, struct rt_family *f, const uint64_t k[2],
			 uint8_t cidr, void *value)
{
	struct rt_node **root, *node;
	bool added;
	int ret;

	if (cidr < f->slot_bits)
		root = &f->short_root;
	else
		root = &f->slots[slot_of(f, k)].root;
	ret = trie_insert(t, root, k, cidr, value, &node, &added);
	if (ret)
		return ret;
	if (added) {
		f->count++;
		if (cidr < f->slot_bits)
			short_spread(f, node);
	}
	return 0;
}

/* Returns every node of a trie to the pool. */
static void trie_free(struct rt_table *t, struct rt_node *n)
{
	while (n) {
		struct rt_node *next = n->child[1];

		trie_free(t, n->child[0]);
		node_free(t, n);
		n = next;
	}
}

static void family_clear(struct rt_table *t, struct rt_family *f)
{
	if (f->slots)
		for (unsigned int s = 0; s < n_slots(f); s++)
			trie_free(t, f->slots[s].root);
	trie_free(t, f->short_root);
	free(f->slots);
	f->slots = NULL;
	f->short_root = NULL;
	f->count = 0;
}

static void hosts_free(struct rt_hosts *h)
{
	free(h->slots);
	*h = (struct rt_hosts){ .key = h->key, .changes = h->changes + 1 };
}

static int copy_trie(struct rt_table *t, struct rt_family *to, const struct rt_node *n)
{
	for (; n; n = n->child[1]) {
		int ret;

		if (n->value && (ret = family_insert(t, to, n->key, n->cidr, n->value)))
			return ret;
		if ((ret = copy_trie(t, to, n->child[0])))
			return ret;
	}
	return 0;
}

/* Rebuilds f with 2^slot_bits slots: a copy first, so that running out
 * of memory half way leaves f as it was (and still correct). */
static int family_resize(struct rt_table *t, struct rt_family *f, uint8_t slot_bits)
{
	struct rt_family nf = { .af = f->af, .bits = f->bits, .slot_bits = slot_bits,
				.hosts = f->hosts };
	int ret = -ENOMEM;

	nf.slots = calloc((size_t)1 << slot_bits, sizeof(*nf.slots));
	if (!nf.slots)
		return ret;
	if ((ret = copy_trie(t, &nf, f->short_root)))
		goto out;
	for (unsigned int s = 0; s < n_slots(f); s++)
		if ((ret = copy_trie(t, &nf, f->slots[s].root)))
			goto out;
	family_clear(t, f);
	nf.grow_at = n_slots(&nf);
	*f = nf;
	return 0;
out:
	nf.hosts = (struct rt_hosts){ 0 }; /* still f's */
	family_clear(t, &nf);
	return ret;
}

int rt_insert(struct rt_table *t, int family, const void *addr, uint8_t cidr, void *value)
{
	struct rt_family *f = family_of(t, family);
	uint64_t k[2];
	int ret;

	if (!f || cidr > f->bits || !value)
		return -EINVAL;
	if (!f->slots) {
		f->slots = calloc((size_t)1 << SLOT_BITS_MIN, sizeof(*f->slots));
		if (!f->slots)
			return -ENOMEM;
		f->slot_bits = SLOT_BITS_MIN;
		f->grow_at = n_slots(f);
	}
	load_key(f, addr, k);
	mask_key(k, cidr);
	if (cidr == f->bits)
		return host_insert(&f->hosts, k, value);
	ret = family_insert(t, f, k, cidr, value);
	/* Growing is only for speed: if it fails the table stays correct,
	 * and the next try waits for the table to double. */
	if (!ret && f->count > f->grow_at && f->slot_bits < SLOT_BITS_MAX &&
	    family_resize(t, f, f->slot_bits + SLOT_BITS_STEP))
		f->grow_at = f->count * 2;
	return ret;
}

void *rt_get(const struct rt_table *t, int family, const void *addr, uint8_t cidr)
{
	const struct rt_family *f = family_of(t, family);
	const struct rt_node *n;
	uint64_t k[2];

	if (!f || cidr > f->bits || !f->slots)
		return NULL;
	load_key(f, addr, k);
	mask_key(k, cidr);
	if (cidr == f->bits)
		return f->hosts.count ? host_find(&f->hosts, k[0], k[1]) : NULL;
	n = cidr < f->slot_bits ? f->short_root : f->slots[slot_of(f, k)].root;
	while (n && n->cidr < cidr && common_bits(n->key, k) >= n->cidr)
		n = n->child[bit_at(k, n->cidr)];
	if (!n || n->cidr != cidr || common_bits(n->key, k) < cidr)
		return NULL;
	return n->value;
}

int rt_remove(struct rt_table *t, int family, const void *addr, uint8_t cidr, const void *value)
{
	struct rt_family *f = family_of(t, family);
	struct rt_node **link, **parent = NULL, *n;
	const struct rt_node *cover = NULL;
	uint64_t k[2];

	if (!f || cidr > f->bits || !f->slots)
		return -ENOENT;
	load_key(f, addr, k);
	mask_key(k, cidr);
	if (cidr == f->bits)
		return host_remove(&f->hosts, k, value);
	link = cidr < f->slot_bits ? &f->short_root : &f->slots[slot_of(f, k)].root;
	while ((n = *link) && n->cidr < cidr && common_bits(n->key, k) >= n->cidr) {
		if (n->value)
			cover = n;
		parent = link;
		link = &n->child[bit_at(k, n->cidr)];
	}
	if (!n || n->cidr != cidr || common_bits(n->key, k) < cidr || !n->value)
		return -ENOENT;
	if (value && n->value != value)
		return -ENOENT;

	if (cidr < f->slot_bits)
		short_unspread(f, n, cover);
	n->value = NULL;
	f->count--;
	/* Only n and its parent can have been left a branch with < 2 children. */
	collapse(t, link);
	if (parent)
		collapse(t, parent);
	return 0;
}

/* Clears value from every node under *link, children first so that each
 * node sees its final children when it decides whether to collapse. */
static size_t prune(struct rt_table *t, struct rt_node **link, const void *value)
{
	struct rt_node *n = *link;
	size_t removed;

	if (!n)
		return 0;
	removed = prune(t, &n->child[0], value) + prune(t, &n->child[1], value);
	if (n->value == value) {
		n->value = NULL;
		removed++;
	}
	collapse(t, link);
	return removed;
}

size_t rt_remove_value(struct rt_table *t, const void *value)
{
	size_t total = 0;

	if (!value)
		return 0;
	for (int i = 0; i < 2; i++) {
		struct rt_family *f = &t->fam[i];
		size_t removed;

		if (!f->slots)
			continue;
		if (f->hosts.count) {
			size_t dropped = 0;

			/* Rebuilt in place of deleting while iterating (entries
			 * shift); on -ENOMEM the old one is dropped from in turn. */
			if (hosts_rebuild(&f->hosts, f->hosts.mask + 1, value, &dropped)) {
				bool again = true;

				while (again) { /* shifts may wrap entries behind j */
					again = false;
					for (size_t j = 0; j <= f->hosts.mask; j++) {
						uint64_t k[2] = { f->hosts.slots[j].key[0],
								  f->hosts.slots[j].key[1] };

						if (f->hosts.slots[j].value == value &&
						    !host_remove(&f->hosts, k, value)) {
							dropped++;
							again = true;
						}
					}
				}
			}
			total += dropped;
		}
		removed = prune(t, &f->short_root, value);
		if (removed) {
			/* Short nodes may be gone: point every slot afresh. */
			for (unsigned int s = 0; s < n_slots(f); s++) {
				uint64_t k[2] = { (uint64_t)s << (64 - f->slot_bits), 0 };

				f->slots[s].short_node = find_short(f, k);
			}
		}
		for (unsigned int s = 0; s < n_slots(f); s++)
			removed += prune(t, &f->slots[s].root, value);
		f->count -= removed;
		total += removed;
	}
	return total;
}

struct rt_grow {
	const struct rt_table *table;
	int family;
	struct rt_hosts hosts; /* the table's, in more slots */
};

struct rt_grow *rt_grow_prepare(const struct rt_table *t, int family, size_t room)
{
	const struct rt_family *f = family_of(t, family);
	size_t cap, want;
	size_t unused = 0;
	struct rt_grow *g;

	if (!f)
		return NULL;
	cap = f->hosts.slots ? f->hosts.mask + 1 : 0;
	/* host_insert rebuilds when an entry would fill more than half. */
	if ((f->hosts.count + room) * 2 <= cap)
		return NULL;
	for (want = cap ? cap * 2 : HOSTS_MIN; (f->hosts.count + room) * 2 > want; want *= 2)
		;
	g = malloc(sizeof(*g));
	if (!g)
		return NULL;
	g->table = t;
	g->family = family;
	if (hosts_copy(&f->hosts, want, NULL, &unused, &g->hosts)) {
		free(g);
		return NULL;
	}
	return g;
}

void rt_grow_commit(struct rt_table *t, struct rt_grow *g)
{
	struct rt_family *f;

	if (!g)
		return;
	f = family_of(t, g->family);
	if (g->table == t && f->hosts.changes == g->hosts.changes) {
		free(f->hosts.slots);
		f->hosts = g->hosts;
	} else {
		free(g->hosts.slots);
	}
	free(g);
}

size_t rt_count(const struct rt_table *t)
{
	return t->fam[0].count + t->fam[1].count + t->fam[0].hosts.count + t->fam[1].hosts.count;
}

struct rt_table *rt_table_new(void)
{
	struct rt_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->fam[0].bits = 32;
	t->fam[0].af = AF_INET;
	t->fam[1].bits = 128;
	t->fam[1].af = AF_INET6;
	for (int i = 0; i < 2; i++)
		siphash_key_random(&t->fam[i].hosts.key);
	return t;
}

void rt_table_free(struct rt_table *t)
{
	struct rt_chunk *c, *next;

	if (!t)
		return;
	for (c = t->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(t->fam[0].slots);
	free(t->fam[1].slots);
	hosts_free(&t->fam[0].hosts);
	hosts_free(&t->fam[1].hosts);
	free(t);
}
