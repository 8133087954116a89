/* weft metrics: weftd's Prometheus exposition (the weft=metrics request),
 * the same text its --metrics listener serves, for a node exporter's
 * textfile collector or a look by hand. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

const char cmd_metrics_usage[] =
	"Usage: weft [-i IFNAME] metrics\n"
	"\n"
	"Prints weftd's counters in Prometheus text exposition format: the\n"
	"WireGuard exporters' per-peer series (wireguard_sent_bytes_total,\n"
	"wireguard_received_bytes_total, wireguard_latest_handshake_seconds) and\n"
	"weft's own (weft_*: drops by reason, handshakes, under-load state,\n"
	"workers, offloads, AEAD backend, VM ports, the mesh). weftd's metrics\n"
	"listener serves the same text over HTTP. See weft(8) and weftd(8).\n";

int cmd_metrics(int argc, char **argv)
{
	struct cli_reply r;
	int ret;

	if (argc && cli_is_help(argv[0])) {
		fputs(cmd_metrics_usage, stdout);
		return EXIT_OK;
	}
	if (argc)
		return cli_usage_error("metrics takes no arguments");
	ret = cli_request("metrics", NULL, "metrics", &r);
	if (ret)
		return ret;
	fwrite(r.text, 1, r.len, stdout);
	cli_reply_free(&r);
	return EXIT_OK;
}
