/* sd_notify without libsystemd (daemon/notify.c) against a stand-in
 * service manager: datagrams on a path socket and an abstract one, byte for
 * byte; what happens without NOTIFY_SOCKET, with a bad one, and with nobody
 * listening. Also the logger's check that stderr is the journal stream
 * JOURNAL_STREAM names (wg/log.c), which decides the <N> prefixes. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/notify.h"
#include "wg/log.h"

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
				#cond);                                             \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

/* A datagram socket bound to name ('@': abstract); returns its fd. */
static int manager(const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0 && len < sizeof(a.sun_path));
	memcpy(a.sun_path, name, len);
	if (name[0] == '@')
		a.sun_path[0] = '\0';
	CHECK(bind(fd, (struct sockaddr *)&a,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) == 0);
	return fd;
}

static void expect_datagram(int fd, const char *want)
{
	char buf[512];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	CHECK(n == (ssize_t)strlen(want));
	CHECK(!memcmp(buf, want, (size_t)n));
}

static void test_notify(void)
{
	char path[64], abstract[64];
	int fd;

	unsetenv("NOTIFY_SOCKET");
	CHECK(notify_send("READY=1\n") == 0);
	setenv("NOTIFY_SOCKET", "", 1);
	CHECK(notify_send("READY=1\n") == 0);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	CHECK(notify_send("READY=1\n") == -EINVAL);
	{
		char longname[200];

		memset(longname, 'x', sizeof(longname) - 1);
		longname[0] = '/';
		longname[sizeof(longname) - 1] = '\0';
		setenv("NOTIFY_SOCKET", longname, 1);
		CHECK(notify_send("READY=1\n") == -EINVAL);
	}

	snprintf(path, sizeof(path), "/tmp/weft-test-notify-%d", (int)getpid());
	unlink(path);
	fd = manager(path);
	setenv("NOTIFY_SOCKET", path, 1);
	CHECK(notify_send("READY=1\nSTATUS=wg0 up, 2 workers\n") == 0);
	expect_datagram(fd, "READY=1\nSTATUS=wg0 up, 2 workers\n");
	CHECK(notify_send("STOPPING=1\n") == 0);
	expect_datagram(fd, "STOPPING=1\n");
	close(fd);
	unlink(path);
	/* Nobody there: the errno, never a crash or a hang. */
	CHECK(notify_send("READY=1\n") == -ENOENT);

	snprintf(abstract, sizeof(abstract), "@weft-test-notify-%d", (int)getpid());
	fd = manager(abstract);
	setenv("NOTIFY_SOCKET", abstract, 1);
	CHECK(notify_send("RELOADING=1\n") == 0);
	expect_datagram(fd, "RELOADING=1\n");
	close(fd);
	CHECK(notify_send("READY=1\n") == -ECONNREFUSED);
	unsetenv("NOTIFY_SOCKET");
}

static void test_journal(void)
{
	struct stat st;
	char v[64];

	CHECK(fstat(STDERR_FILENO, &st) == 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	CHECK(wg_log_stderr_is_journal(v));
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + 1);
	CHECK(!wg_log_stderr_is_journal(v));
	snprintf(v, sizeof(v), "%llu:%llux", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	CHECK(!wg_log_stderr_is_journal(v));
	CHECK(!wg_log_stderr_is_journal(NULL));
	CHECK(!wg_log_stderr_is_journal(""));
	CHECK(!wg_log_stderr_is_journal("8:1"));
	CHECK(!wg_log_stderr_is_journal("journal"));
}

int main(void)
{
	test_notify();
	test_journal();
	printf("test_notify: ok\n");
	return 0;
}
