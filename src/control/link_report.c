/*
 * link_report.c - `-s link`: the link group's snapshot as report sections.
 * The keys, their order and the TCP tokens are what conntrackd users and
 * upstream's tests read; they change only on purpose.
 */
#include <stdio.h>

#include "control/link_report.h"

static void report_link(struct report *r, const struct link_info *l)
{
	char name[16];

	snprintf(name, sizeof(name), "link_%u", l->index);
	report_begin(r, name);
	report_str(r, "device", l->ifname);
	report_str(r, "status", l->status);
	report_str(r, "role", l->active ? "ACTIVE" : "BACKUP");
	report_str(r, "kind", config_link_kind_name(l->kind));
	if (l->kind == CONFIG_LINK_MCAST) {
		report_str(r, "group", l->dest);
	} else {
		report_str(r, "local", l->local);
		report_str(r, "destination", l->dest);
	}
	report_u64(r, "mtu", l->mtu);
	report_u64(r, "payload_max", l->payload_max);
	report_u64(r, "bytes_sent", l->stats.bytes_sent);
	report_u64(r, "packets_sent", l->stats.packets_sent);
	report_u64(r, "errors_sent", l->stats.errors_sent);
	report_u64(r, "bytes_received", l->stats.bytes_recv);
	report_u64(r, "packets_received", l->stats.packets_recv);
	report_u64(r, "errors_received", l->stats.errors_recv);
	report_u64(r, "send_blocked", l->stats.blocked);
	report_u64(r, "strangers_dropped", l->stats.strangers);
	if (l->kind == CONFIG_LINK_TCP) {
		bool server = l->tcp_server_connected, client = l->tcp_client_connected;
		char both[64];

		/* As 1.4.7 prints it: upstream's tests grep these two tokens. */
		snprintf(both, sizeof(both), "server=%s client=%s",
			 server ? "connected" : "disconnected", client ? "connected" : "disconnected");
		report_str(r, "tcp", both);
		report_bool(r, "server_connected", server);
		report_bool(r, "client_connected", client);
		report_u64(r, "client_connects", l->stats.connects);
		report_u64(r, "client_disconnects", l->stats.disconnects);
		report_u64(r, "server_accepts", l->stats.accepts);
	}
	report_end(r);
}

void control_report_links(struct report *r, const struct link_info *links, unsigned n,
			  const struct link_channel_info *channel)
{
	for (unsigned i = 0; i < n; i++)
		report_link(r, &links[i]);
	report_begin(r, "channel");
	report_str(r, "active", channel->active < n ? links[channel->active].ifname : "");
	report_u64(r, "payload_max", channel->payload_max);
	report_u64(r, "buffered_bytes", channel->buffered_bytes);
	report_u64(r, "queued_datagrams", channel->queued_datagrams);
	report_u64(r, "queue_max", channel->queue_max);
	report_u64(r, "dropped_datagrams", channel->dropped_datagrams);
	report_u64(r, "dropped_bytes", channel->dropped_bytes);
	report_u64(r, "failovers", channel->failovers);
	report_end(r);
}

void control_report_link_group(struct report *r, const struct link_group *g)
{
	struct link_info links[CONFIG_MAX_LINKS];
	struct link_channel_info channel;
	unsigned n = link_group_info(g, links, &channel);

	control_report_links(r, links, n, &channel);
}
