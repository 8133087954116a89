/* Logging in wireguard-go's style, with a per-call-site rate limit for the
 * data path. */
#include "wg/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum wg_log_level wg_log_level = WG_LOG_ERROR;
static char log_ifname[32] = "weft";
static bool log_journal;

void wg_log_set_level(enum wg_log_level level)
{
	wg_log_level = level;
}

bool wg_log_stderr_is_journal(const char *journal_stream)
{
	unsigned long long dev, ino;
	struct stat st;
	char end;

	/* systemd sets "DEVICE:INODE" of the stream it connected to stderr;
	 * a child whose stderr went elsewhere inherits the variable but must
	 * not prefix its lines (sd-daemon(3), systemd.exec(5)). */
	if (!journal_stream || sscanf(journal_stream, "%llu:%llu%c", &dev, &ino, &end) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st))
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void wg_log_init(const char *ifname)
{
	const char *lvl = getenv("LOG_LEVEL");

	if (ifname)
		snprintf(log_ifname, sizeof(log_ifname), "%s", ifname);
	log_journal = wg_log_stderr_is_journal(getenv("JOURNAL_STREAM"));
	if (!lvl)
		return;
	if (!strcmp(lvl, "verbose"))
		wg_log_level = WG_LOG_VERBOSE;
	else if (!strcmp(lvl, "debug"))
		wg_log_level = WG_LOG_DEBUG;
	else if (!strcmp(lvl, "error"))
		wg_log_level = WG_LOG_ERROR;
	else if (!strcmp(lvl, "silent"))
		wg_log_level = WG_LOG_SILENT;
}

void wg_log(enum wg_log_level level, const char *fmt, ...)
{
	/* As wireguard-go, whose verbose lines (LOG_LEVEL=verbose) are
	 * "DEBUG:": weftd's debug level only adds more of them. */
	static const char *const names[] = { "", "ERROR", "DEBUG", "DEBUG" };
	/* sd-daemon(3) priority prefixes: err, info, debug. */
	static const char *const prio[] = { "", "<3>", "<6>", "<7>" };
	char stamp[32] = "";
	char msg[512];
	va_list ap;

	if (level > wg_log_level || level == WG_LOG_SILENT)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_journal) {
		fprintf(stderr, "%s(%s) %s\n", prio[level], log_ifname, msg);
		return;
	}
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y/%m/%d %H:%M:%S", &tm);
	fprintf(stderr, "%s: (%s) %s %s\n", names[level], log_ifname, stamp, msg);
}

bool wg_log_allow(_Atomic uint64_t *last_ns)
{
	struct timespec ts;
	uint64_t now, last;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	last = atomic_load_explicit(last_ns, memory_order_relaxed);
	if (last && now - last < 1000000000ull)
		return false;
	return atomic_compare_exchange_strong(last_ns, &last, now);
}
