/*
 * peers.c - who may speak on a link (deviation 22, doc/protocol.md §5.7).
 *
 * Sync input writes into a firewall's kernel, so a link passes on only
 * what comes from its peer: over UDP and TCP the configured destination
 * address (any port: 1.4.7 sends from an unbound socket, whose port changes
 * with every restart), over multicast a member of the sync interface's own
 * networks.  Anything else is dropped before the sync layer sees it,
 * counted, and logged at most once per STRANGER_LOG_MS per link.  Without
 * a key (authentication) an address is all there is to go by: a sender
 * that forges the peer's address still gets through.
 */
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <string.h>

#include "loop/log.h"
#include "loop/loop.h"

#define STRANGER_LOG_MS 10000u
/* A multicast stranger makes us read the interface's addresses again, at most this often. */
#define NETS_REFRESH_MS 1000u

static bool same_addr(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	if (a->sa_family != b->ss_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
	return false;
}

/* Are the first `prefix` bits of the two addresses (`bytes` long) equal? */
static bool prefix_match(const uint8_t *a, const uint8_t *b, unsigned bytes, unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;

	if (prefix > bytes * 8)
		return false;
	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[full] ^ b[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

static unsigned mask_bits(const uint8_t *m, unsigned bytes)
{
	unsigned n = 0;

	for (unsigned i = 0; i < bytes; i++)
		n += (unsigned)__builtin_popcount(m[i]);
	return n;
}

int link_peers_refresh(struct link *l)
{
	struct ifaddrs *ifa, *p;
	unsigned n = 0;

	l->nets_read_ms = loop_now_ms(l->group->loop);
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (p = ifa; p && n < LINK_NETS_MAX; p = p->ifa_next) {
		struct link_net *net = &l->nets[n];

		if (!p->ifa_addr || !p->ifa_netmask || strcmp(p->ifa_name, l->cfg.ifname) != 0 ||
		    p->ifa_addr->sa_family != l->cfg.family)
			continue;
		net->family = p->ifa_addr->sa_family;
		if (net->family == AF_INET) {
			memcpy(net->addr, &((struct sockaddr_in *)p->ifa_addr)->sin_addr, 4);
			net->prefix = (uint8_t)mask_bits((const uint8_t *)
				&((struct sockaddr_in *)p->ifa_netmask)->sin_addr, 4);
		} else {
			memcpy(net->addr, &((struct sockaddr_in6 *)p->ifa_addr)->sin6_addr, 16);
			net->prefix = (uint8_t)mask_bits((const uint8_t *)
				&((struct sockaddr_in6 *)p->ifa_netmask)->sin6_addr, 16);
		}
		n++;
	}
	freeifaddrs(ifa);
	l->nnets = n;
	return 0;
}

static bool in_nets(const struct link *l, const struct sockaddr *src)
{
	const uint8_t *a;
	unsigned bytes;

	if (src->sa_family == AF_INET) {
		a = (const uint8_t *)&((const struct sockaddr_in *)src)->sin_addr;
		bytes = 4;
	} else if (src->sa_family == AF_INET6) {
		a = (const uint8_t *)&((const struct sockaddr_in6 *)src)->sin6_addr;
		bytes = 16;
	} else {
		return false;
	}
	for (unsigned i = 0; i < l->nnets; i++)
		if (l->nets[i].family == src->sa_family &&
		    prefix_match(a, l->nets[i].addr, bytes, l->nets[i].prefix))
			return true;
	return false;
}

/*
 * A peer reached at a link-local address sends from whichever link-local
 * address its kernel picks (an interface has several: the configured one,
 * the one made from its MAC), and any host on the segment could use any of
 * them anyway: any link-local source on the link's interface is the peer.
 */
static bool link_local_peer(const struct link *l, const struct sockaddr *src)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)src;
	const struct sockaddr_in6 *d6 = (const struct sockaddr_in6 *)&l->dest;

	return src->sa_family == AF_INET6 && l->dest.ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LINKLOCAL(&d6->sin6_addr) && IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) &&
	       (!s6->sin6_scope_id || s6->sin6_scope_id == l->ifindex);
}

bool link_peer_allowed(struct link *l, const struct sockaddr *src)
{
	if (!src)
		return false;
	if (l->cfg.kind != CONFIG_LINK_MCAST)
		return same_addr(src, &l->dest) || link_local_peer(l, src);
	if (in_nets(l, src))
		return true;
	/* The interface may have been given another address since we looked. */
	if (loop_now_ms(l->group->loop) - l->nets_read_ms < NETS_REFRESH_MS)
		return false;
	return link_peers_refresh(l) == 0 && in_nets(l, src);
}

void link_stranger(struct link *l, const struct sockaddr *src, const char *what)
{
	uint64_t now = loop_now_ms(l->group->loop);
	char addr[LINK_ADDR_STRLEN];

	l->stats.strangers++;
	l->strangers_unlogged++;
	if (l->stranger_logged_ms && now - l->stranger_logged_ms < STRANGER_LOG_MS)
		return;
	link_sock_addr_str(src, addr, sizeof(addr));
	log_warning("link %s: %s from %s, which is not the peer (%s); dropped "
		    "(%llu since the last such line)", l->cfg.ifname, what, addr,
		    l->cfg.kind == CONFIG_LINK_MCAST ? "multicast accepts the interface's own networks"
						      : "only the destination address is the peer",
		    (unsigned long long)l->strangers_unlogged);
	l->stranger_logged_ms = now ? now : 1;
	l->strangers_unlogged = 0;
}
