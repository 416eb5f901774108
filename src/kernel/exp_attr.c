/*
 * exp_attr.c - ctnetlink expectation messages <-> struct flow_exp (pure).
 *
 * What the kernel sends (nf_conntrack_netlink.c, 6.x): CTA_EXPECT_MASTER,
 * CTA_EXPECT_TUPLE and CTA_EXPECT_MASK as tuple nests (the mask's
 * destination parts all ones), CTA_EXPECT_TIMEOUT, CTA_EXPECT_ID, the
 * helper name, CTA_EXPECT_ZONE, CTA_EXPECT_FLAGS, CTA_EXPECT_CLASS,
 * CTA_EXPECT_NAT { DIR, TUPLE } when the helper saved a NAT address, and
 * CTA_EXPECT_FN when an expect function is set.  There is no update event
 * for expectations: a refresh of the timeout is not reported.
 *
 * What it needs to create one: master, tuple and mask; the master
 * conntrack must exist and have a helper (EOPNOTSUPP otherwise, ENOENT
 * without the master); CTA_EXPECT_HELP_NAME must name a registered helper
 * and CTA_EXPECT_FN a registered expect function (EINVAL otherwise).
 */
#include "attr.h"

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

/* A NUL-terminated string attribute into `out` (`size` bytes with the NUL). */
static bool get_name(const struct nlattr *a, char *out, size_t size)
{
	size_t n = mnl_attr_get_payload_len(a);
	const char *s = mnl_attr_get_payload(a);
	size_t len = strnlen(s, n);

	if (len == n || len >= size)
		return false;
	memcpy(out, s, len);
	return true;
}

static bool be32_of(const struct nlattr *a, uint32_t *out)
{
	if (mnl_attr_get_payload_len(a) != 4)
		return false;
	*out = ntohl(mnl_attr_get_u32(a));
	return true;
}

static enum kernel_reason parse_nat(const struct nlattr *nest, uint8_t family, struct flow_exp *x)
{
	const struct nlattr *a;
	bool dir = false, tuple = false;
	enum kernel_reason why;

	mnl_attr_for_each_nested(a, nest) {
		switch (mnl_attr_get_type(a)) {
		case CTA_EXPECT_NAT_DIR:
			if (!be32_of(a, &x->nat_dir))
				return KERNEL_R_ATTR_SIZE;
			dir = true;
			break;
		case CTA_EXPECT_NAT_TUPLE:
			/* Only the source half is set: the destination address is zero. */
			if ((why = kernel_tuple_parse(a, family, &x->nat)) != KERNEL_OK)
				return why;
			tuple = true;
			break;
		}
	}
	if (dir && tuple)
		x->attrs |= FLOW_EXP_A_NAT;
	else
		memset(&x->nat, 0, sizeof(x->nat)), x->nat_dir = 0;
	return KERNEL_OK;
}

enum kernel_reason kernel_exp_parse(const void *msg, size_t len, struct flow_exp *x,
				    enum kernel_event *ev)
{
	const struct nlmsghdr *nlh = msg;
	const struct nfgenmsg *nfg;
	const struct nlattr *a;
	bool master = false, tuple = false, mask = false;
	enum kernel_reason why = KERNEL_OK;
	uint8_t family, type;
	uint16_t zone = 0;

	memset(x, 0, sizeof(*x));
	if (len < NLMSG_HDRLEN + sizeof(*nfg) || nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(*nfg) ||
	    nlh->nlmsg_len > len)
		return KERNEL_R_TRUNCATED;
	type = (uint8_t)(nlh->nlmsg_type & 0xff);
	if ((nlh->nlmsg_type >> 8) != NFNL_SUBSYS_CTNETLINK_EXP ||
	    (type != IPCTNL_MSG_EXP_NEW && type != IPCTNL_MSG_EXP_DELETE))
		return KERNEL_R_NOT_CONNTRACK;
	*ev = type == IPCTNL_MSG_EXP_NEW ? KERNEL_EV_NEW : KERNEL_EV_DESTROY;
	nfg = mnl_nlmsg_get_payload(nlh);
	family = nfg->nfgen_family;
	if (family != AF_INET && family != AF_INET6)
		return KERNEL_R_FAMILY;

	mnl_attr_for_each(a, nlh, sizeof(*nfg)) {
		switch (mnl_attr_get_type(a)) {
		case CTA_EXPECT_MASTER:
			why = kernel_tuple_parse(a, family, &x->master);
			master = true;
			break;
		case CTA_EXPECT_TUPLE:
			why = kernel_tuple_parse(a, family, &x->tuple);
			tuple = true;
			break;
		case CTA_EXPECT_MASK:
			why = kernel_tuple_parse(a, family, &x->mask);
			mask = true;
			break;
		case CTA_EXPECT_TIMEOUT:
			if (!be32_of(a, &x->timeout))
				return KERNEL_R_ATTR_SIZE;
			x->attrs |= FLOW_EXP_A_TIMEOUT;
			break;
		case CTA_EXPECT_FLAGS:
			if (!be32_of(a, &x->flags))
				return KERNEL_R_ATTR_SIZE;
			break;
		case CTA_EXPECT_CLASS:
			if (!be32_of(a, &x->class))
				return KERNEL_R_ATTR_SIZE;
			x->attrs |= FLOW_EXP_A_CLASS;
			break;
		case CTA_EXPECT_ZONE:
			if (mnl_attr_get_payload_len(a) != 2)
				return KERNEL_R_ATTR_SIZE;
			zone = ntohs(mnl_attr_get_u16(a));
			break;
		case CTA_EXPECT_HELP_NAME:
			if (!get_name(a, x->helper, sizeof(x->helper)))
				return KERNEL_R_HELPER_NAME;
			if (x->helper[0])
				x->attrs |= FLOW_EXP_A_HELPER;
			break;
		case CTA_EXPECT_FN:
			if (!get_name(a, x->fn, sizeof(x->fn)))
				return KERNEL_R_HELPER_NAME;
			if (x->fn[0])
				x->attrs |= FLOW_EXP_A_FN;
			break;
		case CTA_EXPECT_NAT:
			why = parse_nat(a, family, x);
			break;
		default:                /* CTA_EXPECT_ID and newer attributes */
			break;
		}
		if (why != KERNEL_OK)
			return why;
	}
	/* mnl_attr_for_each stops at an attribute past the end: was everything walked? */
	if ((const uint8_t *)a < (const uint8_t *)nlh + nlh->nlmsg_len &&
	    (const uint8_t *)nlh + nlh->nlmsg_len - (const uint8_t *)a >= (long)sizeof(*a))
		return KERNEL_R_ATTR_OVERRUN;
	if (!master || !tuple || !mask)
		return KERNEL_R_NO_TUPLE;
	x->master.zone = zone;
	return KERNEL_OK;
}

int kernel_exp_build(void *buf, size_t cap, enum kernel_op op, const struct flow_exp *x,
		     uint32_t timeout, unsigned opts, uint32_t seq)
{
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;
	uint16_t flags = NLM_F_REQUEST;
	uint8_t type;
	bool ok = true;

	if (op == KERNEL_OP_FLUSH) {
		type = IPCTNL_MSG_EXP_DELETE;
	} else if (!x || (x->tuple.family != AF_INET && x->tuple.family != AF_INET6)) {
		return -EINVAL;
	} else if (op == KERNEL_OP_CREATE || op == KERNEL_OP_UPDATE) {
		type = IPCTNL_MSG_EXP_NEW;
		/* No EXCL: a present expectation just gets the new timeout (protocol.md §6.3: update = create). */
		flags |= NLM_F_CREATE;
	} else if (op == KERNEL_OP_DELETE) {
		type = IPCTNL_MSG_EXP_DELETE;
	} else {
		return -EINVAL;
	}
	if (opts & KERNEL_BUILD_ACK)
		flags |= NLM_F_ACK;
	if (cap < NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(*nfg)))
		return -ENOSPC;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (uint16_t)((NFNL_SUBSYS_CTNETLINK_EXP << 8) | type);
	nlh->nlmsg_flags = flags;
	nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = op == KERNEL_OP_FLUSH ? (x ? x->tuple.family : AF_UNSPEC) : x->tuple.family;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = 0;
	if (op == KERNEL_OP_FLUSH)
		return (int)nlh->nlmsg_len;

	ok = kernel_tuple_put(nlh, cap, CTA_EXPECT_TUPLE, &x->tuple);
	if (x->master.zone)
		ok = ok && mnl_attr_put_check(nlh, cap, CTA_EXPECT_ZONE, 2,
					      &(uint16_t){ htons(x->master.zone) });
	if (op == KERNEL_OP_DELETE)
		return ok ? (int)nlh->nlmsg_len : -ENOSPC;

	ok = ok && kernel_tuple_put(nlh, cap, CTA_EXPECT_MASTER, &x->master) &&
	     kernel_tuple_put(nlh, cap, CTA_EXPECT_MASK, &x->mask) &&
	     mnl_attr_put_u32_check(nlh, cap, CTA_EXPECT_TIMEOUT, htonl(timeout)) &&
	     mnl_attr_put_u32_check(nlh, cap, CTA_EXPECT_FLAGS, htonl(x->flags));
	if (ok && (x->attrs & FLOW_EXP_A_CLASS))
		ok = mnl_attr_put_u32_check(nlh, cap, CTA_EXPECT_CLASS, htonl(x->class));
	if (ok && (x->attrs & FLOW_EXP_A_HELPER))
		ok = mnl_attr_put_strz_check(nlh, cap, CTA_EXPECT_HELP_NAME, x->helper);
	if (ok && (x->attrs & FLOW_EXP_A_NAT)) {
		struct nlattr *n = mnl_attr_nest_start_check(nlh, cap, CTA_EXPECT_NAT);

		ok = n && mnl_attr_put_u32_check(nlh, cap, CTA_EXPECT_NAT_DIR, htonl(x->nat_dir)) &&
		     kernel_tuple_put(nlh, cap, CTA_EXPECT_NAT_TUPLE, &x->nat);
		if (ok)
			mnl_attr_nest_end(nlh, n);
	}
	if (ok && (x->attrs & FLOW_EXP_A_FN))
		ok = mnl_attr_put_strz_check(nlh, cap, CTA_EXPECT_FN, x->fn);
	return ok ? (int)nlh->nlmsg_len : -ENOSPC;
}
