#!/usr/bin/env python3
# cluster_hash.py: the hash bucket that nftables' `jhash ip saddr mod N seed S`
# gives an IPv4 address, as the kernel computes it (nft_jhash: the Jenkins
# hash of include/linux/jhash.h over the address's 4 bytes in network order,
# scaled into 0..N-1 by multiplication, not by a remainder).  The
# active-active test uses it to choose client addresses that cover every
# bucket and to know which firewall must own each one.
#
#   cluster_hash.py N SEED ADDR...   prints "ADDR BUCKET" per address

import ipaddress
import sys

MASK = 0xFFFFFFFF
JHASH_INITVAL = 0xDEADBEEF


def rol32(x, k):
    return ((x << k) | (x >> (32 - k))) & MASK


def jhash_final(a, b, c):
    c ^= b; c = (c - rol32(b, 14)) & MASK
    a ^= c; a = (a - rol32(c, 11)) & MASK
    b ^= a; b = (b - rol32(a, 25)) & MASK
    c ^= b; c = (c - rol32(b, 16)) & MASK
    a ^= c; a = (a - rol32(c, 4)) & MASK
    b ^= a; b = (b - rol32(a, 14)) & MASK
    c ^= b; c = (c - rol32(b, 24)) & MASK
    return c


def jhash4(key, seed):
    """jhash() of a 4-byte key: the tail case 4, then the final mix."""
    a = b = c = (JHASH_INITVAL + 4 + seed) & MASK
    a = (a + (key[3] << 24) + (key[2] << 16) + (key[1] << 8) + key[0]) & MASK
    return jhash_final(a, b, c)


def bucket(addr, n, seed):
    return (jhash4(ipaddress.IPv4Address(addr).packed, seed) * n) >> 32


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: cluster_hash.py N SEED ADDR...")
    try:
        n, seed = int(argv[0], 0), int(argv[1], 0)
    except ValueError:
        sys.exit("cluster_hash.py: N and SEED must be integers, got %r and %r" % (argv[0], argv[1]))
    if n < 1:
        sys.exit("cluster_hash.py: N must be at least 1, got %d" % n)
    for addr in argv[2:]:
        try:
            print(addr, bucket(addr, n, seed))
        except ValueError:
            sys.exit("cluster_hash.py: not an IPv4 address: %r" % addr)


if __name__ == "__main__":
    main(sys.argv[1:])
