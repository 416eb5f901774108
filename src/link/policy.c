/*
 * policy.c - the decisions of the link module that need no socket: how big
 * a datagram may be, which link should be active, how a device state reads.
 */
#include <net/if.h>
#include <sys/socket.h>

#include "internal.h"

/* The largest UDP payload: 65535 minus the IPv4 + UDP headers; IPv6's length excludes its header. */
#define UDP4_PAYLOAD_MAX        65507u
#define UDP6_PAYLOAD_MAX        65527u
/* Headers without options: IPv4 + UDP is 1.4.7's MTU - 28, IPv4 + TCP its MTU - 40 (protocol.md §5.1). */
#define IPV4_HDR_LEN            20u
#define IPV6_HDR_LEN            40u
#define UDP_HDR_LEN             8u
#define TCP_HDR_LEN             20u

size_t link_payload_limit(enum config_link_kind kind, int family, uint32_t mtu)
{
	uint32_t overhead = kind == CONFIG_LINK_TCP ? TCP_HDR_LEN : UDP_HDR_LEN;
	size_t max = family == AF_INET6 ? UDP6_PAYLOAD_MAX : UDP4_PAYLOAD_MAX;
	size_t limit;

	/*
	 * 1.4.7 takes 28 (TCP: 40) bytes off the MTU whatever the family, so
	 * its full IPv6 datagrams are 20 bytes too big and leave as two
	 * fragments.  We count the real header; the receiver does not care
	 * about datagram sizes (it reads into 64 KiB).
	 */
	overhead += family == AF_INET6 ? IPV6_HDR_LEN : IPV4_HDR_LEN;
	if (mtu <= overhead)
		return 0;
	limit = mtu - overhead;
	/*
	 * Loopback's MTU is 65536: MTU - 28 would be one byte over what a UDP
	 * datagram can carry, and sendto() would fail with EMSGSIZE.  1.4.7's
	 * strict < hides it there.  TCP keeps the same ceiling: it is only a
	 * batching size for a stream.
	 */
	return limit > max ? max : limit;
}

bool link_flags_running(unsigned ifflags)
{
	return (ifflags & IFF_UP) && (ifflags & IFF_RUNNING);
}

bool link_flags_usable(unsigned ifflags)
{
	return (ifflags & (IFF_UP | IFF_RUNNING)) != 0;
}

/*
 * 1.4.7 takes the first other link whose device is UP or RUNNING, even when
 * a later one is both, and with two links that are UP without carrier it
 * swaps between them at every rtnetlink message.  We prefer a link that is
 * UP and RUNNING, keep the active one if nothing is better, and only then
 * fall back to 1.4.7's rule.
 */
int link_failover_pick(const unsigned *ifflags, unsigned n, unsigned active)
{
	unsigned i;

	if (active < n && link_flags_running(ifflags[active]))
		return (int)active;
	for (i = 0; i < n; i++)
		if (i != active && link_flags_running(ifflags[i]))
			return (int)i;
	if (active < n && link_flags_usable(ifflags[active]))
		return (int)active;
	for (i = 0; i < n; i++)
		if (i != active && link_flags_usable(ifflags[i]))
			return (int)i;
	return -1;
}

const char *link_status_name(unsigned ifflags)
{
	if (!(ifflags & IFF_UP))
		return "DOWN";
	if (!(ifflags & IFF_RUNNING))
		return "NO-CARRIER";
	return "RUNNING";
}
