/*
 * src/kernel/tap.c - loads src/kernel/tap.bpf.c (built into the binary)
 * with libbpf and reads its ring (doc/bpf-events.md).  Without BPF support
 * at build time only kernel_tap_open() is left, and it says why.
 */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"

#ifdef HAVE_BPF_TAP

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/netfilter.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

/* The object, embedded by tap_obj.S. */
extern const unsigned char ctsyncd_tap_obj[];
extern const unsigned char ctsyncd_tap_obj_end[];

/*
 * BPF_PROG_TYPE_NETFILTER and BPF_NETFILTER (Linux 6.4) are newer than the
 * headers and the libbpf this may be built with; the values are kernel ABI.
 */
#define TAP_PROG_TYPE_NETFILTER 32
#define TAP_ATTACH_NETFILTER 45
#define TAP_LINKS 4

struct kernel_tap {
	struct bpf_object *obj;
	struct ring_buffer *ring;
	struct tap_shared *shared;
	size_t shared_len;
	int links[TAP_LINKS];
	unsigned nlinks;
	kernel_tap_fn fn;
	void *arg;
};

/*
 * libbpf's messages, for a refusal to say why: the verifier's last line
 * when a program was refused (the line before the end of its log), else
 * libbpf's first warning.
 */
static char libbpf_reason[240];
static bool libbpf_reason_is_verifier;

static int keep_reason(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* a verifier log comes whole in one message, and can be long */
	static char msg[1 << 16];
	char *end, *line;

	if (level != LIBBPF_WARN || libbpf_reason_is_verifier)
		return 0;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	end = strstr(msg, "-- END PROG LOAD LOG --");
	if (end) {
		/* the last non-empty line before the marker */
		while (end > msg && (end[-1] == '\n' || end[-1] == ' '))
			end--;
		*end = '\0';
		line = strrchr(msg, '\n');
		line = line ? line + 1 : msg;
		snprintf(libbpf_reason, sizeof(libbpf_reason), "verifier: %.200s", line);
		libbpf_reason_is_verifier = true;
	} else if (!libbpf_reason[0]) {
		msg[strcspn(msg, "\n")] = '\0';
		snprintf(libbpf_reason, sizeof(libbpf_reason), "%.230s", msg);
	}
	return 0;
}

/*
 * Where the tap hooks in: after every hook but the conntrack confirmation,
 * which hands the entry's cached events over and clears them.  The
 * confirmation is at INT_MAX, except IPv6's at INPUT, at INT_MAX - 1.  A
 * BPF link may not share its priority with any hook (the kernel answers
 * EBUSY), and a hook registered later at an equal priority runs before it.
 */
static const struct tap_hook {
	unsigned pf, hooknum;
	int priority;
	const char *name;
} tap_hooks[TAP_LINKS] = {
	{ NFPROTO_IPV4, NF_INET_LOCAL_IN, INT_MAX - 1, "IPv4 input" },
	{ NFPROTO_IPV4, NF_INET_POST_ROUTING, INT_MAX - 1, "IPv4 postrouting" },
	{ NFPROTO_IPV6, NF_INET_LOCAL_IN, INT_MAX - 2, "IPv6 input" },
	{ NFPROTO_IPV6, NF_INET_POST_ROUTING, INT_MAX - 1, "IPv6 postrouting" },
};

/* libbpf before 1.2 cannot create a netfilter link: BPF_LINK_CREATE by hand. */
static int nf_link(int prog, const struct tap_hook *h)
{
	union bpf_attr attr;
	__u32 *word = (__u32 *)&attr;

	memset(&attr, 0, sizeof(attr));
	attr.link_create.prog_fd = (__u32)prog;
	attr.link_create.attach_type = TAP_ATTACH_NETFILTER;
	/* link_create.netfilter follows the four common words: pf, hooknum, priority, flags */
	word[4] = h->pf;
	word[5] = h->hooknum;
	word[6] = (__u32)h->priority;
	word[7] = 0;
	return (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
}

static uint32_t pow2_at_least(uint32_t v, uint32_t min)
{
	uint32_t p = min;

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

static int on_record(void *arg, void *data, size_t size)
{
	struct kernel_tap *t = arg;
	const struct tap_hdr *h = data;

	if (size < sizeof(*h) || h->len > size - sizeof(*h))
		return 0;       /* cannot happen: both sides are ours */
	t->fn(t->arg, h, h + 1);
	return 0;
}

void kernel_tap_close(struct kernel_tap *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->nlinks; i++)
		close(t->links[i]);
	if (t->shared)
		munmap(t->shared, t->shared_len);
	ring_buffer__free(t->ring);
	bpf_object__close(t->obj);
	free(t);
}

static struct kernel_tap *fail(struct kernel_tap *t, char *why, size_t why_len, const char *what, int err)
{
	if (libbpf_reason[0])
		snprintf(why, why_len, "%s: %s (%s)", what, strerror(err > 0 ? err : -err), libbpf_reason);
	else
		snprintf(why, why_len, "%s: %s", what, strerror(err > 0 ? err : -err));
	kernel_tap_close(t);
	return NULL;
}

/*
 * tap_packet finds the packets that changed an entry in the entry's event
 * cache, and the destroys come as events: both need the kernel to keep
 * events in this namespace.
 */
static int check_events_sysctl(char *why, size_t why_len)
{
	FILE *f = fopen("/proc/sys/net/netfilter/nf_conntrack_events", "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	if (v == 0) {
		snprintf(why, why_len, "net.netfilter.nf_conntrack_events is 0 in this namespace: the kernel "
			 "keeps no conntrack events, which the tap and the destroys need");
		return -EPERM;
	}
	return 0;
}

/* tap_packet copies the kernel's struct nf_conn whole to its stack: it must fit. */
static int check_nf_conn(char *why, size_t why_len)
{
	struct btf *btf = btf__load_vmlinux_btf(), *mod = NULL;
	const struct btf_type *t;
	__s32 id;
	int err = 0;

	if (!btf) {
		snprintf(why, why_len, "this kernel has no BTF (/sys/kernel/btf/vmlinux): the BPF programs "
			 "cannot be fitted to it");
		return -ENOENT;
	}
	id = btf__find_by_name_kind(btf, "nf_conn", BTF_KIND_STRUCT);
	if (id <= 0) {
		/* conntrack built as a module has BTF of its own, split from the kernel's */
		mod = btf__parse_split("/sys/kernel/btf/nf_conntrack", btf);
		if (mod)
			id = btf__find_by_name_kind(mod, "nf_conn", BTF_KIND_STRUCT);
	}
	t = id > 0 ? btf__type_by_id(mod ? mod : btf, (__u32)id) : NULL;
	if (!t) {
		snprintf(why, why_len, "this kernel's BTF has no struct nf_conn (conntrack is a module that "
			 "is not loaded, or is not built)");
		err = -ENOENT;
	} else if (t->size > TAP_CT_COPY) {
		snprintf(why, why_len, "this kernel's struct nf_conn is %u bytes, and the tap copies at most %d",
			 t->size, TAP_CT_COPY);
		err = -E2BIG;
	}
	btf__free(mod);
	btf__free(btf);
	return err;
}

struct kernel_tap *kernel_tap_open(const struct kernel_tap_opts *o, int nl_fd, char *why, size_t why_len)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "ctsyncd_tap");
	struct kernel_tap *t = calloc(1, sizeof(*t));
	struct bpf_program *packet, *netlink;
	struct bpf_map *m, *ring = NULL, *bss = NULL;
	size_t bss_size = 0;
	int fd, err;

	if (!t)
		return fail(NULL, why, why_len, "memory", ENOMEM);
	libbpf_reason[0] = '\0';
	libbpf_reason_is_verifier = false;
	libbpf_set_print(keep_reason);
	t->obj = bpf_object__open_mem(ctsyncd_tap_obj, (size_t)(ctsyncd_tap_obj_end - ctsyncd_tap_obj), &oo);
	if (!t->obj)
		return fail(t, why, why_len, "cannot open the built-in BPF object", errno);
	packet = bpf_object__find_program_by_name(t->obj, "tap_packet");
	netlink = bpf_object__find_program_by_name(t->obj, "tap_netlink");
	bpf_object__for_each_map(m, t->obj) {
		const char *name = bpf_map__name(m);

		if (!strcmp(name, "tap_ring"))
			ring = m;
		else if (bpf_map__is_internal(m) && strstr(name, ".bss"))
			bss = m;
	}
	if (!packet || !netlink || !ring || !bss)
		return fail(t, why, why_len, "the built-in BPF object is incomplete", EINVAL);
	if ((err = check_events_sysctl(why, why_len)) < 0 || (err = check_nf_conn(why, why_len)) < 0) {
		kernel_tap_close(t);
		return NULL;
	}
	bpf_program__set_type(packet, TAP_PROG_TYPE_NETFILTER);
	bpf_program__set_expected_attach_type(packet, TAP_ATTACH_NETFILTER);
	bpf_map__set_max_entries(ring, pow2_at_least(o->ring_bytes, 256u << 10));
	if ((err = bpf_object__load(t->obj)) < 0)
		return fail(t, why, why_len, "the kernel refused the BPF programs (a netfilter BPF hook needs "
			    "Linux 6.4 with BTF, and CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN)", err);
	/*
	 * The programs' variables, shared: a mapping of the kernel's map
	 * itself (libbpf's own view of .bss may be a copy).
	 */
	bss_size = bpf_map__value_size(bss);
	if (bss_size < sizeof(*t->shared))
		return fail(t, why, why_len, "the BPF programs' variables are too small", EINVAL);
	t->shared_len = (bss_size + 4095) & ~(size_t)4095;
	t->shared = mmap(NULL, t->shared_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(bss), 0);
	if (t->shared == MAP_FAILED) {
		t->shared = NULL;
		return fail(t, why, why_len, "cannot map the BPF programs' variables", errno);
	}
	fd = bpf_program__fd(packet);
	for (unsigned i = 0; i < TAP_LINKS; i++) {
		const struct tap_hook *h = &tap_hooks[i];
		int l = nf_link(fd, h), link_err = errno;
		char what[96];

		if (l >= 0) {
			t->links[t->nlinks++] = l;
			continue;
		}
		/* a kernel without IPv6 has no IPv6 entries to miss */
		if (h->pf == NFPROTO_IPV6 && link_err == EAFNOSUPPORT)
			continue;
		/* any other hook missing would lose that path's changes unseen */
		snprintf(what, sizeof(what), "cannot hook the BPF program into netfilter (%s, priority %d)",
			 h->name, h->priority);
		return fail(t, why, why_len, what, link_err);
	}
	fd = bpf_program__fd(netlink);
	if (setsockopt(nl_fd, SOL_SOCKET, SO_ATTACH_BPF, &fd, sizeof(fd)) < 0)
		return fail(t, why, why_len, "cannot attach the BPF filter to the event socket", errno);
	t->ring = ring_buffer__new(bpf_map__fd(ring), on_record, t, NULL);
	if (!t->ring)
		return fail(t, why, why_len, "cannot map the BPF ring buffer", errno);
	return t;
}

int kernel_tap_fd(const struct kernel_tap *t)
{
	return ring_buffer__epoll_fd(t->ring);
}

int kernel_tap_consume(struct kernel_tap *t, kernel_tap_fn fn, void *arg)
{
	t->fn = fn;
	t->arg = arg;
	return ring_buffer__consume(t->ring);
}

uint64_t kernel_tap_lost(const struct kernel_tap *t)
{
	const volatile struct tap_shared *s = t->shared;

	return s->lost_ct + s->lost_netlink + s->too_long;
}

void kernel_tap_set_polling(struct kernel_tap *t, bool polling)
{
	volatile struct tap_shared *s = t->shared;

	s->polling = polling;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void kernel_tap_set_own(struct kernel_tap *t, const uint32_t *own, unsigned n)
{
	volatile struct tap_shared *s = t->shared;

	if (n > TAP_OWN_MAX)
		n = TAP_OWN_MAX;
	s->nown = 0;
	for (unsigned i = 0; i < n; i++)
		s->own[i] = own[i];
	s->nown = n;
}

#else /* !HAVE_BPF_TAP */

struct kernel_tap *kernel_tap_open(const struct kernel_tap_opts *o, int nl_fd, char *why, size_t why_len)
{
	(void)o;
	(void)nl_fd;
	snprintf(why, why_len, "this ctsyncd was built without BPF support (configure found no clang "
		 "or no libbpf)");
	return NULL;
}

void kernel_tap_close(struct kernel_tap *t)
{
	(void)t;
}

int kernel_tap_fd(const struct kernel_tap *t)
{
	(void)t;
	return -1;
}

int kernel_tap_consume(struct kernel_tap *t, kernel_tap_fn fn, void *arg)
{
	(void)t;
	(void)fn;
	(void)arg;
	return -ENOSYS;
}

uint64_t kernel_tap_lost(const struct kernel_tap *t)
{
	(void)t;
	return 0;
}

void kernel_tap_set_polling(struct kernel_tap *t, bool polling)
{
	(void)t;
	(void)polling;
}

void kernel_tap_set_own(struct kernel_tap *t, const uint32_t *own, unsigned n)
{
	(void)t;
	(void)own;
	(void)n;
}

#endif
