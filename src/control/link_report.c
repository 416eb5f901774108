/*
 * link_report.c - `-s link`: the link group's snapshot as report sections.
 * The text labels, their order and the TCP tokens are what conntrackd users
 * and upstream's tests read; they change only on purpose.
 */
#include <stdio.h>

#include "control/link_report.h"

static void report_link(struct report *r, const struct link_info *l)
{
	char heading[16];

	snprintf(heading, sizeof(heading), "link %u", l->index);
	report_begin_item(r, heading);
	report_label(r, "");            /* in the heading already */
	report_id_u64(r, "index", "link", l->index);
	report_id_str(r, "device", "device", l->ifname);
	report_info(r, "status", l->status);
	report_info(r, "role", l->active ? "ACTIVE" : "BACKUP");
	report_info(r, "kind", config_link_kind_name(l->kind));
	if (l->kind == CONFIG_LINK_MCAST) {
		report_info(r, "group", l->dest);
	} else {
		report_info(r, "local", l->local);
		report_info(r, "destination", l->dest);
	}
	report_label(r, "mtu");
	report_gauge(r, "mtu_bytes", l->mtu, "MTU of the link's device.");
	report_label(r, "payload max");
	report_gauge(r, "payload_max_bytes", l->payload_max,
		     "Largest datagram the link sends (the MTU less the IP and UDP or TCP headers).");
	report_counter(r, "bytes_sent", l->stats.bytes_sent, "Bytes the link handed to the kernel.");
	report_counter(r, "packets_sent", l->stats.packets_sent, "Datagrams the link sent.");
	report_counter(r, "errors_sent", l->stats.errors_sent, "Datagrams the link failed to send.");
	report_counter(r, "bytes_received", l->stats.bytes_recv, "Bytes the link received from the peer.");
	report_counter(r, "packets_received", l->stats.packets_recv,
		       "Datagrams the link received from the peer.");
	report_counter(r, "errors_received", l->stats.errors_recv, "Receive errors of the link.");
	report_counter(r, "send_blocked", l->stats.blocked,
		       "Sends that would have blocked (the socket buffer was full).");
	report_counter(r, "strangers_dropped", l->stats.strangers,
		       "Datagrams and TCP connections dropped because they did not come from the peer.");
	/* status and role say it in the text */
	report_label(r, "");
	report_flag(r, "up", l->status && l->status[0] == 'R',
		    "1 if the link's device is RUNNING, 0 if it is NO-CARRIER or DOWN.");
	report_label(r, "");
	report_flag(r, "active", l->active, "1 if the link is the one the channel sends on.");
	if (l->kind == CONFIG_LINK_TCP) {
		bool server = l->tcp_server_connected, client = l->tcp_client_connected;
		char both[64];

		/* As 1.4.7 prints it: upstream's tests grep these two tokens. */
		snprintf(both, sizeof(both), "server=%s client=%s",
			 server ? "connected" : "disconnected", client ? "connected" : "disconnected");
		report_text(r, "tcp", both);
		report_flag(r, "server_connected", server,
			    "1 if the peer's TCP connection to our server socket is up.");
		report_flag(r, "client_connected", client,
			    "1 if our TCP connection to the peer's server socket is up.");
		report_counter(r, "client_connects", l->stats.connects,
			       "TCP connections our client made to the peer.");
		report_counter(r, "client_disconnects", l->stats.disconnects,
			       "TCP connections of our client that were lost.");
		report_counter(r, "server_accepts", l->stats.accepts,
			       "TCP connections of the peer our server accepted.");
	}
	report_end(r);
}

void control_report_links(struct report *r, const struct link_info *links, unsigned n,
			  const struct link_channel_info *channel)
{
	report_begin_array(r, "links", "link");
	for (unsigned i = 0; i < n; i++)
		report_link(r, &links[i]);
	report_end(r);
	report_begin(r, "channel");
	report_info(r, "active", channel->active < n ? links[channel->active].ifname : "");
	report_label(r, "payload max");
	report_gauge(r, "payload_max_bytes", channel->payload_max,
		     "Largest datagram of the active link: the size of the channel's batches.");
	report_gauge(r, "buffered_bytes", channel->buffered_bytes,
		     "Bytes of messages waiting in the batch being filled.");
	report_gauge(r, "queued_datagrams", channel->queued_datagrams,
		     "Datagrams waiting for the link to take them.");
	report_gauge(r, "queue_max", channel->queue_max, "Datagrams the queue holds at most.");
	report_counter(r, "dropped_datagrams", channel->dropped_datagrams,
		       "Datagrams dropped because the queue was full.");
	report_counter(r, "dropped_bytes", channel->dropped_bytes,
		       "Bytes of the datagrams dropped because the queue was full.");
	report_counter(r, "failovers", channel->failovers, "Changes of the active link.");
	report_end(r);
}

void control_report_link_group(struct report *r, const struct link_group *g)
{
	struct link_info links[CONFIG_MAX_LINKS];
	struct link_channel_info channel;
	unsigned n = link_group_info(g, links, &channel);

	control_report_links(r, links, n, &channel);
}
