/*
 * reason.c - names of the rejection reasons, and the `-s network` counter
 * each one is counted under.
 */
#include "wire/wire.h"

struct reason_info {
	const char *name;
	const char *key;
	enum wire_counter counter;
	bool strict;                    /* ours: 1.4.7 would have accepted */
};

static const struct reason_info reasons[WIRE_R_MAX] = {
	[WIRE_OK] = { "ok", "ok", WIRE_C_NONE, false },
	[WIRE_R_TRUNCATED] = { "truncated", "truncated", WIRE_C_TRUNCATED, false },
	[WIRE_R_BAD_SIZE] = { "bad size", "bad_size", WIRE_C_BAD_SIZE, false },
	[WIRE_R_WRONG_VERSION] = { "wrong version", "wrong_version", WIRE_C_WRONG_VERSION, false },
	[WIRE_R_BAD_HEADER] = { "malformed header", "bad_header", WIRE_C_BAD_HEADER, false },
	[WIRE_R_BAD_TYPE] = { "bad message type", "bad_type", WIRE_C_BAD_TYPE, false },
	[WIRE_R_ATTR_OVERRUN] = { "attribute past the end", "attr_overrun", WIRE_C_BAD_PAYLOAD, false },
	[WIRE_R_ATTR_SHORT] = { "attribute length below 4", "attr_short", WIRE_C_BAD_PAYLOAD, false },
	[WIRE_R_ATTR_UNKNOWN] = { "attribute id out of range", "attr_unknown", WIRE_C_BAD_PAYLOAD, false },
	[WIRE_R_ATTR_SIZE] = { "attribute of wrong size", "attr_size", WIRE_C_BAD_PAYLOAD, false },
	[WIRE_R_ATTR_TOO_LONG] = { "attribute too long", "attr_too_long", WIRE_C_BAD_PAYLOAD, false },
	[WIRE_R_NO_ADDRESS] = { "no address", "no_address", WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_TWO_FAMILIES] = { "both IPv4 and IPv6 addresses", "two_families", WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_NO_L4PROTO] = { "no layer 4 protocol", "no_l4proto", WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_NO_PORTS] = { "no ports", "no_ports", WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_PROTO_MISMATCH] = { "attribute of another protocol", "proto_mismatch",
				    WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_NAT_FAMILY] = { "NAT address of the other family", "nat_family", WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_MASTER_INCOMPLETE] = { "incomplete master tuple", "master_incomplete",
				       WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_MASTER_TWO_FAMILIES] = { "master with both IPv4 and IPv6", "master_two_families",
					 WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_STRING_UNTERMINATED] = { "name without NUL", "string_unterminated",
					 WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_EXP_NO_MASTER] = { "expectation without master", "exp_no_master", WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_EXP_NO_TUPLE] = { "expectation without tuple", "exp_no_tuple", WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_EXP_NO_MASK] = { "expectation without mask", "exp_no_mask", WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_EXP_FAMILY_MISMATCH] = { "expectation tuples of different families",
					 "exp_family_mismatch", WIRE_C_BAD_PAYLOAD, true },
	[WIRE_R_EXP_NAT_INCOMPLETE] = { "expectation NAT without address", "exp_nat_incomplete",
					WIRE_C_BAD_PAYLOAD, true },
};

static const struct reason_info *info(enum wire_reason r)
{
	static const struct reason_info unknown = { "?", "unknown", WIRE_C_NONE, false };

	if ((unsigned)r < WIRE_R_MAX && reasons[r].name)
		return &reasons[r];
	return &unknown;
}

const char *wire_reason_name(enum wire_reason r)
{
	return info(r)->name;
}

const char *wire_reason_key(enum wire_reason r)
{
	return info(r)->key;
}

enum wire_counter wire_reason_counter(enum wire_reason r)
{
	return info(r)->counter;
}

bool wire_reason_is_strict(enum wire_reason r)
{
	return info(r)->strict;
}
