/*
 * check_flow_format.c - flows as conntrack-style text lines.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netfilter/nf_conntrack_common.h>

#include "flow/format.h"

static struct flow_full ff;

static void tcp_flow(void)
{
	memset(&ff, 0, sizeof(ff));
	ff.flow.orig.family = AF_INET;
	ff.flow.orig.l4proto = IPPROTO_TCP;
	inet_pton(AF_INET, "10.0.0.1", &ff.flow.orig.src);
	inet_pton(AF_INET, "10.0.0.2", &ff.flow.orig.dst);
	ff.flow.orig.l4.port.sport = htons(1234);
	ff.flow.orig.l4.port.dport = htons(80);
	ff.flow.attrs = FLOW_A_PORTS | FLOW_A_STATUS | FLOW_A_TIMEOUT | FLOW_A_MARK | FLOW_A_PROTO_STATE;
	ff.flow.status = IPS_SEEN_REPLY | IPS_ASSURED | IPS_CONFIRMED;
	ff.flow.timeout = 300;
	ff.flow.mark = 7;
	ff.flow.proto_state = 3;
}

START_TEST(formats_tcp_with_reply_and_timeout)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	flow_format(line, sizeof(line), &ff, FLOW_FMT_REPLY | FLOW_FMT_TIMEOUT);
	ck_assert_str_eq(line, "tcp      6 300 ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 "
			       "src=10.0.0.2 dst=10.0.0.1 sport=80 dport=1234 [ASSURED] mark=7");
}
END_TEST

START_TEST(external_form_has_no_reply_nor_timeout)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	ff.flow.orig.zone = 5;
	flow_format(line, sizeof(line), &ff, 0);
	ck_assert_str_eq(line, "tcp      6 ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 "
			       "[ASSURED] mark=7 zone=5");
}
END_TEST

START_TEST(reply_tuple_applies_snat_and_port)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	ff.flow.orig.l4proto = IPPROTO_UDP;
	ff.flow.attrs &= ~FLOW_A_PROTO_STATE;
	ff.flow.attrs |= FLOW_A_SNAT | FLOW_A_SPAT;
	ff.flow.status = IPS_CONFIRMED | IPS_SRC_NAT | IPS_SRC_NAT_DONE;
	inet_pton(AF_INET, "192.168.1.1", &ff.ext.snat);
	ff.ext.spat = htons(4000);
	flow_format(line, sizeof(line), &ff, FLOW_FMT_REPLY);
	ck_assert_str_eq(line, "udp      17 src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 [UNREPLIED] "
			       "src=10.0.0.2 dst=192.168.1.1 sport=80 dport=4000 mark=7");
}
END_TEST

START_TEST(icmp_reply_type_is_the_answer)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	ff.flow.orig.l4proto = IPPROTO_ICMP;
	ff.flow.orig.l4.raw = 0;
	ff.flow.orig.l4.icmp.type = 8;
	ff.flow.orig.l4.icmp.id = htons(4660);
	ff.flow.attrs = FLOW_A_ICMP | FLOW_A_STATUS;
	ff.flow.mark = 0;
	ff.flow.status = IPS_SEEN_REPLY;
	flow_format(line, sizeof(line), &ff, FLOW_FMT_REPLY);
	ck_assert_str_eq(line, "icmp     1 src=10.0.0.1 dst=10.0.0.2 type=8 code=0 id=4660 "
			       "src=10.0.0.2 dst=10.0.0.1 type=0 code=0 id=4660");
}
END_TEST

START_TEST(ipv6_labels_and_helper)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	memset(&ff.flow.orig.src, 0, 32);
	ff.flow.orig.family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::1", &ff.flow.orig.src);
	inet_pton(AF_INET6, "2001:db8::2", &ff.flow.orig.dst);
	ff.flow.attrs |= FLOW_A_LABELS | FLOW_A_HELPER;
	strcpy(ff.ext.helper, "ftp");
	ff.labels.words = 2;
	ff.labels.w[0] = 0x5;
	ff.labels.w[1] = 0x1;
	flow_format(line, sizeof(line), &ff, 0);
	ck_assert_str_eq(line, "tcp      6 ESTABLISHED src=2001:db8::1 dst=2001:db8::2 sport=1234 dport=80 "
			       "[ASSURED] mark=7 helper=ftp labels=0x0000000100000005");
}
END_TEST

/* The lines conntrackd 1.4.7 printed for these states (-i -x, -e -x), without its <id>. */
START_TEST(xml_is_conntrackds)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	flow_format_xml(line, sizeof(line), &ff, FLOW_FMT_REPLY);
	ck_assert_str_eq(line, "<flow><meta direction=\"original\"><layer3 protonum=\"2\" protoname=\"ipv4\">"
		"<src>10.0.0.1</src><dst>10.0.0.2</dst></layer3><layer4 protonum=\"6\" protoname=\"tcp\">"
		"<sport>1234</sport><dport>80</dport></layer4></meta><meta direction=\"reply\"><layer3 "
		"protonum=\"2\" protoname=\"ipv4\"><src>10.0.0.2</src><dst>10.0.0.1</dst></layer3><layer4 "
		"protonum=\"6\" protoname=\"tcp\"><sport>80</sport><dport>1234</dport></layer4></meta><meta "
		"direction=\"independent\"><state>ESTABLISHED</state><mark>7</mark><assured/></meta></flow>");
	/* An external state: 1.4.7's empty reply; a helper; unreplied; a zone. */
	ff.flow.attrs |= FLOW_A_HELPER;
	strcpy(ff.ext.helper, "ftp");
	ff.flow.status = IPS_CONFIRMED;
	ff.flow.orig.zone = 5;
	flow_format_xml(line, sizeof(line), &ff, 0);
	ck_assert_str_eq(line, "<flow><meta direction=\"original\"><layer3 protonum=\"2\" protoname=\"ipv4\">"
		"<src>10.0.0.1</src><dst>10.0.0.2</dst></layer3><layer4 protonum=\"6\" protoname=\"tcp\">"
		"<sport>1234</sport><dport>80</dport></layer4></meta><meta direction=\"reply\"><layer3 "
		"protonum=\"0\" protoname=\"unknown\"><src></src><dst></dst></layer3><layer4 protonum=\"0\" "
		"protoname=\"unknown\"></layer4></meta><meta direction=\"independent\"><state>ESTABLISHED</state>"
		"<mark>7</mark><zone>5</zone><unreplied/></meta><helper>ftp</helper></flow>");
	/* ICMP: no id, type or code (libnetfilter_conntrack's XML has none). */
	tcp_flow();
	ff.flow.orig.l4proto = IPPROTO_ICMP;
	ff.flow.attrs = (ff.flow.attrs & ~(FLOW_A_PORTS | FLOW_A_PROTO_STATE)) | FLOW_A_ICMP;
	flow_format_xml(line, sizeof(line), &ff, FLOW_FMT_REPLY);
	ck_assert_ptr_nonnull(strstr(line, "<layer4 protonum=\"1\" protoname=\"icmp\"></layer4>"));
	ck_assert_ptr_null(strstr(line, "<state>"));
	/* SCTP ESTABLISHED (4) is named from the TCP table, as libnetfilter_conntrack does. */
	tcp_flow();
	ff.flow.orig.l4proto = IPPROTO_SCTP;
	ff.flow.proto_state = 4;
	flow_format_xml(line, sizeof(line), &ff, FLOW_FMT_REPLY);
	ck_assert_ptr_nonnull(strstr(line, "protoname=\"sctp\""));
	ck_assert_ptr_nonnull(strstr(line, "<state>FIN_WAIT</state>"));
}
END_TEST

START_TEST(short_buffer_is_cut_like_snprintf)
{
	char full[FLOW_FORMAT_MAX], small[16];
	int want, got;

	tcp_flow();
	want = flow_format(full, sizeof(full), &ff, FLOW_FMT_REPLY);
	memset(small, 'x', sizeof(small));
	got = flow_format(small, sizeof(small), &ff, FLOW_FMT_REPLY);
	ck_assert_int_eq(got, want);
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	ck_assert(strncmp(small, full, sizeof(small) - 1) == 0);
	ck_assert_int_eq(flow_format(NULL, 0, &ff, FLOW_FMT_REPLY), want);
}
END_TEST

START_TEST(state_names_per_protocol)
{
	ck_assert_str_eq(flow_state_name(IPPROTO_TCP, 7), "TIME_WAIT");
	ck_assert_str_eq(flow_state_name(IPPROTO_SCTP, 4), "ESTABLISHED");
	ck_assert_str_eq(flow_state_name(IPPROTO_DCCP, 4), "OPEN");
	ck_assert_ptr_null(flow_state_name(IPPROTO_TCP, 200));
	ck_assert_ptr_null(flow_state_name(IPPROTO_UDP, 1));
}
END_TEST

/*
 * The expected lines below are what libnetfilter_conntrack 1.0.9's
 * nfct_snprintf() prints for the same state (conntrackd 1.4.7's -i / -e);
 * tests/oracle compares the two on random states.
 */
START_TEST(offloaded_flow_says_so_instead_of_assured)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	ff.flow.status |= IPS_OFFLOAD;
	flow_format(line, sizeof(line), &ff, 0);
	ck_assert_str_eq(line, "tcp      6 ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 "
			       "[OFFLOAD] mark=7");
	ff.flow.status |= IPS_HW_OFFLOAD;
	flow_format(line, sizeof(line), &ff, 0);
	ck_assert_str_eq(line, "tcp      6 ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 "
			       "[HW_OFFLOAD] mark=7");
	/* The XML knows no offload: still <assured/>. */
	flow_format_xml(line, sizeof(line), &ff, 0);
	ck_assert_ptr_nonnull(strstr(line, "<mark>7</mark><assured/></meta>"));
}
END_TEST

START_TEST(zone_attribute_of_zero_is_printed)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	ff.flow.attrs |= FLOW_A_ZONE;
	flow_format(line, sizeof(line), &ff, 0);
	ck_assert_str_eq(line, "tcp      6 ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 "
			       "[ASSURED] mark=7 zone=0");
	flow_format_xml(line, sizeof(line), &ff, 0);
	ck_assert_ptr_nonnull(strstr(line, "<mark>7</mark><zone>0</zone><assured/>"));
}
END_TEST

START_TEST(gre_keys_print_in_hex)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	ff.flow.orig.l4proto = IPPROTO_GRE;
	ff.flow.orig.l4.port.sport = htons(0x310);
	ff.flow.orig.l4.port.dport = htons(0x15);
	ff.flow.attrs &= ~(uint32_t)(FLOW_A_PROTO_STATE | FLOW_A_MARK);
	flow_format(line, sizeof(line), &ff, FLOW_FMT_REPLY);
	ck_assert_str_eq(line, "gre      47 src=10.0.0.1 dst=10.0.0.2 srckey=0x310 dstkey=0x15 "
			       "src=10.0.0.2 dst=10.0.0.1 srckey=0x15 dstkey=0x310 [ASSURED]");
	flow_format_xml(line, sizeof(line), &ff, 0);
	ck_assert_ptr_nonnull(strstr(line, "<layer4 protonum=\"47\" protoname=\"gre\"><srckey>0x310</srckey>"
					   "<dstkey>0x15</dstkey></layer4>"));
	/* A GRE state without keys (a 1.4.7 peer sends none) prints zeros, as the library. */
	ff.flow.attrs &= ~(uint32_t)FLOW_A_PORTS;
	ff.flow.orig.l4.raw = 0;
	flow_format(line, sizeof(line), &ff, 0);
	ck_assert_str_eq(line, "gre      47 src=10.0.0.1 dst=10.0.0.2 srckey=0x0 dstkey=0x0 [ASSURED]");
}
END_TEST

START_TEST(icmpv6_node_information_reply_type)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	ff.flow.orig.family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::1", &ff.flow.orig.src);
	inet_pton(AF_INET6, "2001:db8::2", &ff.flow.orig.dst);
	ff.flow.orig.l4proto = IPPROTO_ICMPV6;
	ff.flow.orig.l4.raw = 0;
	ff.flow.orig.l4.icmp.type = 139;
	ff.flow.orig.l4.icmp.id = htons(7);
	ff.flow.attrs = FLOW_A_ICMP | FLOW_A_STATUS;
	ff.flow.status = IPS_SEEN_REPLY;
	flow_format(line, sizeof(line), &ff, FLOW_FMT_REPLY);
	ck_assert_str_eq(line, "icmpv6   58 src=2001:db8::1 dst=2001:db8::2 type=139 code=0 id=7 "
			       "src=2001:db8::2 dst=2001:db8::1 type=140 code=0 id=7");
}
END_TEST

START_TEST(state_out_of_its_table_prints_none)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	ff.flow.proto_state = 12;
	flow_format(line, sizeof(line), &ff, 0);
	ck_assert_str_eq(line, "tcp      6 NONE src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 [ASSURED] mark=7");
	flow_format_xml(line, sizeof(line), &ff, 0);
	ck_assert_ptr_nonnull(strstr(line, "<state>NONE</state>"));
	/* The XML names DCCP's state from the TCP table, as SCTP's: OPEN (4) is FIN_WAIT. */
	ff.flow.orig.l4proto = IPPROTO_DCCP;
	ff.flow.proto_state = 4;
	flow_format(line, sizeof(line), &ff, 0);
	ck_assert_ptr_nonnull(strstr(line, "dccp     33 OPEN "));
	flow_format_xml(line, sizeof(line), &ff, 0);
	ck_assert_ptr_nonnull(strstr(line, "<state>FIN_WAIT</state>"));
}
END_TEST

START_TEST(xml_independent_part_only_when_something_opens_it)
{
	char line[FLOW_FORMAT_MAX];

	tcp_flow();
	ff.flow.orig.l4proto = IPPROTO_UDP;
	ff.flow.attrs = FLOW_A_PORTS;
	flow_format_xml(line, sizeof(line), &ff, 0);
	ck_assert_ptr_null(strstr(line, "independent"));
	/* Labels open it, though nothing of them is printed. */
	ff.flow.attrs |= FLOW_A_LABELS;
	ff.labels.words = 1;
	ff.labels.w[0] = 1;
	flow_format_xml(line, sizeof(line), &ff, 0);
	ck_assert_ptr_nonnull(strstr(line, "<meta direction=\"independent\"></meta></flow>"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flow_format");
	TCase *tc = tcase_create("lines");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, formats_tcp_with_reply_and_timeout);
	tcase_add_test(tc, external_form_has_no_reply_nor_timeout);
	tcase_add_test(tc, reply_tuple_applies_snat_and_port);
	tcase_add_test(tc, icmp_reply_type_is_the_answer);
	tcase_add_test(tc, ipv6_labels_and_helper);
	tcase_add_test(tc, short_buffer_is_cut_like_snprintf);
	tcase_add_test(tc, xml_is_conntrackds);
	tcase_add_test(tc, state_names_per_protocol);
	tcase_add_test(tc, offloaded_flow_says_so_instead_of_assured);
	tcase_add_test(tc, zone_attribute_of_zero_is_printed);
	tcase_add_test(tc, gre_keys_print_in_hex);
	tcase_add_test(tc, icmpv6_node_information_reply_type);
	tcase_add_test(tc, state_out_of_its_table_prints_none);
	tcase_add_test(tc, xml_independent_part_only_when_something_opens_it);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
