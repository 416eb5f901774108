/*
 * sock.c - socket helpers shared by the transports: socket addresses from
 * the configuration, socket buffer sizes, device MTU, index and flags.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "loop/log.h"

/*
 * A socket address for `a` and `port` (-EAFNOSUPPORT for an unset
 * address: the caller chooses the wildcard).  IPv6 link-local
 * unicast and multicast addresses need the interface: its index becomes
 * the scope id.  Other addresses get none, so that the routing table
 * decides as for any other socket.
 */
int link_sock_addr(struct sockaddr_storage *ss, socklen_t *len, const struct config_addr *a,
		   uint16_t port, unsigned ifindex)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr = a->u.v4;
		*len = sizeof(*sin);
		return 0;
	}
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = a->u.v6;
		if (IN6_IS_ADDR_LINKLOCAL(&a->u.v6) || IN6_IS_ADDR_MC_LINKLOCAL(&a->u.v6) ||
		    IN6_IS_ADDR_MC_NODELOCAL(&a->u.v6))
			sin6->sin6_scope_id = ifindex;
		*len = sizeof(*sin6);
		return 0;
	}
	return -EAFNOSUPPORT;
}

/* "198.18.0.1:3780", "[2001:2::1%veth0]:3780". */
void link_sock_addr_str(const struct sockaddr *sa, char *buf, size_t size)
{
	char addr[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof(addr));
		snprintf(buf, size, "%s:%u", addr, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		char scope[IF_NAMESIZE + 1] = "";

		inet_ntop(AF_INET6, &sin6->sin6_addr, addr, sizeof(addr));
		if (sin6->sin6_scope_id) {
			char name[IF_NAMESIZE];

			if (if_indextoname(sin6->sin6_scope_id, name))
				snprintf(scope, sizeof(scope), "%%%s", name);
		}
		snprintf(buf, size, "[%s%s]:%u", addr, scope, ntohs(sin6->sin6_port));
	} else {
		snprintf(buf, size, "?");
	}
}

/*
 * SndSocketBuffer / RcvSocketBuffer with the FORCE variants, which pass
 * the net.core.[rw]mem_max ceiling (CAP_NET_ADMIN).  Without the
 * capability the plain option still gives what the ceiling allows; that is
 * worth a warning, not a failure.
 */
static int set_buffer(int fd, int force_opt, int opt, uint32_t size, const struct link *l,
		      const char *name)
{
	int v = size > INT32_MAX ? INT32_MAX : (int)size;

	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) == 0)
		return 0;
	if (errno != EPERM)
		return -errno;
	log_warning("link %s: %s %u needs CAP_NET_ADMIN; limited by the system maximum",
		    l->cfg.ifname, name, size);
	if (setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v)) < 0)
		return -errno;
	return 0;
}

int link_sock_buffers(int fd, const struct link *l, bool snd, bool rcv)
{
	int err;

	if (snd && l->cfg.sndbuf) {
		err = set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF, l->cfg.sndbuf, l, "SndSocketBuffer");
		if (err < 0)
			return err;
	}
	if (rcv && l->cfg.rcvbuf) {
		err = set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, l->cfg.rcvbuf, l, "RcvSocketBuffer");
		if (err < 0)
			return err;
	} else if (rcv) {
		/*
		 * Unset: conntrackd keeps the kernel's default (about 208 KiB),
		 * which a burst of a few thousand states overflows on the
		 * receiving side; every datagram lost there costs a
		 * retransmission.  Ask for LINK_DEFAULT_RCVBUF, quietly settling
		 * for what the system allows.
		 */
		int v = LINK_DEFAULT_RCVBUF;

		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) < 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
	return 0;
}

static int dev_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int fd, err = 0;

	memset(ifr, 0, sizeof(*ifr));
	if (strlen(ifname) >= sizeof(ifr->ifr_name))
		return -ENODEV;
	strcpy(ifr->ifr_name, ifname);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, req, ifr) < 0)
		err = -errno;
	close(fd);
	return err;
}

int link_dev_flags(const char *ifname, unsigned *ifflags)
{
	struct ifreq ifr;
	int err = dev_ioctl(ifname, SIOCGIFFLAGS, &ifr);

	if (err < 0)
		return err;
	*ifflags = (unsigned short)ifr.ifr_flags;
	return 0;
}

/* The MTU is read once, at open, as 1.4.7 does (protocol.md §5.1). */
int link_dev_query(const char *ifname, unsigned *ifindex, uint32_t *mtu, unsigned *ifflags)
{
	struct ifreq ifr;
	int err;

	err = dev_ioctl(ifname, SIOCGIFINDEX, &ifr);
	if (err < 0)
		return err;
	*ifindex = (unsigned)ifr.ifr_ifindex;
	err = dev_ioctl(ifname, SIOCGIFMTU, &ifr);
	if (err < 0)
		return err;
	if (ifr.ifr_mtu <= 0)
		return -EINVAL;
	*mtu = (uint32_t)ifr.ifr_mtu;
	return link_dev_flags(ifname, ifflags);
}
