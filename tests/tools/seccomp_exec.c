/* seccomp_exec: runs a command under a seccomp filter built like the one
 * systemd builds for a unit's SystemCallFilter= and RestrictAddressFamilies=
 * (tests/tools/unit_sandbox gives it the unit's lists):
 *
 *   seccomp_exec ERRNO SYSCALLS FAMILIES -- CMD [ARG...]
 *
 * SYSCALLS is a comma-separated allow list of system call names (names this
 * architecture lacks are skipped, as systemd skips them); every other call
 * fails with ERRNO (a number, e.g. 1 for EPERM). FAMILIES is a
 * comma-separated list of address family numbers: socket() with another
 * family fails with EAFNOSUPPORT, as under RestrictAddressFamilies=. The
 * filter is installed with no_new_privs set, then CMD is executed. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "syscall_names.h" /* generated: { "name", __NR_name }, ... */

enum { MAX_INSNS = 4096 };

static struct sock_filter prog[MAX_INSNS];
static unsigned int n_insns;

static void emit(struct sock_filter f)
{
	if (n_insns == MAX_INSNS) {
		fprintf(stderr, "seccomp_exec: filter too long\n");
		exit(2);
	}
	prog[n_insns++] = f;
}

static int syscall_number(const char *name)
{
	for (size_t i = 0; i < sizeof(syscall_names) / sizeof(syscall_names[0]); i++)
		if (!strcmp(syscall_names[i].name, name))
			return syscall_names[i].nr;
	return -1;
}

int main(int argc, char **argv)
{
	unsigned long err;
	char *syscalls, *families, *tok, *save;
	unsigned int allowed = 0, unknown = 0;

	if (argc < 6 || strcmp(argv[4], "--")) {
		fprintf(stderr, "usage: seccomp_exec ERRNO SYSCALLS FAMILIES -- CMD [ARG...]\n");
		return 2;
	}
	err = strtoul(argv[1], NULL, 10);
	syscalls = argv[2];
	families = argv[3];

	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
	/* socket(): the family (args[0]) must be listed. */
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 0));
	{
		unsigned int jump_at = n_insns - 1, n_fam = 0;
		int fams[64];

		for (tok = strtok_r(families, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (n_fam < 64)
				fams[n_fam++] = atoi(tok);
		/* Not socket: skip the family block (2 + n_fam + 1 insns). */
		prog[jump_at].jf = (unsigned char)(n_fam + 3);
		emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])));
		for (unsigned int i = 0; i < n_fam; i++)
			emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)fams[i],
							  (unsigned char)(n_fam - i), 0));
		emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT));
		emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	}
	/* The allow list: each listed call returns ALLOW. */
	for (tok = strtok_r(syscalls, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int nr = syscall_number(tok);

		if (nr < 0) {
			unknown++;
			continue;
		}
		emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 1));
		emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
		allowed++;
	}
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)));

	struct sock_fprog fprog = { .len = (unsigned short)n_insns, .filter = prog };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog)) {
		perror("seccomp_exec: installing the filter");
		return 2;
	}
	fprintf(stderr, "seccomp_exec: %u system calls allowed (%u names unknown here), errno %lu\n",
		allowed, unknown, err);
	execvp(argv[5], argv + 5);
	perror("seccomp_exec: exec");
	return 127;
}
