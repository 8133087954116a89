/* The SIGBUS guard on guest memory (tun/guestmem.c): a watched shared
 * mapping whose file is truncated reads as zeros afterwards, from this
 * thread and from another, the owner is told once per region (flag,
 * count, eventfd), and the mapping of the region's file is gone; after
 * unwatch, or for memory never watched, a SIGBUS is still fatal. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tun/guestmem.h"

enum { PAGE = 4096, PAGES = 16, LEN = PAGE * PAGES };

static int failures;

#define CHECK(cond, ...)                                               \
	do {                                                           \
		if (!(cond)) {                                         \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                  \
			fputc('\n', stderr);                           \
			failures++;                                    \
		}                                                      \
	} while (0)

/* A shared mapping of a new memfd of LEN bytes, every byte 0xab. */
static volatile uint8_t *map_file(int *fd)
{
	uint8_t *p;

	*fd = memfd_create("test-guestmem", MFD_CLOEXEC);
	if (*fd < 0 || ftruncate(*fd, LEN) < 0) {
		perror("memfd");
		exit(1);
	}
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(p, 0xab, LEN);
	return p;
}

static bool maps_file(const volatile void *p)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi)
			found = strstr(line, "test-guestmem") != NULL;
	}
	if (f)
		fclose(f);
	return found;
}

static void *read_last_page(void *arg)
{
	volatile uint8_t *p = arg;

	return (void *)(uintptr_t)p[LEN - 1];
}

/* Touches a truncated mapping in a child; returns how the child ended. */
static int fault_in_child(bool watch, bool unwatch)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		struct guestmem_owner o;
		int fd, slot = -1;
		volatile uint8_t *p = map_file(&fd);

		guestmem_owner_init(&o);
		if (guestmem_guard_install())
			_exit(3);
		/* A sanitizer's report of the expected fault is no news. */
		freopen("/dev/null", "w", stderr);
		if (watch)
			slot = guestmem_watch((void *)p, LEN, &o);
		if (unwatch)
			guestmem_unwatch(slot);
		if (ftruncate(fd, 0) < 0)
			_exit(3);
		(void)p[0];
		_exit(0); /* survived */
	}
	waitpid(pid, &status, 0);
	return status;
}

int main(void)
{
	struct guestmem_owner o;
	volatile uint8_t *p;
	pthread_t t;
	void *got;
	uint64_t n = 0;
	int fd, slot, status;

	guestmem_owner_init(&o);
	CHECK(guestmem_guard_install() == 0, "guard installs");
	CHECK(guestmem_guard_install() == 0, "a second install is a no-op");
	atomic_store(&o.wake_fd, eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));

	p = map_file(&fd);
	slot = guestmem_watch((void *)p, LEN, &o);
	CHECK(slot >= 0, "watch: %d", slot);
	CHECK(p[100] == 0xab && maps_file(p), "before: the file's bytes, mapped");
	CHECK(ftruncate(fd, PAGE * 4) == 0, "truncate to 4 pages");

	/* Another thread faults first, past the new end of the file. */
	CHECK(pthread_create(&t, NULL, read_last_page, (void *)p) == 0, "thread");
	pthread_join(t, &got);
	CHECK((uintptr_t)got == 0, "the faulting thread read %lu, not 0", (unsigned long)(uintptr_t)got);
	CHECK(atomic_load(&o.faulted), "the owner is told");
	CHECK(atomic_load(&o.faults) == 1, "one region replaced, counted %lu",
	      (unsigned long)atomic_load(&o.faults));
	CHECK(read(atomic_load(&o.wake_fd), &n, sizeof(n)) == sizeof(n) && n == 1,
	      "the owner's eventfd was written once (%lu)", (unsigned long)n);
	/* The whole region is zero pages now, the part still in the file too,
	 * and writes land there without faulting. */
	CHECK(p[0] == 0 && p[PAGE] == 0, "the region reads zeros");
	p[LEN - 1] = 7;
	CHECK(p[LEN - 1] == 7, "and takes writes");
	CHECK(!maps_file(p), "the file is no longer mapped there");
	CHECK(atomic_load(&o.faults) == 1, "no second fault");
	guestmem_unwatch(slot);
	munmap((void *)p, LEN);
	close(fd);

	/* Unwatched or never watched: a SIGBUS stays fatal (under ASan, its
	 * report ends the child instead). */
	status = fault_in_child(false, false);
	CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "never watched: the child survived");
	status = fault_in_child(true, true);
	CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "unwatched: the child survived");
	status = fault_in_child(true, false);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "watched: the child died (status %#x)", status);
	CHECK(guestmem_watch((void *)p, 0, &o) == -EINVAL, "an empty region is refused");

	if (failures) {
		fprintf(stderr, "test_guestmem: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_guestmem: ok\n");
	return 0;
}
